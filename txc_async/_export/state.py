"""The state file beside a file output: the plan on its first line, then one record per step of
a run, each one line: a job finished, or the check's finds added to it (``JOB ROWS DAY,DAY``:
its rows, ``-`` when a version that did not count wrote it, and the UTC days, numbered from
1970-01-01, where its rows hold rewards that had not settled; none left when there are none),
and the check over (``checked``). The last record of a job counts. ``pending JOB DAY,DAY``
names the pending days of a job that is not finished (rows of the earlier format, upgraded).

Whatever interrupts a run, a step is in the state whole or not at all: one record is one line,
written by one ``write`` and made durable by an ``fsync`` before the next step; a line cut by an
interruption (a power loss, a full disk) is ignored when read back and cut before anything is
appended, so that no record runs into the next. Replaced atomically when rewritten."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal

import msgspec

from .._backfill.plan import RewardPlan
from .report import format_moment
from .rowfile import OutputFileError, cut_torn_tail

__all__ = [
    "FORMATS",
    "STATE_VERSION",
    "Format",
    "OutputState",
    "mark_checked",
    "mark_done",
    "open_to_append",
    "output_paths",
    "read_state",
    "reconcile",
    "write_state",
]

Format = Literal["jsonl", "csv", "parquet"]
FORMATS: tuple[Format, ...] = ("jsonl", "csv", "parquet")
#: 4: rows carry the status and payouts, and the state names the days still pending.
#: 5: a finished job's record carries its pending days (4 gave them a line of their own).
STATE_VERSION = 5
#: The state's line saying the run that finished every piece also checked them.
_CHECKED = b"checked"
_PENDING = b"pending"
#: A record's rows when the version that wrote it did not count them.
_UNCOUNTED = b"-"

_encode = msgspec.json.Encoder().encode
_decode_header = msgspec.json.Decoder(dict[str, Any]).decode


@dataclass(slots=True)
class OutputState:
    plan: RewardPlan
    fmt: Format
    #: Finished jobs and their rows (``None``: written by a version that did not count).
    done: dict[int, int | None]
    #: Whether the run that finished every job then checked them (see ``_backfill.ledger``); a
    #: state from a version without the check counts as checked.
    checked: bool = False
    #: The state's format version.
    version: int = STATE_VERSION
    #: Per job, the UTC days (``date // 86400``) whose rows held pending rewards when read.
    pending: dict[int, frozenset[int]] = field(default_factory=dict)


def output_paths(out: Path, fmt: Format) -> tuple[Path, Path]:
    """The state file and the lock file of an output, named after the file ``out`` leads to:
    runs that reach one output through a symbolic link and its target share them."""
    out = out.resolve()
    if fmt == "parquet":
        return out / "_progress", out / ".lock"
    return out.with_name(out.name + ".progress"), out.with_name(out.name + ".lock")


def _header(plan: RewardPlan, fmt: Format) -> bytes:
    return _encode({
        "version": STATE_VERSION, "format": fmt, "start": plan.start, "end": plan.end,
        "extended_from": list(plan.extended_from), "accounts": list(plan.accounts),
        "slice_seconds": plan.slice_seconds, "shard": list(plan.shard),
    }) + b"\n"


def read_state(state_path: Path) -> OutputState | None:
    if not state_path.exists():
        return None
    # Only whole lines count: a line torn by an interruption is ignored.
    lines = state_path.read_bytes().split(b"\n")[:-1]
    if not lines:
        return None
    try:
        head = _decode_header(lines[0])
        plan = RewardPlan(
            start=int(head["start"]), end=int(head["end"]),
            accounts=tuple(str(a) for a in head.get("accounts", ())),
            slice_seconds=int(head["slice_seconds"]),
            extended_from=tuple(int(e) for e in head.get("extended_from", ())),
            shard=(int(head.get("shard", (1, 1))[0]), int(head.get("shard", (1, 1))[1])),
        )
        fmt = head["format"]
        if fmt not in FORMATS:
            raise ValueError(fmt)
        version = int(head.get("version", 1))
        done: dict[int, int | None] = {}
        pending: dict[int, frozenset[int]] = {}
        checked = version < 3
        for line in lines[1:]:
            if line == _CHECKED:
                checked = True
                continue
            parts = line.split()
            if parts[0] == _PENDING:
                pending[int(parts[1])] = _days(parts[2] if len(parts) > 2 else b"")
                continue
            if len(parts) > 3:
                raise ValueError(line)
            job = int(parts[0])
            done[job] = (
                int(parts[1]) if len(parts) > 1 and parts[1] != _UNCOUNTED else None
            )
            # A finished job's record names every day of it still pending: none when it
            # names none (state 4 gave them a line after it, read after it the same way).
            pending[job] = _days(parts[2] if len(parts) > 2 else b"")
    except (msgspec.MsgspecError, ValueError, KeyError, TypeError, IndexError):
        raise OutputFileError(f"{state_path} is damaged; remove it to rescan the output") from None
    pending = {job: days for job, days in pending.items() if days}
    return OutputState(plan, fmt, done, checked, version, pending)


def _days(text: bytes) -> frozenset[int]:
    return frozenset(int(day) for day in text.split(b",") if day)


def _day_list(days: Iterable[int]) -> bytes:
    return ",".join(map(str, sorted(days))).encode()


def _pending_line(job: int, days: Iterable[int]) -> bytes:
    return b"%s %d %s\n" % (_PENDING, job, _day_list(days))


def _done_line(job: int, rows: int | None, days: Iterable[int]) -> bytes:
    """A finished job's record: its rows and the days its rows hold pending rewards on."""
    counted = _UNCOUNTED if rows is None else b"%d" % rows
    listed = _day_list(days)
    return b"%d %s %s\n" % (job, counted, listed) if listed else b"%d %s\n" % (job, counted)


