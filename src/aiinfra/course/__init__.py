"""The course: exercises that grade themselves (``exercises``) and the instructor's autograder (``grading``).

Kept free of imports: a graded kernel loads ``aiinfra.course.exercises.runtime`` and nothing
else from here, and the sandbox hides every other exercise module.
"""
