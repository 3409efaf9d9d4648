"""The performance page's charts and tables: the committed benchmark figures have the shape
``benchmarks/chart.py`` reads, the chart script draws them, every chart and every table of the
page is what the script makes of the same committed runs, and the charts' text is readable where
the page shows them."""

from __future__ import annotations

import json
import math
import os
import re
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


def test_the_committed_runs_have_the_expected_shape() -> None:
    recorded = _figures("percall-runs.json")
    assert recorded["benchmark"] == "percall-runs"
    assert set(recorded["targets"]) == {*OPERATIONS, "throughput"}
    names = [run["name"] for run in recorded["runs"]]
    assert len(names) == len(set(names)) >= 2
    for run in recorded["runs"]:
        for field in ("recorded", "command", "host", "source"):
            assert isinstance(run[field], str) and run[field], (run["name"], field)
        assert run["mode"] in ("quick", "full")
        assert set(run["to_lean"]) == {"asyncio", "uvloop"}
        for ratios in run["to_lean"].values():
            assert set(ratios) == {*OPERATIONS, "throughput"}
            assert all(_ratio(value) for value in ratios.values())


def test_the_charted_quick_run_is_one_of_the_recorded_runs() -> None:
    # percall.json is the run the contenders' chart shows: its txc_async ratios are a run of the
    # runs' chart, to the three decimals the runs are recorded with.
    figures = _figures("percall.json")
    ours = figures["loops"]["asyncio"]["to_lean"][figures["contenders"]["ours"]]
    charted = {loop: {key: round(figures["loops"][loop]["to_lean"]["txc_async"][key], 3)
                      for key in ours} for loop in figures["loops"]}
    assert charted in [run["to_lean"] for run in _figures("percall-runs.json")["runs"]]


def test_every_table_of_the_page_is_written_from_the_committed_runs() -> None:
    from benchmarks import chart

    page = chart.PAGE.read_text()
    written = chart.tables(RESULTS)
    assert set(written) >= {"runs", "percall"}
    for name, table in written.items():
        assert chart.page_table(page, name) == table, (
            f"the {name} table of docs/performance.md is not what benchmarks/chart.py writes "
            "from benchmarks/results/: run make charts"
        )


def test_a_table_is_written_between_its_markers_only() -> None:
    from benchmarks import chart

    page = ("before\n<!-- table: runs, written by chart.py -->\nold\n<!-- end of table: runs -->"
            "\nafter\n")
    rewritten = chart.with_table(page, "runs", "| a |\n|---|")
    assert rewritten == ("before\n<!-- table: runs, written by chart.py -->\n\n| a |\n|---|\n\n"
                         "<!-- end of table: runs -->\nafter\n")
    assert chart.page_table(rewritten, "runs") == "| a |\n|---|"
    with pytest.raises(ValueError, match="no <!-- table: percall -->"):
        chart.with_table(page, "percall", "| a |")


def _texts(svg: str) -> list[str]:
    return [re.sub(r"\s+", " ", text).strip()
            for text in re.findall(r"<text\b[^>]*>(.*?)</text>", svg, re.S)]


def test_the_chart_script_draws_the_committed_figures(tmp_path: Path) -> None:
    _matplotlib()
    from benchmarks import chart

    written = chart.main(["--out", str(tmp_path), "--page", "-"])
    assert {tmp_path / "runs.svg", tmp_path / "percall.svg"} <= set(written)
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
    runs = (tmp_path / "runs.svg").read_text()
    for run in _figures("percall-runs.json")["runs"]:
        assert f">{run['name']}<" in runs
    # The committed charts say what the script draws now from the committed figures.
    for path in written:
        committed = ROOT / "docs" / "assets" / path.name
        assert _texts(committed.read_text()) == _texts(path.read_text()), (
            f"docs/assets/{path.name} is not drawn from benchmarks/results/: run make charts")


def test_the_committed_charts_are_drawn_from_the_committed_figures() -> None:
    # The charts keep their text as text: each names the run it was drawn from.
    for name in ("percall", "backfill"):
        if not (RESULTS / f"{name}.json").exists():
            continue
        svg = (ROOT / "docs" / "assets" / f"{name}.svg").read_text()
        assert _figures(f"{name}.json")["recorded"] in svg, (
            f"docs/assets/{name}.svg is not drawn from benchmarks/results/{name}.json: run "
            "make charts"
        )
    runs = (ROOT / "docs" / "assets" / "runs.svg").read_text()
    for run in _figures("percall-runs.json")["runs"]:
        ratio = run["to_lean"]["asyncio"]["throughput"]
        assert f">{run['name']}<" in runs and f">{ratio:.2f}x<" in runs, run["name"]


#: The narrowest the page's column is on a screen 1024 px wide or wider (Material's layout,
#: measured in Chromium at 1024, 1280, 1440 and 1920 px): a chart no wider is shown at its size.
COLUMN_PX = 688
#: The smallest text a chart may have, as shown on the page.
SMALLEST_PX = 11.0


def test_every_chart_is_shown_at_its_size_with_text_of_11_px_or_more() -> None:
    for path in sorted((ROOT / "docs" / "assets").glob("*.svg")):
        svg = path.read_text()
        width = re.search(r'<svg\b[^>]*\bwidth="([\d.]+)pt"', svg)
        view = re.search(r'<svg\b[^>]*\bviewBox="0 0 ([\d.]+) [\d.]+"', svg)
        assert width and view, path.name
        width_px = float(width.group(1)) * 4 / 3
        assert width_px <= COLUMN_PX, f"{path.name} is {width_px:.0f} px wide, shown smaller"
        px_per_unit = width_px / float(view.group(1))
        sizes = [float(size) for size in re.findall(r"font(?:-size)?:\s*(?:[a-z]+\s+)*([\d.]+)px",
                                                    svg)]
        assert sizes, f"{path.name} keeps no text as text"
        assert min(sizes) * px_per_unit >= SMALLEST_PX, (
            f"{path.name}: text of {min(sizes) * px_per_unit:.1f} px")
