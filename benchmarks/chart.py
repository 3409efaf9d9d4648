"""Draws the performance page's charts, and writes the tables under them, from the recorded runs
in ``benchmarks/results/``, so that a chart and its table always show the same runs:

- ``percall-runs.json``: txc_async over the lean typed client in every recorded per-call run
  (full ``make bench`` runs and quick ``percall.py --quick`` runs), as ``docs/assets/runs.svg``
  and the table under it;
- ``percall.json`` (``percall.py --json``): every contender over the lean client in one run, as
  ``docs/assets/percall.svg`` and its table;
- ``backfill.json`` (``backfill.py --json``), when recorded: CPU per record and peak memory by
  output, as ``docs/assets/backfill.svg`` and its table.

    python benchmarks/chart.py [--results DIR] [--out DIR] [--page PATH]

A table goes into ``docs/performance.md`` between the comments ``<!-- table: NAME ... -->`` and
``<!-- end of table: NAME -->``, replacing what was there. The SVGs are the same bytes for the
same JSON, so a committed chart changes only when its figures do; they keep their text as text,
at least 9 pt on a chart at most 7 in wide: 12 px and more where the page shows the chart at its
own size (its column is 688 px wide or more on a screen of 1024 px and more). Needs matplotlib
(the ``dev`` extra; ``make charts``).
"""

from __future__ import annotations

import argparse
import json
import re
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
ASSETS = ROOT / "docs" / "assets"
PAGE = ROOT / "docs" / "performance.md"

#: The per-call figures: the key in ``to_lean``, its title, and which way is better.
PANELS = (
    ("main_balance", "CPU per main_balance call", "lower is better"),
    ("investments_history", "CPU per investments_history call, 100 records", "lower is better"),
    ("throughput", "calls per second, 64 callers", "higher is better"),
)
LOOP_COLOURS = {"asyncio": "#3b6ea8", "uvloop": "#e08a2c"}
#: Every chart is this wide, at most the page's column, so that the page shows it at its size.
WIDTH_IN = 7.0
#: Font sizes in points; the smallest is 12 px on the page.
TEXT_PT = 9.0
TITLE_PT = 10.0
HEADING_PT = 11.0
WRAP = 92


def _pyplot() -> Any:
    """matplotlib's pyplot on the file-only backend, with settings that make the SVG the same
    bytes on every run (no date, fixed element ids) and keep its text as text."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update({
        "svg.hashsalt": "txc_async",
        "svg.fonttype": "none",
        "font.size": TEXT_PT,
        "axes.titlesize": TITLE_PT,
        "axes.labelsize": TEXT_PT,
        "xtick.labelsize": TEXT_PT,
        "ytick.labelsize": TEXT_PT,
        "legend.fontsize": TEXT_PT,
        "legend.title_fontsize": TEXT_PT,
        "axes.spines.top": False,
        "axes.spines.right": False,
    })
    import matplotlib.pyplot as plt

    return plt


def _footnote(fig: Any, text: str) -> None:
    fig.text(0.01, 0.005, textwrap.fill(text, WRAP), fontsize=TEXT_PT, color="#444444",
             va="bottom", linespacing=1.3)


def _save(fig: Any, out: Path, footnote_lines: int) -> Path:
    height = fig.get_figheight()
    bottom = (0.25 + 0.17 * footnote_lines) / height
    fig.tight_layout(rect=(0, bottom, 1, 1))
    fig.savefig(out, format="svg", metadata={"Date": None})
    return out


def _ratio_panels(plt: Any, rows: list[str], ratios: dict[str, dict[str, list[float]]],
                  targets: dict[str, float], baseline: str, height_in: float) -> Any:
    """One panel per figure, stacked; one group of bars per row, one bar per event loop, each
    labelled with its ratio; dashed at 1.0 (the baseline), dotted at txc_async's target."""
    loops = list(ratios)
    fig, axes = plt.subplots(len(PANELS), 1, figsize=(WIDTH_IN, height_in))
    bar = 0.8 / len(loops)
    for axis, (key, title, better) in zip(axes, PANELS, strict=True):
        top = 0.0
        for index, loop in enumerate(loops):
            values = ratios[loop][key]
            places = [row + index * bar for row in range(len(rows))]
            bars = axis.barh(places, values, height=bar, color=LOOP_COLOURS.get(loop), label=loop)
            axis.bar_label(bars, labels=[f"{value:.2f}x" for value in values], padding=2,
                           fontsize=TEXT_PT)
            top = max(top, *values)
        axis.axvline(1.0, color="#444444", linewidth=0.8, linestyle="--")
        target = targets.get(key)
        if target is not None:
            axis.axvline(target, color="#2a8a4a", linewidth=1.0, linestyle=":")
        axis.set_xlim(0, top * 1.22)
        axis.set_title(f"{title} ({better})", loc="left")
        axis.set_yticks([row + bar * (len(loops) - 1) / 2 for row in range(len(rows))])
        axis.set_yticklabels(rows)
        axis.invert_yaxis()
    axes[-1].set_xlabel(f"ratio to the {baseline}, same run")
    axes[0].legend(title="event loop", loc="lower right", ncol=len(loops), frameon=False,
                   bbox_to_anchor=(1.0, 1.1))
    return fig


