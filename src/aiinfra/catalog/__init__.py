"""The catalog: what the book's numbers are computed *from*.

* :mod:`~aiinfra.catalog.hardware`: GPUs, links, servers and scale-up domains, each figure with
  its source (dense peaks, per-direction links);
* :mod:`~aiinfra.catalog.models`: the model registry (shipped Hugging Face ``config.json`` files
  in ``configs/``), :func:`~aiinfra.catalog.models.load` and the exact parameter counts;
* :mod:`~aiinfra.catalog.architectures`: how a config becomes a model, family by family: the
  inventory of every stored tensor and each layer's token mixer (full, sliding or chunked
  attention, MLA, linear attention and Mamba-2 with their fixed state);
* :mod:`~aiinfra.catalog.checkpoint`: the count checked against a downloaded model folder's
  safetensors headers or index (``checkpoints/`` ships one published index);
* :mod:`~aiinfra.catalog.reference`: measured points, published runs and the prose tables
  shipped as JSON (``data/``);
* :mod:`~aiinfra.catalog.measurements`: published serving measurements (engine docs, launch notes,
  cloud blogs, the seed's run), each with its conditions and source, for calibration (chapter 8).

A new GPU goes into ``hardware._CATALOG`` with a source for every field; a new model is a
``config.json`` in ``configs/`` plus one :class:`~aiinfra.catalog.architectures.Shipped` line in its
family's record; a new family is one :class:`~aiinfra.catalog.architectures.Family` record (builder,
notes, defaults, allowed fields, tying default, shipped configs) in a family module, its config and its
pinned count in the tests, then ``make oracle``.
"""
