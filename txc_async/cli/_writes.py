"""Writes ask first and are never sent twice: the confirmation (a summary of what is sent),
and what an operator is told when a write's answer is lost after it was sent.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import textwrap
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

import txc_async
from txc_async._operations import Operation

from ._arguments import UsageError
from ._dry_run import CapturedRequest, mask_key

#: Fields of a signed body that are the signature's, not the operation's.
_SIGNING_FIELDS = frozenset({"request", "nonce", "nonceWindow"})


class Declined(Exception):
    """The operator answered no: nothing sent, exit status 0 (the command did what it was
    told: it asked, and sent nothing)."""


class MayHaveTakenEffect(Exception):
    """A write's answer was lost after it was sent: exit status 3."""


@dataclass(frozen=True)
class Write:
    """A write a command sends: what it does, and how to find out whether it took effect.

    ``operation``: the operation it sends, whose parameters name the fields of the summary
    shown before it is confirmed."""

    command: str
    question: str
    check: str
    note: str | None = None
    operation: Operation[Any] | None = None


def new_client_order_id(now: float | None = None) -> str:
    """An id to look the order up by when its answer is lost: the time and 32 random bits."""
    moment = int(time.time() if now is None else now)
    return f"txc-{moment}-{secrets.token_hex(4)}"


def confirm(write: Write, summary: str, *, yes: bool, stdin: TextIO, stderr: TextIO) -> None:
    """Go on when ``--yes`` was given, or the operator says yes on a terminal to the question
    after ``summary``; else raise (`Declined` when the answer is no)."""
    if yes:
        return
    if not stdin.isatty():
        raise UsageError(f"{write.command} sends a write: without a terminal to ask on, "
                         "confirm it with --yes; nothing was sent")
    print(summary, file=stderr)
    print(f"{write.question}? [y/N] ", end="", file=stderr, flush=True)
    answer = stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise Declined(f"{write.command} not confirmed: nothing was sent")


def summarize(
    write: Write, request: CapturedRequest, api_key: str | None, width: int | None = None
) -> str:
    """What a write sends, as its operator checks it before saying yes: the operation, each
    value it sends under its parameter's name (a client order id once, a secret hidden), where
    it goes and with which key; within ``width`` columns (the terminal's)."""
    width = shutil.get_terminal_size().columns if width is None else width
    op = write.operation
    rows = list(_values(op, request))
    rows.append(("sent to", f"{request.method} {request.url}"))
    if "X-TXC-APIKEY" in request.headers:
        rows.append(("API key", mask_key(api_key)))
    if "Authorization" in request.headers:
        rows.append(("authorization", "a bearer token (not shown)"))
    title = f"{write.command}: {op.summary}" if op is not None and op.summary else write.command
    label_width = max(len(label) for label, _ in rows)
    indent = " " * (2 + label_width + 2)
    lines = textwrap.wrap(title, max(width, 40), subsequent_indent="  ")
    for label, value in rows:
        lines += textwrap.wrap(
            f"  {label.ljust(label_width)}  {value}", max(width, len(indent) + 20),
            subsequent_indent=indent, break_long_words=True, break_on_hyphens=False,
        ) or [f"  {label}"]
    return "\n".join(lines)


def _values(op: Operation[Any] | None, request: CapturedRequest) -> Iterator[tuple[str, str]]:
    """The values the request carries (body, query, path), each under its parameter's name."""
    fields: dict[str, object] = {}
    url = urllib.parse.urlsplit(request.url)
    fields.update(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
    if request.body:
        if request.headers.get("Content-Type") == "application/x-www-form-urlencoded":
            fields.update(urllib.parse.parse_qsl(request.body.decode(), keep_blank_values=True))
        else:
            # Numbers as they are written: the summary shows what is sent, digit for digit.
            decoded = json.loads(request.body, parse_float=str, parse_int=str)
            if isinstance(decoded, dict):
                fields.update(decoded)
    for name in _SIGNING_FIELDS:
        fields.pop(name, None)
    if op is not None:
        fields.update(_path_values(op, url.path))
        for param in op.params:
            present = [wire for wire in param.wire if wire in fields]
            if not present:
                continue
            value = fields[present[0]]
            for wire in param.wire:  # a value sent under two names is shown once
                fields.pop(wire, None)
            shown = f"<hidden: {len(str(value))} characters>" if param.secret else _text(value)
            yield param.name.rstrip("_").replace("_", " "), shown
    for name, value in fields.items():  # none is expected: a field no parameter names
        yield name, _text(value)


def _path_values(op: Operation[Any], path: str) -> dict[str, str]:
    """The values a path carries in the places of the operation's path (``{market}``)."""
    names: list[str] = []

    def place(match: re.Match[str]) -> str:
        names.append(match[1])
        return "([^/]+)"

    pattern = re.sub(r"\\\{(\w+)\\\}", place, re.escape(op.path))
    found = re.search(pattern + "$", path)
    if found is None:
        return {}
    return {name: urllib.parse.unquote(value) for name, value in zip(names, found.groups(),
                                                                    strict=True)}


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping | list):
        return json.dumps(value, separators=(", ", ": "), ensure_ascii=False)
    return str(value)


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
