"""Everything that turns the library into pages: interactive figures, figure functions, tables, glue.

* :mod:`~aiinfra.book.interactive`: the helper that makes a figure function interactive
  (live sliders in a kernel, precomputed frames in the static book);
* :mod:`~aiinfra.book.figures`: the pure figure functions, ``params -> (Figure, readouts)``;
* :mod:`~aiinfra.book.tables`: the computed Markdown tables;
* :mod:`~aiinfra.book.glue`: publish a page's numbers in one call.

Only this package imports matplotlib and ipywidgets, and only inside figure code.
"""
