"""A hashrate series read whole: the service answers a limited number of points a request
(2,000 in the sandbox, as a long range at a short interval needs more), so a series that stops
before the end of its range is asked again from its last point on, until the range is covered
or the service has nothing later. How many requests that took is said on stderr.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TextIO

import txc_async

#: The seconds between the points of each interval, the service's default (1h) under None.
STEPS = {"5m": 300, "1h": 3600, "24h": 86400, None: 3600}


def _seconds(moment: object) -> int | None:
    if isinstance(moment, datetime):
        return int(moment.timestamp())
    return moment if isinstance(moment, int) else None


async def whole_hashrate(
    client: txc_async.Client, params: Mapping[str, Any], notes: TextIO | None = None
) -> txc_async.Hashrate:
    """The series ``client.mining_hashrate(**params)`` asks for, every point of its range: one
    request when the answer covers it, more (each from the last point on) when the answer
    stops short of the range's end (``params["end"]``, else now)."""
    series = await client.mining_hashrate(**params)
    points = list(series.hashrate)
    step = STEPS.get(params.get("interval"), 3600)
    end = _seconds(params.get("end"))
    requests, most = 1, len(points)
    while points:
        last = points[-1].timestamp
        if last + step > (int(time.time()) if end is None else end):
            break
        page = await client.mining_hashrate(**{**params, "start": last + 1})
        requests += 1
        most = max(most, len(page.hashrate))
        later = [point for point in page.hashrate if point.timestamp > last]
        if not later:
            break
        points += later
    if requests > 1:
        print(f"{len(points):,} hashrate points read in {requests:,} requests (the service "
              f"answered at most {most:,} points a request)",
              file=sys.stderr if notes is None else notes)
    return txc_async.Hashrate(series.account, points)
