"""Draws the benchmarks' recorded figures as SVG charts for the documentation: the per-call
ratios of ``percall.py --json`` and, when recorded, the backfill figures of ``backfill.py --json``.

    python benchmarks/chart.py [--percall PATH] [--backfill PATH] [--out DIR]

By default it reads ``benchmarks/results/percall.json`` and ``benchmarks/results/backfill.json``
and writes ``docs/assets/percall.svg`` and ``docs/assets/backfill.svg``. The SVGs are the same
bytes for the same JSON, so a committed chart changes only when its figures do. Needs
matplotlib (the ``dev`` extra).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
ASSETS = ROOT / "docs" / "assets"

#: The per-call panels: the figure's key in ``to_lean``, its title, and which way is better.
PANELS = (
    ("main_balance", "CPU per main_balance call", "lower is better"),
    ("investments_history", "CPU per investments_history call (100 records)", "lower is better"),
    ("throughput", "calls per second, 64 concurrent callers", "higher is better"),
)
LOOP_COLOURS = {"asyncio": "#3b6ea8", "uvloop": "#e08a2c"}


def _pyplot() -> Any:
    """matplotlib's pyplot on the file-only backend, with settings that make the SVG the same
    bytes on every run (no date, fixed element ids) and keep its text as text."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update({
        "svg.hashsalt": "txc_async",
        "svg.fonttype": "none",
        "font.size": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
    })
    import matplotlib.pyplot as plt

    return plt


def _conditions(figures: dict[str, Any]) -> str:
    return (f"{figures['benchmark']}.py, {figures['mode']} run of {figures['recorded']}; "
            f"{figures['machine']}")


def percall_chart(figures: dict[str, Any], out: Path) -> Path:
    """Each contender's CPU per call and throughput over the lean typed client's, measured in
    the same run, on each event loop: one panel per figure, one bar per contender and loop."""
    plt = _pyplot()
    loops = list(figures["loops"])
    lean = figures["contenders"]["lean"]
    ours = figures["contenders"]["ours"]
    contenders = [ours] + [
        name for name in figures["loops"][loops[0]]["to_lean"] if name != ours
    ]
    fig, axes = plt.subplots(1, len(PANELS), figsize=(11, 3.6), sharey=True)
    height = 0.8 / len(loops)
    for axis, (key, title, better) in zip(axes, PANELS, strict=True):
        top = 0.0
        for index, loop in enumerate(loops):
            ratios = [figures["loops"][loop]["to_lean"][name][key] for name in contenders]
            places = [row + index * height for row in range(len(contenders))]
            bars = axis.barh(places, ratios, height=height, color=LOOP_COLOURS.get(loop),
                             label=loop)
            axis.bar_label(bars, labels=[f"{ratio:.2f}x" for ratio in ratios], padding=2,
                           fontsize=7)
            top = max(top, *ratios)
        axis.axvline(1.0, color="#444444", linewidth=0.8, linestyle="--")
        target = figures["targets"].get(key)
        if target is not None:
            axis.axvline(target, color="#2a8a4a", linewidth=0.8, linestyle=":")
        axis.set_xlim(0, top * 1.25)
        axis.set_title(f"{title}\n({better}; 1.0 = {lean})", fontsize=8.5)
        axis.set_xlabel("ratio to the lean typed client, same run")
    axes[0].set_yticks([row + height * (len(loops) - 1) / 2 for row in range(len(contenders))])
    axes[0].set_yticklabels(contenders)
    axes[0].invert_yaxis()
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, title="event loop", loc="lower right", ncol=len(loops),
               fontsize=7, title_fontsize=7, frameon=False)
    fig.suptitle("txc_async and other clients against the lean typed client "
                 "(dashed: the lean client; dotted: txc_async's target)", fontsize=10)
    fig.text(0.01, 0.01, _conditions(figures), fontsize=6.5, color="#555555")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(out, format="svg", metadata={"Date": None})
    plt.close(fig)
    return out


def backfill_chart(figures: dict[str, Any], out: Path) -> Path:
    """Client CPU per record and peak resident memory of the iterator at the larger size and
    of each export of the same records."""
    plt = _pyplot()
    rows = [figures["iterator"][-1], *figures["exports"]]
    labels = [
        "iterator (Decimal)" if row["output"] == "iterator" else row["output"] for row in rows
    ]
    fig, (cpu_axis, memory_axis) = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
    for axis, key, title, unit in (
        (cpu_axis, "cpu_per_record_us", "client CPU per record", "µs"),
        (memory_axis, "peak_rss_mb", "peak resident memory", "MB"),
    ):
        values = [row[key] for row in rows]
        bars = axis.barh(range(len(rows)), values, color="#3b6ea8")
        axis.bar_label(bars, labels=[f"{value:.1f} {unit}" for value in values], padding=2,
                       fontsize=7)
        axis.set_xlim(0, max(values) * 1.3)
        axis.set_title(f"{title} (lower is better)", fontsize=8.5)
        axis.set_xlabel(unit)
    cpu_axis.set_yticks(range(len(rows)))
    cpu_axis.set_yticklabels(labels)
    cpu_axis.invert_yaxis()
    fig.suptitle(f"Backfill of {rows[0]['records']:,} rewards, by output "
                 f"(concurrency {figures['concurrency']})", fontsize=10)
    fig.text(0.01, 0.01, _conditions(figures), fontsize=6.5, color="#555555")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(out, format="svg", metadata={"Date": None})
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--percall", type=Path, default=RESULTS / "percall.json")
    parser.add_argument("--backfill", type=Path, default=RESULTS / "backfill.json")
    parser.add_argument("--out", type=Path, default=ASSETS, help="folder of the SVG files")
    arguments = parser.parse_args(argv)
    arguments.out.mkdir(parents=True, exist_ok=True)
    written = [percall_chart(json.loads(arguments.percall.read_text()),
                             arguments.out / "percall.svg")]
    if arguments.backfill.exists():
        written.append(backfill_chart(json.loads(arguments.backfill.read_text()),
                                      arguments.out / "backfill.svg"))
    for path in written:
        print(f"wrote {path}")
    return written


if __name__ == "__main__":
    main()
