"""The catalog: what the book's numbers are computed *from*.

* :mod:`~aiinfra.catalog.hardware`: GPUs, links, servers and scale-up domains, each figure with
  its source (dense peaks, per-direction links);
* :mod:`~aiinfra.catalog.models`: model architectures read from shipped Hugging Face
  ``config.json`` files (``configs/``) and their exact parameter counts;
* :mod:`~aiinfra.catalog.reference`: measured points, published runs and the prose tables
  shipped as JSON (``data/``).

A new GPU goes into ``hardware._CATALOG`` with a source for every field; a new model is a
``config.json`` in ``configs/`` plus one line in ``models.SHIPPED``.
"""
