"""The instructor autograder behind ``aiinfra-grade`` (see :mod:`aiinfra.grading.cli`).

Data flows one way:

    submission --extract--> answers (plain JSON, exported by the kernel)
               --score----> part scores with reasons (grader process, grader's aiinfra)
               --gradebook-> SQLite
               --export---> grades.csv, feedback/<student>.md, gradescope/<student>/results.json

* :mod:`~aiinfra.grading.extract` runs one notebook in its own kernel, in a
  separate process, in a temporary copy of its folder, under the limits of
  :mod:`~aiinfra.grading.sandbox` (memory, cell and total timeouts, output
  cap, no network, unprivileged uid where the platform allows).
* :mod:`~aiinfra.grading.score` is pure and shares its per-part verdicts with
  the notebooks' ``check()`` (:mod:`aiinfra.exercises.feedback`).
* :mod:`~aiinfra.grading.gradebook` commits one transaction per submission and
  skips unchanged submissions on a re-run.
* :mod:`~aiinfra.grading.export` writes the CSV, the Markdown feedback and
  Gradescope's ``results.json``.

Execution rule: cells run in order; the first error, timeout or kernel death
stops the run, and answers recorded before it still count.
"""
