"""``python -m summarylog``: the ``summarylog`` command (see summarylog.cli)."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
