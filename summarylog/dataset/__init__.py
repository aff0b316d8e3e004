"""Runs exported as a Hive-partitioned Parquet dataset (one table per kind), kept up to
date incrementally: :func:`export_dataset`; the layout is :mod:`.layout`'s."""

from .export import ExportResult, export_dataset
from .layout import TABLES, run_key, table_glob

__all__ = ["export_dataset", "ExportResult", "TABLES", "run_key", "table_glob"]
