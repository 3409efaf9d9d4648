"""Exact decimal arithmetic of the exchange: one context wide enough that no amount, product or
sum it forms is ever rounded, and the service's way of writing amounts."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from decimal import ROUND_DOWN, Context, Decimal, Inexact, InvalidOperation, localcontext
from typing import Any, ParamSpec, TypeVar

__all__ = ["EXACT", "ZERO", "divide_down", "divide_up", "exact", "parse_decimal", "places",
           "plain", "step", "truncate"]

#: 80 digits: amounts are read with at most 33 digits each, so every product and sum the
#: exchange forms fits; ``Inexact`` is trapped, so a rounding that slipped in raises instead.
EXACT = Context(prec=80, traps=[InvalidOperation, Inexact])
ZERO = Decimal(0)
_NUMBER = re.compile(r"[0-9]{1,15}(\.[0-9]{1,18})?")

P = ParamSpec("P")
R = TypeVar("R")


def exact(function: Callable[P, R]) -> Callable[P, R]:
    """Run ``function`` under the exact context (the caller's context is left as it was)."""

    @functools.wraps(function)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with localcontext(EXACT):
            return function(*args, **kwargs)

    return run


def parse_decimal(value: Any) -> Decimal | None:
    """``value`` as the service reads an amount, "a numeric string or number" (at most 15 digits
    before the point and 18 after), or None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value) if 0 <= value < 10**15 else None
    if isinstance(value, str) and _NUMBER.fullmatch(value):
        return Decimal(value)
    return None


def places(amount: Decimal) -> int:
    """How many decimal places ``amount`` needs (trailing zeros do not count)."""
    exponent = amount.normalize().as_tuple().exponent
    assert isinstance(exponent, int)
    return max(0, -exponent)


def step(precision: int) -> Decimal:
    """The smallest amount with ``precision`` decimal places."""
    return Decimal(1).scaleb(-precision)


def truncate(amount: Decimal, precision: int) -> Decimal:
    """``amount`` cut (not rounded) to ``precision`` decimal places."""
    return amount.quantize(step(precision), rounding=ROUND_DOWN, context=_WIDE)


_WIDE = Context(prec=80)


def plain(amount: Decimal) -> str:
    """An amount as the service writes one: plain notation, no trailing zeros."""
    text = format(amount, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


_DOWN = Context(prec=80, rounding=ROUND_DOWN)


def divide_down(dividend: Decimal, divisor: Decimal, precision: int) -> Decimal:
    """``dividend / divisor`` cut to ``precision`` decimal places (never more than it is)."""
    return _DOWN.divide(dividend, divisor).quantize(step(precision), rounding=ROUND_DOWN,
                                                     context=_WIDE)


def divide_up(dividend: Decimal, divisor: Decimal, precision: int) -> Decimal:
    """``dividend / divisor`` raised to the next multiple of ``step(precision)`` when it is not
    one (never less than it is)."""
    down = divide_down(dividend, divisor, precision)
    return down if _WIDE.multiply(down, divisor) == dividend else down + step(precision)
