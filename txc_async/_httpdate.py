"""The HTTP ``Date`` header read as Unix seconds: the only clock sample the API's answers carry."""

from __future__ import annotations

import calendar
import datetime
import email.utils
import functools

__all__ = ["parse_http_date"]

_MONTHS = {
    name: number
    for number, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}


# The Date of answers repeats within a second: the last one parsed is kept.
@functools.lru_cache(maxsize=1)
def parse_http_date(value: str) -> int | None:
    """Unix seconds of an HTTP ``Date`` header (IMF-fixdate, or the obsolete forms), or None."""
    seconds: int | None
    try:
        # IMF-fixdate, the form servers send: "Sun, 06 Nov 1994 08:49:37 GMT".
        if len(value) == 29 and value[3:5] == ", " and value.endswith(" GMT"):
            fields = (
                int(value[12:16]), _MONTHS[value[8:11]], int(value[5:7]),
                int(value[17:19]), int(value[20:22]), int(value[23:25]),
            )
            if not (1 <= fields[2] <= 31 and fields[3] < 24 and fields[4] < 60
                    and fields[5] <= 60):
                raise ValueError(value)
            seconds = calendar.timegm(fields)
        else:
            moment = email.utils.parsedate_to_datetime(value)
            if moment.tzinfo is None:  # HTTP dates are always GMT
                moment = moment.replace(tzinfo=datetime.UTC)
            seconds = int(moment.timestamp())
    except (ValueError, KeyError, TypeError, IndexError, OverflowError):
        seconds = None
    return seconds
