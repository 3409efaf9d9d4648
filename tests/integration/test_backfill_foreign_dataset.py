"""``backfill-rewards --out DIR`` where DIR holds another tool's Parquet files (DuckDB's, Spark's,
a table of other columns under a part file's name): refused in one line naming the file, the
directory as it was, never a traceback."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from txc_async.sandbox import Sandbox

# The backfill runs in a subprocess, on asyncio's loop whatever loop this process runs: the
# uvloop pass leaves it out (see tests/conftest.py).
pytestmark = pytest.mark.asyncio_only


def _duckdb(folder: Path) -> str:
    duckdb.sql(f"COPY (SELECT 'north' AS region, 100 AS amount) TO '{folder}' "
               "(FORMAT PARQUET, PER_THREAD_OUTPUT)")
    (name,) = [p.name for p in folder.glob("*.parquet")]
    return name


def _spark(folder: Path) -> str:
    folder.mkdir()
    name = "part-00000-1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901-c000.snappy.parquet"
    pq.write_table(pa.table({"region": ["north"], "amount": [100]}), folder / name)
    (folder / "_SUCCESS").write_bytes(b"")
    return name


def _named_like_a_part(folder: Path) -> str:
    folder.mkdir()
    pq.write_table(pa.table({"region": ["north"], "amount": [100]}),
                   folder / "part-000000-000.parquet")
    return "part-000000-000.parquet"


def _not_parquet_at_all(folder: Path) -> str:
    folder.mkdir()
    (folder / "part-000001-000.parquet").write_bytes(b"region,amount\nnorth,100\n")
    return "part-000001-000.parquet"


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.name != ".lock"}


@pytest.mark.parametrize("written_by", [_duckdb, _spark, _named_like_a_part,
                                        _not_parquet_at_all])
async def test_a_directory_of_another_tools_parquet_files_is_refused_as_it_is(
    tmp_path: Path, written_by: object
) -> None:
    folder = tmp_path / "dataset"
    assert callable(written_by)
    name = written_by(folder)
    before = _snapshot(folder)
    async with Sandbox(mining_accounts=2, rewards_days=5, enforce_limits=False) as box:
        env = os.environ | {
            "TXC_BASE_URL": box.url, "TXC_API_KEY": box.api_key,
            "TXC_API_SECRET": box.api_secret, "TXC_LIMITER": "memory://",
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
        }
        for fmt in ([], ["--format", "parquet"]):
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "txc_async", "backfill-rewards", "--start", "2024-01-01",
                "--end", "2024-01-05", "--out", str(folder), *fmt, env=env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(process.communicate(), timeout=60)
            text = err.decode()
            assert process.returncode == 1 and out == b"", text
            assert text.count("\n") == 1 and "Traceback" not in text
            assert text.startswith(f"txc-async: error: {folder} holds {name}, which is not a "
                                   "part of a rewards backfill"), text
            assert _snapshot(folder) == before


async def test_a_dataset_of_this_backfill_beside_no_other_file_still_resumes(
    tmp_path: Path,
) -> None:
    """The backfill's own parts, of today's format and the earliest one, are its own."""
    from txc_async import InProcessLimiter, RateLimit
    from txc_async._client import Client
    from txc_async._export.run import backfill_to_file

    folder = tmp_path / "dataset"
    unlimited = {"mining_rewards": RateLimit(10**6, 1.0)}
    async with Sandbox(mining_accounts=2, rewards_days=9, enforce_limits=False) as box, \
            Client(api_key=box.api_key, api_secret=box.api_secret, base_url=box.url,
                   rate_limits=unlimited, limiter=InProcessLimiter()) as client:
        start = 1704067200
        first = await backfill_to_file(client, start=start, end=start + 5 * 86400 - 1,
                                       path=folder, fmt="parquet")
        second = await backfill_to_file(client, start=start, end=start + 9 * 86400 - 1,
                                         path=folder, fmt="parquet")
    assert (first.records_written, second.records_written) == (10, 8)
