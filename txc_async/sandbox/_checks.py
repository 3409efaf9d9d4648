"""The sandbox's checks of request parameters, compiled once from its table of the documented
operations: each answers the per-field messages of a refusal (Laravel's wording, which the
service's refusals show) or nothing for a valid value."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Check", "Problems", "compile_check", "required_message"]

#: The refusals of one value: (field, message) pairs; None when the value is valid.
Problems = list[tuple[str, str]] | None
#: A compiled check: ``check(field, value, text)``, ``text`` when the value arrived as text (a
#: path, a query string or a form), where every value is a string.
Check = Callable[[str, Any, bool], Problems]

_DECIMAL = re.compile(r"[0-9]+(\.[0-9]+)?")
_INTEGER = re.compile(r"-?[0-9]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_TRUE_FALSE = {"true": True, "false": False, "1": True, "0": False}


def required_message(field: str) -> str:
    return f"The {field} field is required."


def _one(field: str, message: str) -> Problems:
    return [(field, message)]


def compile_check(spec: Mapping[str, Any]) -> Check:
    """The check of one value of the table's parameter ``spec`` (its type, enum and bounds)."""
    kind = spec["type"]
    typed = _TYPES[kind](spec)
    enum = spec.get("enum")
    nullable = bool(spec.get("nullable"))
    if enum is None:
        inner = typed
    else:
        allowed = frozenset(enum)
        spelt = frozenset(str(value).lower() if isinstance(value, bool) else str(value)
                          for value in enum)

        def inner(field: str, value: Any, text: bool) -> Problems:
            problems = typed(field, value, text)
            if problems is not None:
                return problems
            known = value in spelt if text else (
                not isinstance(value, bool) or kind == "boolean") and value in allowed
            return None if known else _one(field, f"The selected {field} is invalid.")

    if not nullable:
        return inner

    def check(field: str, value: Any, text: bool) -> Problems:
        return None if value is None else inner(field, value, text)

    return check


def _string(spec: Mapping[str, Any]) -> Check:
    low, high = spec.get("min_length"), spec.get("max_length")
    pattern = re.compile(spec["pattern"]) if "pattern" in spec else None
    uuid = spec.get("format") == "uuid"

    def check(field: str, value: Any, text: bool) -> Problems:
        if not isinstance(value, str):
            return _one(field, f"The {field} must be a string.")
        if low is not None and len(value) < low:
            return _one(field, f"The {field} must be at least {low} characters.")
        if high is not None and len(value) > high:
            return _one(field, f"The {field} may not be greater than {high} characters.")
        if pattern is not None and pattern.search(value) is None:
            return _one(field, f"The {field} format is invalid.")
        if uuid and _UUID.fullmatch(value) is None:
            return _one(field, f"The {field} must be a valid UUID.")
        return None

    return check


def _bounded(spec: Mapping[str, Any], field: str, value: int | float) -> Problems:
    low, high = spec.get("minimum"), spec.get("maximum")
    if low is not None and value < low:
        return _one(field, f"The {field} must be at least {low}.")
    if high is not None and value > high:
        return _one(field, f"The {field} may not be greater than {high}.")
    return None


def _integer(spec: Mapping[str, Any]) -> Check:
    def check(field: str, value: Any, text: bool) -> Problems:
        if text and isinstance(value, str) and _INTEGER.fullmatch(value):
            return _bounded(spec, field, int(value))
        if text or isinstance(value, bool) or not isinstance(value, int):
            return _one(field, f"The {field} must be an integer.")
        return _bounded(spec, field, value)

    return check


def _number(spec: Mapping[str, Any]) -> Check:
    def check(field: str, value: Any, text: bool) -> Problems:
        if isinstance(value, str) and _DECIMAL.fullmatch(value.removeprefix("-")):
            return _bounded(spec, field, float(value))
        if text or isinstance(value, bool) or not isinstance(value, int | float):
            return _one(field, f"The {field} must be a number.")
        return _bounded(spec, field, value)

    return check


def _decimal(spec: Mapping[str, Any]) -> Check:
    # An amount is a number in a string, as every documented example spells one.
    def check(field: str, value: Any, text: bool) -> Problems:
        if not isinstance(value, str) or _DECIMAL.fullmatch(value) is None:
            return _one(field, f"The {field} must be a number.")
        return None

    return check


def _boolean(spec: Mapping[str, Any]) -> Check:
    def check(field: str, value: Any, text: bool) -> Problems:
        if (value in _TRUE_FALSE) if text else isinstance(value, bool):
            return None
        return _one(field, f"The {field} field must be true or false.")

    return check


def _array(spec: Mapping[str, Any]) -> Check:
    low, high = spec.get("min_items"), spec.get("max_items")
    item = compile_check(spec["items"]) if "items" in spec else None

    def check(field: str, value: Any, text: bool) -> Problems:
        if text or not isinstance(value, list):
            return _one(field, f"The {field} must be an array.")
        if low is not None and len(value) < low:
            return _one(field, f"The {field} must have at least {low} items.")
        if high is not None and len(value) > high:
            return _one(field, f"The {field} may not have more than {high} items.")
        if item is None:
            return None
        problems: list[tuple[str, str]] = []
        for index, element in enumerate(value):
            problems += item(f"{field}.{index}", element, False) or ()
        return problems or None

    return check


def _object(spec: Mapping[str, Any]) -> Check:
    properties = {name: compile_check(sub) for name, sub in spec.get("properties", {}).items()}
    required = tuple(spec.get("required_properties", ()))

    def check(field: str, value: Any, text: bool) -> Problems:
        if text or not isinstance(value, dict):
            return _one(field, f"The {field} must be an object.")
        problems: list[tuple[str, str]] = []
        for name in required:
            if value.get(name) in (None, ""):
                problems.append((f"{field}.{name}", required_message(f"{field}.{name}")))
        for name, sub in properties.items():
            if name in value and value[name] is not None:
                problems += sub(f"{field}.{name}", value[name], False) or ()
        return problems or None

    return check


def _any(spec: Mapping[str, Any]) -> Check:
    def check(field: str, value: Any, text: bool) -> Problems:
        return None

    return check


_TYPES: dict[str, Callable[[Mapping[str, Any]], Check]] = {
    "string": _string, "decimal": _decimal, "integer": _integer, "number": _number,
    "boolean": _boolean, "array": _array, "object": _object, "any": _any,
}
