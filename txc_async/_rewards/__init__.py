"""Mining rewards read whole: the walk through a range (``walk``), the check that ends every walk
(``ledger``), and the concurrent backfill that cuts a range into jobs (``backfill``)."""
