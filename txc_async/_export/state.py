"""The state file beside a file output: the plan on its first line, then one line per finished
job with its rows, a line saying the check ran, and ``pending JOB DAY,DAY`` lines naming the
UTC days (numbered from 1970-01-01) where a job's rows hold rewards that had not settled (the
last such line of a job counts; one without days says none is left). Written atomically when
replaced, appended with an ``fsync`` per line, and read back ignoring a line an interruption
cut."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal

import msgspec

from .._backfill.plan import RewardPlan
from .report import format_moment
from .rowfile import OutputFileError

__all__ = [
    "FORMATS",
    "STATE_VERSION",
    "Format",
    "OutputState",
    "mark_checked",
    "mark_done",
    "mark_pending",
    "output_paths",
    "read_state",
    "reconcile",
    "write_state",
]

Format = Literal["jsonl", "csv", "parquet"]
FORMATS: tuple[Format, ...] = ("jsonl", "csv", "parquet")
#: 4: rows carry the status and payouts, and the state names the days still pending.
STATE_VERSION = 4
#: The state's line saying the run that finished every piece also checked them.
_CHECKED = b"checked"
_PENDING = b"pending"

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
            done[int(parts[0])] = int(parts[1]) if len(parts) > 1 else None
    except (msgspec.MsgspecError, ValueError, KeyError, TypeError, IndexError):
        raise OutputFileError(f"{state_path} is damaged; remove it to rescan the output") from None
    pending = {job: days for job, days in pending.items() if days}
    return OutputState(plan, fmt, done, checked, version, pending)


def _days(text: bytes) -> frozenset[int]:
    return frozenset(int(day) for day in text.split(b",") if day)


def _pending_line(job: int, days: frozenset[int] | set[int]) -> bytes:
    return b"%s %d %s\n" % (_PENDING, job, ",".join(map(str, sorted(days))).encode())


def write_state(state_path: Path, state: OutputState) -> None:
    """Replace the state file atomically."""
    temporary = state_path.with_name(f".{state_path.name}.tmp")
    with temporary.open("wb") as handle:
        handle.write(_header(state.plan, state.fmt))
        handle.writelines(
            (f"{job} {rows}\n" if rows is not None else f"{job}\n").encode()
            for job, rows in sorted(state.done.items())
        )
        if state.checked:
            handle.write(_CHECKED + b"\n")
        handle.writelines(
            _pending_line(job, days) for job, days in sorted(state.pending.items()) if days
        )
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, state_path)


def _append(state: BinaryIO, line: bytes) -> None:
    state.write(line)
    state.flush()
    os.fsync(state.fileno())


def mark_done(state: BinaryIO, job: int, rows: int) -> None:
    """Say in the state (opened to append) that ``job`` is written, ``rows`` rows in all; the
    rows must be on the disk already."""
    _append(state, b"%d %d\n" % (job, rows))


def mark_pending(state: BinaryIO, job: int, days: frozenset[int] | set[int]) -> None:
    """Say in the state which days of ``job`` hold rewards not settled (none: empty)."""
    _append(state, _pending_line(job, days))


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
