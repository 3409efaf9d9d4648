"""Limiters: the budgets of the rate limits. The interface (``base``), the in-process scheduler
(``memory``), the core shared by the backends that several processes use (``shared``), its SQLite
and Redis backends, the backoff after refusals, and limiters made from URLs (``url``)."""
