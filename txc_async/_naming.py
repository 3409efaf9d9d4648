"""Naming the operation of every error raised during a call.

Three places name an error, none of them adding work to a call that succeeds:

- the request pipeline names every error of an exchange with the operation it runs (the
  coroutine operations are named like their wire operation);
- an argument error is raised by the operation's declaration (``Operation.wire_params``), which
  names it;
- an async-generator operation (``iter_...``) names every error raised while it runs, over
  the name of the wire operation it pages through (this module).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import ParamSpec, TypeVar

from ._errors import TxcError

__all__ = ["name_operations", "named_iterator"]

T = TypeVar("T")
C = TypeVar("C", bound=type)
P = ParamSpec("P")


def _generator_naming(
    name: str, method: Callable[P, AsyncGenerator[T, None]]
) -> Callable[P, AsyncIterator[T]]:
    @functools.wraps(method)
    async def walk(*args: P.args, **kwargs: P.kwargs) -> AsyncIterator[T]:
        # Closed with the wrapper, so a caller that stops early ends the walk at once.
        async with contextlib.aclosing(method(*args, **kwargs)) as inner:
            try:
                async for item in inner:
                    yield item
            except TxcError as exc:
                exc._attach_operation(name, outer=True)
                raise

    return walk


def named_iterator(
    method: Callable[P, AsyncGenerator[T, None]],
) -> Callable[P, AsyncIterator[T]]:
    """Decorator of an async-generator operation outside the client (such as
    ``backfill_mining_rewards``): every [`TxcError`][txc_async.TxcError] raised while it runs, its
    argument errors included, names it."""
    return _generator_naming(method.__name__, method)


def name_operations(cls: C) -> C:
    """Class decorator: every public async-generator method of ``cls`` (its walks, ``iter_...``)
    names itself on any [`TxcError`][txc_async.TxcError] raised while it runs.

    A coroutine operation is left as it is (a wrapper would be one more coroutine to resume at
    every wake-up of every call): its declaration names its argument errors, and the request
    pipeline every other.
    """
    for name, member in list(vars(cls).items()):
        if not name.startswith("_") and inspect.isasyncgenfunction(member):
            setattr(cls, name, _generator_naming(name, member))
    return cls
