"""The service's paging bounds, shared by every paged operation and the walks through them."""

from __future__ import annotations

__all__ = ["MAX_OFFSET", "PAGE_LIMIT"]

#: Records per request: the most a page of rewards or investments holds.
PAGE_LIMIT = 100
#: The deepest offset the paged operations accept.
MAX_OFFSET = 10_000