def runs_chart(recorded: dict[str, Any], out: Path) -> Path:
    """txc_async over the lean typed client in every recorded run: one panel per figure, one
    group of bars per run, one bar per event loop."""
    plt = _pyplot()
    runs = recorded["runs"]
    loops = list(runs[0]["to_lean"])
    ratios = {loop: {key: [run["to_lean"][loop][key] for run in runs] for key, _, _ in PANELS}
              for loop in loops}
    fig = _ratio_panels(plt, [run["name"] for run in runs], ratios, recorded["targets"],
                        "lean typed client", 3.5 * len(PANELS) + 1.4)
    fig.suptitle("txc_async over the lean typed client in each recorded run\n"
                 "(dashed: 1.0, the lean client; dotted: txc_async's target)",
                 fontsize=HEADING_PT, x=0.01, ha="left")
    hosts = {}
    for run in runs:
        hosts.setdefault((run["mode"], run["command"], run["recorded"], run["host"]), []).append(
            run["name"])
    note = "; ".join(f"{names[0]}-{names[-1].split()[-1]}: {command}, {when}, {host}"
                     for (_, command, when, host), names in hosts.items())
    _footnote(fig, note)
    path = _save(fig, out, len(textwrap.wrap(note, WRAP)))
    plt.close(fig)
    return path


def _conditions(figures: dict[str, Any]) -> str:
    return (f"{figures['benchmark']}.py, {figures['mode']} run of {figures['recorded']}; "
            f"{figures['machine']}")


def _contenders(figures: dict[str, Any]) -> list[str]:
    ours = figures["contenders"]["ours"]
    first = next(iter(figures["loops"].values()))
    return [ours] + [name for name in first["to_lean"] if name != ours]


def percall_chart(figures: dict[str, Any], out: Path) -> Path:
    """Each contender's CPU per call and throughput over the lean typed client's, measured in
    the same run, on each event loop: one panel per figure, one bar per contender and loop."""
    plt = _pyplot()
    contenders = _contenders(figures)
    ratios = {loop: {key: [figures["loops"][loop]["to_lean"][name][key] for name in contenders]
                     for key, _, _ in PANELS}
              for loop in figures["loops"]}
    fig = _ratio_panels(plt, contenders, ratios, figures["targets"],
                        "lean typed client", 2.4 * len(PANELS) + 1.4)
    fig.suptitle("txc_async and other clients over the lean typed client, one run\n"
                 "(dashed: 1.0, the lean client; dotted: txc_async's target)",
                 fontsize=HEADING_PT, x=0.01, ha="left")
    note = _conditions(figures)
    _footnote(fig, note)
    path = _save(fig, out, len(textwrap.wrap(note, WRAP)))
    plt.close(fig)
    return path


def _backfill_rows(figures: dict[str, Any]) -> list[dict[str, Any]]:
    return [figures["iterator"][-1], *figures["exports"]]


def _output_name(row: dict[str, Any]) -> str:
    return "iterator (Decimal)" if row["output"] == "iterator" else row["output"]


def backfill_chart(figures: dict[str, Any], out: Path) -> Path:
    """Client CPU per record and peak resident memory of the iterator at the larger size and
    of each export of the same records."""
    plt = _pyplot()
    rows = _backfill_rows(figures)
    labels = [_output_name(row) for row in rows]
    fig, axes = plt.subplots(2, 1, figsize=(WIDTH_IN, 5.6))
    for axis, key, title, unit in (
        (axes[0], "cpu_per_record_us", "client CPU per record", "µs"),
        (axes[1], "peak_rss_mb", "peak resident memory", "MB"),
    ):
        values = [row[key] for row in rows]
        bars = axis.barh(range(len(rows)), values, color="#3b6ea8")
        axis.bar_label(bars, labels=[f"{value:.1f} {unit}" for value in values], padding=2,
                       fontsize=TEXT_PT)
        axis.set_xlim(0, max(values) * 1.25)
        axis.set_title(f"{title} (lower is better)", loc="left")
        axis.set_xlabel(unit)
        axis.set_yticks(range(len(rows)))
        axis.set_yticklabels(labels)
        axis.invert_yaxis()
    fig.suptitle(f"Backfill of {rows[0]['records']:,} rewards, by output "
                 f"(concurrency {figures['concurrency']})", fontsize=HEADING_PT, x=0.01,
                 ha="left")
    note = _conditions(figures)
    _footnote(fig, note)
    path = _save(fig, out, len(textwrap.wrap(note, WRAP)))
    plt.close(fig)
    return path


# --- The tables under the charts -----------------------------------------------------------------

def _pair(values: list[float]) -> str:
    return " / ".join(f"{value:.3f}x" for value in values)


