"""Mining rewards read whole: the walk through a range (``walk``), the check that ends every walk
(``ledger``), a backfill's plan of disjoint jobs (``plan``), the one backfill engine that walks
the jobs, checks them and hands every record to a sink (``engine``), and the public iterator on
top of it (``backfill``)."""
