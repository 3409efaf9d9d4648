"""A parameter's value as typed on the command line, read by its declared kind.

The same reading serves ``txc-async call NAME key=value`` and the flags of the generated
commands (``--amount 0.01``): an amount stays the text typed (the client turns it into an exact
decimal; a float never appears), a whole number is an ``int``, a switch is ``true`` or
``false``, a list or a record is JSON (its numbers read as ``Decimal``), a moment is a day, an
ISO datetime with a zone, or Unix seconds. What the value must further be (a range, a pattern,
a record's fields) is the operation's own check, run before anything is sent.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from txc_async._operations import Param

from . import _arguments as types

__all__ = [
    "END_NAMES",
    "PARAM_DEST",
    "START_NAMES",
    "choice_labels",
    "choice_value",
    "flag_of",
    "read_value",
    "value_reader",
]

#: Parameters that end a range of time: a bare day given for one means that day's last second.
END_NAMES = frozenset({"end", "end_date", "date_to", "to"})
#: Parameters that start one: a bare day means its first second.
START_NAMES = frozenset({"start", "start_date", "date_from", "from_"})

#: The prefix of a generated command's parameters in the parsed namespace (so that no
#: parameter can take the place of --json, --yes or another flag of the command line).
PARAM_DEST = "param:"

_SWITCHES = {"true": True, "false": False}


def flag_of(param: Param) -> str:
    """A parameter's flag: ``--kebab-case`` of its name (``from_`` is ``--from``)."""
    return "--" + param.name.rstrip("_").replace("_", "-")


def _named_by_members(param: Param) -> bool:
    # Values that are not words (an investment's status is 1 or 2) go by their members' names.
    return param.enum is not None and not all(isinstance(v, str) for v in param.choices)


def choice_labels(param: Param) -> tuple[str, ...]:
    """What the command line takes for a parameter of fixed values: the values, or the
    lowercase names of the enum's members when the values are not words (an investment's
    status: ``active``, ``closed``)."""
    if param.enum is not None and _named_by_members(param):
        return tuple(member.name.lower() for member in param.enum)
    return tuple(str(value) for value in param.choices)


def choice_value(param: Param, label: str) -> object:
    """What the client takes for ``label``, one of `choice_labels`: the enum's member, or the
    value itself (a number where the values are numbers)."""
    if param.enum is not None and _named_by_members(param):
        return param.enum[label.upper()]
    for value in param.choices:
        if str(value) == label:
            return value
    return label


def _choice(param: Param) -> Callable[[str], object]:
    labels = choice_labels(param)

    def read(text: str) -> object:
        if text not in labels:
            raise argparse.ArgumentTypeError(
                f"must be one of {', '.join(labels)}, not {text!r}")
        return choice_value(param, text)

    return read


def _switch(text: str) -> bool:
    try:
        return _SWITCHES[text.lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(f"must be true or false, not {text!r}") from None


def _json_of(
    shape: type[list[Any]] | type[dict[str, Any]], example: str
) -> Callable[[str], object]:
    noun = "a JSON list" if shape is list else "a JSON object"

    def read(text: str) -> object:
        try:
            value = json.loads(text, parse_float=Decimal)
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError(
                f"must be {noun}, e.g. {example} ({exc.msg} at character {exc.pos})") from None
        if not isinstance(value, shape):
            raise argparse.ArgumentTypeError(f"must be {noun}, e.g. {example}")
        return value

    return read


def _text(text: str) -> str:
    return text


#: How each kind is read, when the parameter's name does not say more.
_KINDS: Mapping[str, Callable[[str], object]] = {
    "text": _text,
    # Kept as typed: the client's check reads it as an exact decimal, never a float.
    "decimal": _text,
    "integer": types.whole_number,
    "boolean": _switch,
    "list": _json_of(list, '["a","b"] or [{"field":"value"}]'),
    "object": _json_of(dict, '{"field":"value"}'),
}


def value_reader(param: Param) -> Callable[[str], object]:
    """How a value of ``param`` is read from one word; raises ``argparse.ArgumentTypeError``
    saying the rule (argparse names the flag)."""
    if param.choices and param.kind != "list":
        return _choice(param)
    if param.kind == "time":
        return types.end_time if param.name in END_NAMES else types.start_time
    return _KINDS.get(param.kind, _text)


def read_value(param: Param, text: str) -> object:
    """``text`` read as a value of ``param``; raises ``ValueError`` with the rule."""
    try:
        return value_reader(param)(text)
    except argparse.ArgumentTypeError as exc:
        raise ValueError(str(exc)) from None