def runs_table(recorded: dict[str, Any]) -> str:
    """The runs of ``runs.svg``, in its order, with the same figures (asyncio / uvloop)."""
    runs = recorded["runs"]
    loops = list(runs[0]["to_lean"])
    targets = recorded["targets"]
    lines = [
        "| run | recorded | CPU per `main_balance` call | CPU per 100-record "
        "`investments_history` call | calls per second, 64 callers |",
        "|---|---|---|---|---|",
    ]
    for run in runs:
        cells = [_pair([run["to_lean"][loop][key] for loop in loops]) for key, _, _ in PANELS]
        lines.append(f"| {run['name']} | {run['recorded']}, `{run['command']}` | "
                     + " | ".join(cells) + " |")
    lines.append("| target | | " + " | ".join(
        f"{'<=' if key != 'throughput' else '>='} {targets[key]:.2f}x" for key, _, _ in PANELS)
        + " |")
    hosts: dict[str, list[str]] = {}
    for run in runs:
        hosts.setdefault(run["host"], []).append(run["name"])
    notes = [f"The host of {names[0]} to {names[-1]}: {host}." for host, names in hosts.items()]
    return "\n".join(lines) + "\n\nEach cell is " + " / ".join(loops) + ". " + " ".join(notes)


def contenders_table(figures: dict[str, Any]) -> str:
    """The contenders of ``percall.svg``, in its order, with the same figures."""
    loops = list(figures["loops"])
    lines = [
        "| contender | CPU per `main_balance` call | CPU per 100-record `investments_history` "
        "call | calls per second, 64 callers |",
        "|---|---|---|---|",
    ]
    for name in _contenders(figures):
        cells = [_pair([figures["loops"][loop]["to_lean"][name][key] for loop in loops])
                 for key, _, _ in PANELS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return ("\n".join(lines) + f"\n\nEach cell is {' / '.join(loops)}; "
            f"`{figures['benchmark']}.py`, {figures['mode']} run of {figures['recorded']}, "
            f"{figures['machine']}.")


def backfill_table(figures: dict[str, Any]) -> str:
    """The outputs of ``backfill.svg``, in its order, with the same figures."""
    lines = ["| output | records | client CPU per record | records per second | peak RSS |",
             "|---|---|---|---|---|"]
    for row in _backfill_rows(figures):
        lines.append(f"| {_output_name(row)} | {row['records']:,} | "
                     f"{row['cpu_per_record_us']:.1f} µs | {row['records_per_s']:,.0f} | "
                     f"{row['peak_rss_mb']:.1f} MB |")
    return ("\n".join(lines) + f"\n\n`{figures['benchmark']}.py`, {figures['mode']} run of "
            f"{figures['recorded']}, {figures['machine']}, concurrency {figures['concurrency']}.")


def _region(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- table: {re.escape(name)}\b[^>]*-->\n)(.*?)(<!-- end of table: "
                      rf"{re.escape(name)} -->)", re.S)


def page_table(page: str, name: str) -> str | None:
    """The table named ``name`` as the page has it, or None if the page has no such region."""
    found = _region(name).search(page)
    return found.group(2).strip() if found else None


def with_table(page: str, name: str, table: str) -> str:
    """``page`` with the region of the table named ``name`` replaced by ``table``."""
    pattern = _region(name)
    if not pattern.search(page):
        raise ValueError(f"the page has no <!-- table: {name} --> ... "
                         f"<!-- end of table: {name} --> region")
    return pattern.sub(lambda found: f"{found.group(1)}\n{table}\n\n{found.group(3)}", page,
                       count=1)


def tables(results: Path) -> dict[str, str]:
    """Every table the page shows, by name, from the recorded runs in ``results``."""
    written = {
        "runs": runs_table(json.loads((results / "percall-runs.json").read_text())),
        "percall": contenders_table(json.loads((results / "percall.json").read_text())),
    }
    if (results / "backfill.json").exists():
        written["backfill"] = backfill_table(json.loads((results / "backfill.json").read_text()))
    return written


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="folder of the recorded runs' JSON")
    parser.add_argument("--out", type=Path, default=ASSETS, help="folder of the SVG files")
    parser.add_argument("--page", type=Path, default=PAGE,
                        help="the Markdown page whose tables are rewritten ('-' for none)")
    arguments = parser.parse_args(argv)
    results: Path = arguments.results
    arguments.out.mkdir(parents=True, exist_ok=True)
    written = [
        runs_chart(json.loads((results / "percall-runs.json").read_text()),
                   arguments.out / "runs.svg"),
        percall_chart(json.loads((results / "percall.json").read_text()),
                      arguments.out / "percall.svg"),
    ]
    if (results / "backfill.json").exists():
        written.append(backfill_chart(json.loads((results / "backfill.json").read_text()),
                                      arguments.out / "backfill.svg"))
    if str(arguments.page) != "-":
        page = arguments.page.read_text()
        for name, table in tables(results).items():
            page = with_table(page, name, table)
        arguments.page.write_text(page)
        written.append(arguments.page)
    for path in written:
        print(f"wrote {path}")
    return written


if __name__ == "__main__":
    main()
