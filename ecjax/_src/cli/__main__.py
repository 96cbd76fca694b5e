"""``python -m ecjax.cli``: the ``ecjax`` command."""

import sys

from ecjax._src.cli import main

if __name__ == "__main__":
    sys.exit(main())
