"""aiinfra: the formulas behind *AI Infrastructure by the Numbers*.

One function per formula, SI units inside (bytes, FLOPs, seconds, bytes/s, watts), units in
argument names, a ``ValueError`` naming the argument for any nonsense input, and a sympy
twin (``fn.sym``) for each formula a page typesets. Import the module you need::

    from aiinfra.catalog import models
    from aiinfra.deployment import Deployment
    Deployment("Qwen3-8B", "H100 SXM").kv_bytes_per_token     # 147456.0

Submodules are not imported here, so ``import aiinfra`` stays cheap for the grader and
the self-check: no numpy, no sympy, no matplotlib. CONTRIBUTING.md has the map of the package.
"""

__version__ = "0.1.0"
