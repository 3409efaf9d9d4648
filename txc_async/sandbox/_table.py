"""The sandbox's own table of the service's operations, read from ``_documented.json``
(written by generator/sandbox_table.py from generator/facts.json): the route, authentication,
parameter checks, documented answer and budgets of each. It imports nothing of the client's
tables, so that the sandbox stays an independent check of the client."""

from __future__ import annotations

import importlib.resources
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from .._limiters.base import RateLimit
from ._checks import Check, compile_check, required_message

__all__ = [
    "DOCUMENTED", "PATH_GROUPS", "PATH_SCOPES", "SERVICE_GROUP_LIMITS", "SERVICE_RATE_LIMITS",
    "Documented", "ParamRule", "Refusal", "template_of",
]

Auth = Literal["none", "signed", "form", "bearer", "jwt"]
Where = Literal["path", "query", "body"]
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


class Refusal(Exception):
    """An answer other than success, raised from inside an operation: ``body`` (JSON-able)
    with HTTP ``status``."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(status)
        self.status = status
        self.body = body


@dataclass(frozen=True, slots=True)
class ParamRule:
    """One documented parameter: where it travels, whether it is required, and its check."""

    name: str
    where: Where
    required: bool
    check: Check


@dataclass(frozen=True, slots=True)
class Documented:
    """One documented operation, as the sandbox serves it."""

    name: str
    method: str
    #: The documented path, with ``{name}`` for a parameter of the path.
    path: str
    auth: Auth
    tags: tuple[str, ...]
    #: The name of the endpoint's own budget, and of its group's.
    budget: str
    group: str
    rate_limit: RateLimit
    params: tuple[ParamRule, ...]
    #: The documented success status and answer (None: the answer has no body).
    status: int
    answer: Any
    #: The documented answer's bytes, made once.
    answer_bytes: bytes
    #: Where the answer repeats a parameter's value: per wire name, the places (the keys and
    #: indexes down to the object holding it, its key, and the type of the documented value)
    #: whose key is named like the parameter.
    echoed: Mapping[str, tuple[tuple[tuple[str | int, ...], str, type], ...]]
    #: A refusal of parameters: its status, and the body the per-field messages go into
    #: (under ``refusal_field``; None: the messages are the body).
    refusal_status: int
    refusal_body: Mapping[str, Any]
    refusal_field: str | None
    #: The documented error answers: (status, body made of the documented examples or None).
    errors: tuple[tuple[int | str, Any], ...]

    def check(self, params: Mapping[str, Any], text: frozenset[Where]) -> None:
        """Refuse ``params`` (by wire name) as the service does when one is missing or not of
        its documented type, enum or bounds; ``text`` names where values arrive as text."""
        problems: dict[str, list[str]] | None = None
        for rule in self.params:
            value = params.get(rule.name)
            if value is None or value == "":
                if rule.required:
                    problems = problems or {}
                    problems.setdefault(rule.name, []).append(required_message(rule.name))
                continue
            found = rule.check(rule.name, value, rule.where in text)
            if found:
                problems = problems or {}
                for field, message in found:
                    problems.setdefault(field, []).append(message)
        if problems:
            raise self.refused(problems)

    def refused(self, problems: dict[str, list[str]]) -> Refusal:
        """The refusal of the parameters named in ``problems``, in the operation's shape."""
        if self.refusal_field is None:
            return Refusal(self.refusal_status, problems)
        body = dict(self.refusal_body)
        body[self.refusal_field] = problems
        return Refusal(self.refusal_status, body)

    def error_body(self, status: int) -> Any:
        """The documented error answer of ``status`` (None when the documents give none)."""
        for documented, body in self.errors:
            if documented == status and body is not None:
                return _decode(_encode(body))
        return None

    def documented_answer(self, params: Mapping[str, Any]) -> Any:
        """The documented answer, repeating the request's values where its shape has them
        (an order's ``market``, a page's ``limit``) and they are of the documented type."""
        answer = None
        for name, places in self.echoed.items():
            value = params.get(name)
            if value is None:
                continue
            for trail, key, kind in places:
                if type(value) is not kind:
                    continue
                if answer is None:
                    answer = _decode(self.answer_bytes)  # a copy, made faster than a deep one
                holder = answer
                for step in trail:
                    holder = holder[step]
                holder[key] = value
        return self.answer if answer is None else answer


