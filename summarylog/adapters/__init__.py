"""Framework adapters over the framework-neutral collection policy
(:mod:`summarylog.collector`).  Each module imports its framework:
``summarylog.adapters.torch``, ``.lightning``, ``.jax``, ``.mindspore``."""
