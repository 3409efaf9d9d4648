"""``backfill-rewards`` keeps its budgets where the profile says, as the operation commands do:
machines meant to share one budget through a profile's ``limiter`` do share it."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from txc_async.sandbox import Sandbox

# The backfill runs in a subprocess, on asyncio's loop whatever loop this process runs: the
# uvloop pass leaves it out (see tests/conftest.py).
pytestmark = pytest.mark.asyncio_only


async def _backfill(box: Sandbox, home: Path, out: Path, *flags: str) -> str:
    env = os.environ | {
        "TXC_BASE_URL": box.url, "TXC_API_KEY": box.api_key, "TXC_API_SECRET": box.api_secret,
        "XDG_CONFIG_HOME": str(home / "config"), "XDG_CACHE_HOME": str(home / "cache"),
    }
    env.pop("TXC_LIMITER", None)
    env.pop("TXC_PROFILE", None)
    global_flags = [f for f in flags if f.startswith("--profile")]
    command_flags = [f for f in flags if not f.startswith("--profile")]
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "txc_async", *global_flags, "backfill-rewards", "--start",
        "2024-01-01", "--end", "2024-01-05", "--out", str(out), *command_flags, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode == 0, err.decode()
    return err.decode()


def _config(home: Path, text: str) -> None:
    path = home / "config" / "txc-async" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o600)


async def test_the_profiles_limiter_holds_the_budget_unless_limiter_is_given(
    tmp_path: Path,
) -> None:
    shared, default, given = (tmp_path / f"{name}.sqlite3" for name in ("shared", "d", "given"))
    cache = tmp_path / "cache" / "txc_async" / "budgets.sqlite3"
    async with Sandbox(mining_accounts=3, rewards_days=5, enforce_limits=False) as box:
        # A profile named with --profile is used as it is (the environment does not fill it
        # in): it holds its own keys.
        _config(tmp_path, f'[profiles.shared]\nlimiter = "sqlite:///{shared}"\n'
                          f'base_url = "{box.url}"\napi_key = "{box.api_key}"\n'
                          f'api_secret = "{box.api_secret}"\n'
                          f'[profiles.default]\nlimiter = "sqlite:///{default}"\n')
        await _backfill(box, tmp_path, tmp_path / "a.jsonl", "--profile=shared")
        assert shared.exists() and not default.exists() and not cache.exists()
        await _backfill(box, tmp_path, tmp_path / "b.jsonl")
        assert default.exists() and not cache.exists()
        await _backfill(box, tmp_path, tmp_path / "c.jsonl", "--profile=shared",
                        "--limiter", f"sqlite:///{given}")
        assert given.exists() and not cache.exists()


async def test_without_a_profile_limiter_the_cache_file_holds_the_budget(tmp_path: Path) -> None:
    _config(tmp_path, '[profiles.default]\nbase_url = "http://127.0.0.1:9"\n')
    async with Sandbox(mining_accounts=3, rewards_days=5, enforce_limits=False) as box:
        # TXC_BASE_URL wins over the profile's base_url, as every command reads it.
        await _backfill(box, tmp_path, tmp_path / "a.jsonl")
    assert (tmp_path / "cache" / "txc_async" / "budgets.sqlite3").exists()
