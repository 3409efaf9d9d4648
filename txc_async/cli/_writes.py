"""Writes ask first and are never sent twice: the confirmation, and what an operator is told
when a write's answer is lost after it was sent.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import TextIO

import txc_async

from ._arguments import UsageError


class Declined(Exception):
    """The operator answered no: exit status 1, nothing sent."""


class MayHaveTakenEffect(Exception):
    """A write's answer was lost after it was sent: exit status 3."""


@dataclass(frozen=True)
class Write:
    """A write a command sends: what it does, and how to find out whether it took effect."""

    command: str
    question: str
    check: str
    note: str | None = None


def new_client_order_id(now: float | None = None) -> str:
    """An id to look the order up by when its answer is lost: the time and 32 random bits."""
    moment = int(time.time() if now is None else now)
    return f"txc-{moment}-{secrets.token_hex(4)}"


def confirm(write: Write, request: str, *, yes: bool, stdin: TextIO, stderr: TextIO) -> None:
    """Go on when ``--yes`` was given, or the operator says yes on a terminal; else raise."""
    if yes:
        return
    if not stdin.isatty():
        raise UsageError(f"{write.command} sends a write: without a terminal to ask on, "
                         "confirm it with --yes; nothing was sent")
    print(request, file=stderr)
    print(f"{write.question}? [y/N] ", end="", file=stderr, flush=True)
    answer = stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise Declined("not confirmed; nothing was sent")


def lost_answer(write: Write, error: txc_async.TxcError) -> MayHaveTakenEffect:
    """The exit-3 outcome of a write whose answer did not come back usable."""
    return MayHaveTakenEffect(
        f"{write.command} may have taken effect: {error}. It was not sent again. {write.check}"
    )


def may_have_taken_effect(error: BaseException) -> bool:
    """Whether a write that ended with ``error`` may have reached the server and run: its
    answer was lost or unreadable, or it was a success answer saying "Too Many Attempts.",
    which does not show that nothing ran (the client does not send the write again either)."""
    if isinstance(error, txc_async.AnswerFormatError):
        return True
    if isinstance(error, txc_async.RateLimitError):
        return error.status is not None and 200 <= error.status < 300
    return isinstance(error, txc_async.TransportError) and error.may_have_reached_server
