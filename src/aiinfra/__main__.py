"""``python -m aiinfra``: the same calculator as the ``aiinfra`` console script."""

import sys

from aiinfra.cli import main

sys.exit(main())
