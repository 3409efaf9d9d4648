"""Backfills into files and pipes: the run and its resumable state (``run``), the JSONL and CSV
row files, the Parquet dataset, and the lock that keeps one run per output."""
