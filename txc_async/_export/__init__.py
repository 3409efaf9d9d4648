"""Backfills into files and pipes: the entry points (``run``), the export's sinks of the backfill
engine (``sinks``), the state file beside an output (``state``), what an earlier run left and how
a rerun resumes and repairs it (``resume``), the progress and summary a run reports (``report``),
the JSONL and CSV row files (``rowfile``), the Parquet dataset (``parquet``), and the lock that
keeps one run per output (``lock``)."""
