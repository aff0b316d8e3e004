"""The one place the summarylog version lives (C gets it as -DSLG_VERSION)."""

__version__ = "0.1.0"
