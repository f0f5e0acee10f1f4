"""The instructor autograder behind ``aiinfra-grade`` (see :mod:`aiinfra.course.grading.cli`).

Data flows one way:

    submission --extract--> answers (plain JSON lines, sent by the kernel through a pipe)
               --score----> part scores with reasons (grader process, grader's aiinfra)
               --gradebook-> SQLite
               --export---> grades.csv, feedback/<student>.md, gradescope/<student>/results.json

* :mod:`~aiinfra.course.grading.submissions` turns every entry of the submissions
  folder into one submission (with a problem where it cannot be graded).
* :mod:`~aiinfra.course.grading.extract` runs one notebook in its own kernel, from a
  forked worker, inside the sandbox of :mod:`~aiinfra.course.grading.sandbox`
  (bubblewrap namespaces, :mod:`~aiinfra.course.grading.cgroups` caps, cell and total
  timeouts, an output cap); :mod:`~aiinfra.course.grading.kernel` is the first code
  that runs inside it. As root with bubblewrap, each worker slot's kernels are forked
  from one template (:mod:`~aiinfra.course.grading.template` outside,
  :mod:`~aiinfra.course.grading.zygote` inside), which imports what they need once.
* :mod:`~aiinfra.course.grading.score` is pure and shares its per-part verdicts with
  the notebooks' ``check()`` (:mod:`aiinfra.course.exercises.feedback`).
* :mod:`~aiinfra.course.grading.gradebook` commits one transaction per submission,
  skips unchanged submissions on a re-run and holds the run's lock.
* :mod:`~aiinfra.course.grading.export` writes the CSV, the Markdown feedback and
  Gradescope's ``results.json``.
* :mod:`~aiinfra.course.grading.bounded` reads everything untrusted within bounds.

Execution rule: cells run in order; the first error, timeout or kernel death
stops the run, and answers recorded before it still count.

Keep this file free of imports: the sandbox imports ``kernel`` through it.
"""
