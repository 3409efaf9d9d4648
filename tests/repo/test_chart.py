"""The performance page's charts: the committed benchmark figures have the shape
``benchmarks/chart.py`` reads, and the chart script draws them."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
OPERATIONS = ("main_balance", "investments_history")


def _figures(name: str) -> dict[str, Any]:
    figures: dict[str, Any] = json.loads((RESULTS / name).read_text())
    return figures


def _matplotlib() -> None:
    """matplotlib comes with the dev extra; without it the chart tests are skipped, except under
    CI, where they must run."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("matplotlib is not installed; CI installs the dev extra")
        pytest.skip("matplotlib is not installed (pip install '.[dev]')")


def _ratio(value: object) -> bool:
    return isinstance(value, float) and math.isfinite(value) and value > 0


def test_the_committed_per_call_figures_have_the_expected_shape() -> None:
    figures = _figures("percall.json")
    assert figures["benchmark"] == "percall"
    assert figures["mode"] in ("quick", "full")
    for condition in ("recorded", "machine", "load_before", "load_after", "txc_async"):
        assert isinstance(figures[condition], str) and figures[condition]
    contenders = figures["contenders"]
    ours, lean = contenders["ours"], contenders["lean"]
    assert set(figures["targets"]) == {*OPERATIONS, "throughput"}
    assert "asyncio" in figures["loops"]
    for loop in figures["loops"].values():
        names = set(loop["throughput_calls_per_s"])
        assert {ours, lean, contenders["floor"], contenders["hand"]} <= names
        for operation in OPERATIONS:
            assert set(loop["cpu_per_call_us"][operation]) == names
            assert set(loop["median_latency_ms"][operation]) == names
        assert set(loop["to_lean"]) == names - {lean}
        for ratios in loop["to_lean"].values():
            assert set(ratios) == {*OPERATIONS, "throughput"}
            assert all(_ratio(value) for value in ratios.values())
        for ratios in loop["txc_async_to"].values():
            assert all(_ratio(value) for value in ratios.values())
    decode = figures["decode_investments_us"]
    assert decode["typed"] > decode["text"] > 0


def test_the_committed_backfill_figures_have_the_expected_shape() -> None:
    path = RESULTS / "backfill.json"
    if not path.exists():
        pytest.skip("no backfill figures are committed")
    figures = _figures("backfill.json")
    assert figures["benchmark"] == "backfill"
    assert [row["output"] for row in figures["iterator"]] == ["iterator", "iterator"]
    assert {row["output"] for row in figures["exports"]} == {
        "jsonl-decimal", "jsonl", "csv", "parquet", "pipe",
    }
    for row in figures["iterator"] + figures["exports"]:
        assert row["records"] > 0 and row["requests"] > 0
        assert row["records_per_s"] > 0 and row["cpu_per_record_us"] > 0
        assert row["peak_rss_mb"] > 0


def test_the_chart_script_draws_the_committed_figures(tmp_path: Path) -> None:
    _matplotlib()
    from benchmarks import chart

    written = chart.main(["--out", str(tmp_path)])
    assert tmp_path / "percall.svg" in written
    for path in written:
        svg = path.read_text()
        assert svg.lstrip().startswith("<?xml") and svg.rstrip().endswith("</svg>")
    percall = (tmp_path / "percall.svg").read_text()
    # The chart names every contender and every event loop of the figures it was drawn from.
    figures = _figures("percall.json")
    for name in figures["loops"]["asyncio"]["to_lean"]:
        assert name in percall
    for loop in figures["loops"]:
        assert loop in percall


def test_the_committed_charts_are_drawn_from_the_committed_figures() -> None:
    # The charts keep their text as text: each names the run it was drawn from.
    for name in ("percall", "backfill"):
        if not (RESULTS / f"{name}.json").exists():
            continue
        svg = (ROOT / "docs" / "assets" / f"{name}.svg").read_text()
        assert _figures(f"{name}.json")["recorded"] in svg, (
            f"docs/assets/{name}.svg is not drawn from benchmarks/results/{name}.json: run "
            "python benchmarks/chart.py"
        )
