"""Naming the operation of every error raised during a call.

Three places name an error, none of them adding work to a call that succeeds:

- the request pipeline names every error of an exchange with the operation it runs (the
  coroutine operations are named like their wire operation);
- an argument error, raised by a coroutine operation's own checks before the pipeline starts,
  names the operation whose code is running (looked up on the stack once the error is made);
- an async-generator operation (``iter_...``) names every error raised while it runs, over
  the name of the wire operation it pages through.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import ParamSpec, TypeVar

from ._errors import TxcError
from ._frames import OPERATION_CODE

__all__ = ["name_operations", "named_iterator"]

T = TypeVar("T")
C = TypeVar("C", bound=type)
P = ParamSpec("P")

_NOT_OPERATIONS = frozenset({"close", "aclose"})


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
    """Class decorator: every public coroutine or async-generator method of ``cls`` (its
    operations) names itself on any [`TxcError`][txc_async.TxcError] raised while it runs.

    A coroutine operation is left as it is (a wrapper would be one more coroutine to resume at
    every wake-up of every call): its code is recorded, so that an argument error it raises
    names it, and every other error comes from the request pipeline, which names the wire
    operation of the same name. An async-generator operation is wrapped.
    """
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or name in _NOT_OPERATIONS:
            continue
        if inspect.iscoroutinefunction(member):
            OPERATION_CODE[member.__code__] = name
        elif inspect.isasyncgenfunction(member):
            setattr(cls, name, _generator_naming(name, member))
    return cls