def write_state(state_path: Path, state: OutputState) -> None:
    """Replace the state file atomically."""
    temporary = state_path.with_name(f".{state_path.name}.tmp")
    with temporary.open("wb") as handle:
        handle.write(_header(state.plan, state.fmt))
        handle.writelines(
            _done_line(job, rows, state.pending.get(job, ()))
            for job, rows in sorted(state.done.items())
        )
        if state.checked:
            handle.write(_CHECKED + b"\n")
        handle.writelines(
            _pending_line(job, days) for job, days in sorted(state.pending.items())
            if days and job not in state.done
        )
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, state_path)


def open_to_append(state_path: Path) -> BinaryIO:
    """The state file opened to append records, unbuffered (a record is one ``write``), its
    last line cut first if an interruption left it without its newline: a record appended
    after it would run into it."""
    cut_torn_tail(state_path)
    return state_path.open("ab", buffering=0)


def _append(state: BinaryIO, record: bytes) -> None:
    """One record, whole, made durable before the run goes on."""
    fd = state.fileno()
    view = memoryview(record)
    while view:  # one write, unless the system takes part of it (a full disk: it then fails)
        view = view[os.write(fd, view):]
    os.fsync(fd)


def mark_done(
    state: BinaryIO, job: int, rows: int | None, pending: Iterable[int] = ()
) -> None:
    """Say in the state (see `open_to_append`), in one record, that ``job`` is written with
    ``rows`` rows in all (``None``: not counted) and which of its days hold rewards not settled
    (``pending``: all of them, earlier runs' included). Its rows must be on the disk already."""
    _append(state, _done_line(job, rows, pending))


def mark_checked(state: BinaryIO) -> None:
    """Say in the state that the check ran over every job."""
    _append(state, _CHECKED + b"\n")


def _accounts_flag(accounts: Sequence[str]) -> str:
    return " ".join(f"--account {shlex.quote(a)}" for a in accounts) if accounts else (
        "every account"
    )


def reconcile(saved: OutputState, wanted: RewardPlan, fmt: Format, out: Path) -> RewardPlan:
    """The plan to run on an output holding ``saved``: the same one, or extended to a later end.
    Any other difference is refused in one line naming the flag, the output's value and the way
    out."""
    old = saved.plan
    other = "or choose another --out"
    if saved.fmt != fmt:
        raise OutputFileError(
            f"{out} holds --format {saved.fmt}; rerun with --format {saved.fmt}, {other}"
        )
    if old.start != wanted.start:
        value = format_moment(old.start)
        raise OutputFileError(
            f"{out} holds rewards from --start {value}; rerun with --start {value}, {other}"
        )
    if old.accounts != wanted.accounts:
        raise OutputFileError(
            f"{out} holds {_accounts_flag(old.accounts)}; rerun with "
            f"{_accounts_flag(old.accounts) if old.accounts else 'no --account'}, {other}"
        )
    if old.shard != wanted.shard:
        value = f"{old.shard[0]}/{old.shard[1]}"
        raise OutputFileError(f"{out} holds --shard {value}; rerun with --shard {value}, {other}")
    if wanted.end < old.end:
        value = format_moment(old.end, end=True)
        raise OutputFileError(
            f"{out} already reaches --end {value}; rerun with --end {value} or later, {other}"
        )
    if wanted.end == old.end:
        return old
    return RewardPlan(
        old.start, wanted.end, old.accounts, old.slice_seconds,
        (*old.extended_from, old.end), old.shard,
    )