def _places(
    data: Any, names: frozenset[str], trail: tuple[str | int, ...] = ()
) -> Iterator[tuple[str, tuple[str | int, ...], str, type]]:
    """Each key of ``data`` (at any depth) named in ``names`` whose value is a string or a
    number: (the name, the trail down to its object, the key, the value's type)."""
    if isinstance(data, dict):
        for key, item in data.items():
            if key in names and isinstance(item, str | int) and not isinstance(item, bool):
                yield key, trail, key, type(item)
            else:
                yield from _places(item, names, (*trail, key))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield from _places(item, names, (*trail, index))


def _echoed(
    answer: Any, names: frozenset[str]
) -> dict[str, tuple[tuple[tuple[str | int, ...], str, type], ...]]:
    found: dict[str, list[tuple[tuple[str | int, ...], str, type]]] = {}
    for name, trail, key, kind in _places(answer, names):
        found.setdefault(name, []).append((trail, key, kind))
    return {name: tuple(places) for name, places in found.items()}


def _documented(row: dict[str, Any]) -> Documented:
    params = tuple(
        ParamRule(p["name"], p["in"], p["required"], compile_check(p)) for p in row["params"]
    )
    answer = row["answer"]
    body = None if answer["empty"] else answer["body"]
    limit = row["rate_limit"]
    refusal = row["refusal"]
    return Documented(
        name=row["name"], method=row["method"], path=row["path"], auth=row["auth"],
        tags=tuple(row["tags"]), budget=row["budget"], group=row["group"],
        rate_limit=RateLimit(limit["requests"], float(limit["seconds"])),
        params=params, status=answer["status"], answer=body,
        answer_bytes=b"" if answer["empty"] else _encode(body),
        echoed=_echoed(body, frozenset(p.name for p in params)),
        refusal_status=refusal["status"], refusal_body=refusal["body"],
        refusal_field=refusal["field"],
        errors=tuple((error["status"], error["body"]) for error in row["errors"]),
    )


def _load() -> tuple[tuple[Documented, ...], dict[str, RateLimit]]:
    raw = importlib.resources.files(__package__).joinpath("_documented.json").read_bytes()
    table = msgspec.json.decode(raw)
    groups = {name: RateLimit(limit["requests"], float(limit["seconds"]))
              for name, limit in table["groups"].items()}
    return tuple(_documented(row) for row in table["operations"]), groups


#: Every documented operation of the service (whitebit-exchange/docs, at the facts' commit).
DOCUMENTED: tuple[Documented, ...]
#: The groups' limits (whitebit-exchange/docs, api-reference/rate-limits.mdx), counted per IP
#: address like the endpoints' own: a request is refused when either its endpoint's window or
#: its group's is full.
SERVICE_GROUP_LIMITS: dict[str, RateLimit]
DOCUMENTED, SERVICE_GROUP_LIMITS = _load()
#: Every endpoint's own limit by its budget's name: the limit its page states, else the one the
#: rate-limit page (data/rate-limits.yaml) or its document states, else its group's figure.
#: Kept apart from the client's own table: a wrong figure there must not be agreed with here.
SERVICE_RATE_LIMITS: dict[str, RateLimit] = {op.budget: op.rate_limit for op in DOCUMENTED}
#: Every documented path (``{name}`` for a parameter of the path) with its endpoint's budget.
PATH_SCOPES: dict[str, str] = {op.path: op.budget for op in DOCUMENTED}
#: Every documented path with its group, by the service's prefixes.
PATH_GROUPS: dict[str, str] = {op.path: op.group for op in DOCUMENTED}

_TEMPLATES = [
    (re.compile(_PLACEHOLDER.sub(r"[^/]+", re.escape(op.path).replace(r"\{", "{")
                                 .replace(r"\}", "}"))), op.path)
    for op in DOCUMENTED if "{" in op.path
]


def template_of(path: str) -> str | None:
    """The documented path ``path`` is, or is an instance of (``/api/v4/public/orderbook/
    BTC_USDT`` is one of ``/api/v4/public/orderbook/{market}``); None for no operation's."""
    if path in PATH_SCOPES:
        return path
    for pattern, template in _TEMPLATES:
        if pattern.fullmatch(path):
            return template
    return None
