"""``mining hashrate`` with hashrates no drawing or unit can hold (a NaN, a signalling NaN, a
number past any float, an infinity): the command draws and prints the rest, says what it left
out, and never ends in a traceback."""

from __future__ import annotations

import asyncio
import os
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from aiohttp import web

from txc_async import Hashrate, HashratePoint
from txc_async.cli._hashrate import hashes_per_second, plot, scaled_rows

from ..support.common import served

ODD = ["NaN", "sNaN", "1e400000000", "-Infinity", "Infinity", "1.2.3 TH/s"]
T0 = 1704067200


def _series(odd: str) -> Hashrate:
    return Hashrate("rig", [HashratePoint(T0, "123000000000000"), HashratePoint(T0 + 3600, odd),
                            HashratePoint(T0 + 7200, "150000000000000")])


@pytest.mark.parametrize("odd", ODD)
def test_an_odd_hashrate_is_shown_as_sent_and_left_out_of_the_drawing(odd: str) -> None:
    import io

    assert hashes_per_second(odd) is None
    rows = scaled_rows(_series(odd))
    assert [r["hashrate (TH/s)"] for r in rows] == ["123.00", odd, "150.00"]
    stream = io.StringIO()
    plot(_series(odd), stream, terminal=False)
    drawn = stream.getvalue()
    assert "hashrate of rig (TH/s, UTC)" in drawn
    assert drawn.splitlines()[-1] == (
        f"not drawn: 1 point whose hashrate or time is not a finite number a drawing holds "
        f"(2024-01-01T01:00:00Z {odd!r})"
    )


def test_the_largest_float_is_still_drawn_and_units_still_apply() -> None:
    largest = str(sys.float_info.max)
    assert hashes_per_second(largest) == Decimal(largest)
    assert hashes_per_second("1.5 PH/s") == Decimal("1.5e15")
    assert hashes_per_second(".5 kH/s") == Decimal(500)
    assert hashes_per_second("1e-400000000") == Decimal("1e-400000000")


@pytest.mark.parametrize("odd", ["NaN", "sNaN", "1e400000000"])
async def test_the_command_plots_a_series_holding_an_odd_hashrate(
    odd: str, tmp_path: Path
) -> None:
    async def hashrate(request: web.Request) -> web.Response:
        points = [{"timestamp": T0 + 3600 * i, "hashrate": value}
                  for i, value in enumerate(["5000", odd, "7000"])]
        return web.json_response({"data": {"account": "rig", "hashrate": points}})

    app = web.Application()
    app.router.add_post("/api/v4/mining/hashrate", hashrate)
    async with served(app) as url:
        env = os.environ | {
            "TXC_BASE_URL": url, "TXC_API_KEY": "k" * 32, "TXC_API_SECRET": "s" * 32,
            "TXC_LIMITER": "memory://", "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
        }
        for extra in (["--plot"], [], ["--plot", "--start", "2024-01-01"]):
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "txc_async", "mining", "hashrate", "--account", "rig",
                *extra, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(process.communicate(), timeout=60)
            assert process.returncode == 0, err.decode()
            assert b"Traceback" not in err + out
            if "--plot" in extra:
                assert b"hashrate of rig (kH/s, UTC)" in out
                assert b"not drawn: 1 point" in out and odd.encode() in out
