"""Hashrates as an operator reads them: in a unit that suits their size (H/s to EH/s), a
series as a table or drawn in the terminal (plotext, imported only for ``--plot``); and the unit
of every hashrate field in JSON and TSV (``hashrate_unit`` beside ``hashrate``).
"""

from __future__ import annotations

import functools
import re
import shutil
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import TextIO

import txc_async

from ._cells import iso_time

UNITS = ("H/s", "kH/s", "MH/s", "GH/s", "TH/s", "PH/s", "EH/s")
_WITH_UNIT = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([kKMGTPE]?)H/s\s*")
_PREFIXES = {"": 0, "k": 1, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
#: The largest hashrate shown in a unit or drawn: the largest a float holds. Past it, and for a
#: NaN or an infinity, a point is shown as the server wrote it and is not drawn.
LARGEST = Decimal(sys.float_info.max)


def hashes_per_second(text: str, bare: str = "H/s") -> Decimal | None:
    """A hashrate in H/s: a plain number (in the unit ``bare``: what the service sends) or one
    with its unit ("1 TH/s"); ``None`` for anything else, a NaN, an infinity or a number no
    float holds included."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        match = _WITH_UNIT.fullmatch(text)
        if match is None:
            return None
        value = Decimal(match[1]).scaleb(3 * _PREFIXES[match[2]])
    else:
        # Scaled once it is known to be finite and bounded (a huge exponent would overflow),
        # and only when it is not in H/s already (scaling rounds a tiny one to the context).
        if bare != UNITS[0] and value.is_finite() and value.copy_abs() <= LARGEST:
            value = value.scaleb(3 * UNITS.index(bare))
    # A NaN (quiet or signalling) is not finite: it is never compared, which would raise.
    return value if value.is_finite() and value.copy_abs() <= LARGEST else None


def unit_of(text: str, bare: str = "H/s") -> str | None:
    """The unit a hashrate is written in: ``bare`` for a plain number, the one it carries
    ("TH/s" for "158.97 TH/s"), None for anything else."""
    if hashes_per_second(text, bare) is None:
        return None
    match = _WITH_UNIT.fullmatch(text)
    return bare if match is None else UNITS[_PREFIXES[match[2]]]


def readable(text: str, bare: str = "H/s") -> str:
    """A hashrate in the unit that suits its size, with that unit ("158.97 TH/s"); one that is
    not a number as it is."""
    value = hashes_per_second(text, bare)
    if value is None:
        return text
    unit, size = unit_for([value])
    return f"{value / size:,.2f} {unit}"


@functools.cache
def _hashrate_fields() -> dict[type, tuple[str, str]]:
    """The records with a hashrate field: its name, and the unit of a plain number in it."""
    from txc_async._models_generated.mining import (
        GetMiningWorkerHashrateAnswerDataHashratesItem as WorkerPoint,
    )

    return {
        # SERVICE_NOTES.md: a reward's hashRate is in H/s with no unit.
        txc_async.MiningReward: ("hash_rate", "H/s"),
        txc_async.HashratePoint: ("hashrate", "H/s"),
        # whitebit-exchange/docs, openapi/private/main_api_v4.yaml, /api/v4/mining/workers/
        # hashrate: "Hashrate in TH/s".
        WorkerPoint: ("hashrate", "TH/s"),
    }


def hashrate_field(record: object) -> tuple[str, str] | None:
    """A record's hashrate field and the unit of a plain number in it; None for a record
    without one."""
    return _hashrate_fields().get(type(record))


def unit_for(values: Sequence[Decimal]) -> tuple[str, Decimal]:
    """The unit that shows the largest value with 1 to 3 digits before the point, and its size."""
    largest = max((abs(v) for v in values), default=Decimal(0))
    step = 0
    while step < len(UNITS) - 1 and largest >= 1000 ** (step + 1):
        step += 1
    return UNITS[step], Decimal(1000) ** step


def scaled_rows(series: txc_async.Hashrate) -> list[dict[str, str]]:
    """The series' points as table rows, hashrates in one unit for the whole series."""
    values = [hashes_per_second(point.hashrate) for point in series.hashrate]
    unit, size = unit_for([v for v in values if v is not None])
    rows = []
    for point, value in zip(series.hashrate, values, strict=True):
        rows.append({
            "timestamp": str(point.timestamp),
            f"hashrate ({unit})": point.hashrate if value is None else f"{value / size:,.2f}",
            "reject_rate": "" if point.reject_rate is None else str(point.reject_rate),
        })
    return rows


def plot(series: txc_async.Hashrate, stream: TextIO, *, terminal: bool) -> None:
    """Draw the series (in its unit) with plotext; a point whose hashrate is not a number (see
    `hashes_per_second`) is left out, and a line under the drawing says which."""
    import plotext as plt

    points = [(_moment(p.timestamp), hashes_per_second(p.hashrate)) for p in series.hashrate]
    known = [(t, v) for t, v in points if t is not None and v is not None]
    left_out = [
        p for p, (t, v) in zip(series.hashrate, points, strict=True) if t is None or v is None
    ]
    if not known:
        print(f"no hashrate of {series.account} to draw: "
              f"{_not_drawn(left_out)}", file=stream, flush=True)
        return
    unit, size = unit_for([v for _, v in known])
    plt.clear_figure()
    plt.date_form("Y-m-d H:M")
    times = [t for t, _ in known]
    # Floats only to draw: the plot shows the series, nothing is computed from them.
    plt.plot(times, [float(v / size) for _, v in known], marker="braille")
    plt.title(f"hashrate of {series.account} ({unit}, UTC)")
    plt.ylabel(unit)
    size_now = shutil.get_terminal_size()
    plt.plotsize(max(40, size_now.columns), max(12, min(size_now.lines - 2, 30)))
    drawing = plt.build()
    # Colours only where a terminal shows them.
    print(drawing if terminal else plt.uncolorize(drawing), file=stream, flush=True)
    if left_out:
        print(f"not drawn: {_not_drawn(left_out)}", file=stream, flush=True)


def _moment(timestamp: int) -> str | None:
    """A point's time as the drawing labels it, or ``None`` for a time no date holds."""
    try:
        return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, ValueError, OSError):
        return None


def _iso(timestamp: int) -> str:
    """A point's time in a note: ISO 8601 UTC, or the number sent when no date holds it."""
    try:
        return iso_time(Decimal(timestamp))
    except (OverflowError, ValueError):
        return str(timestamp)


def _not_drawn(points: Sequence[txc_async.HashratePoint]) -> str:
    """The points left out of a drawing, in words: how many, and the first few as sent."""
    shown = ", ".join(f"{_iso(p.timestamp)} {p.hashrate[:40]!r}" for p in points[:3])
    more = f" and {len(points) - 3} more" if len(points) > 3 else ""
    return (f"{len(points)} point{'s' if len(points) > 1 else ''} whose hashrate or time is "
            f"not a finite number a drawing holds ({shown}{more})")
