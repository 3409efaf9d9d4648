"""How an operation command runs: settings, then a dry run, or a confirmed write, or a read;
the client's refusals as usage errors naming the flag; a write's lost answer as exit status 3.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType

import txc_async

from ._arguments import PROG, UsageError
from ._dry_run import CapturedRequest, capture, describe, render
from ._invocation import Invocation
from ._operations import invocation_of
from ._profiles import ConfigError, Settings, load_settings, missing_credentials
from ._render import Output
from ._writes import Declined, Write, confirm, lost_answer, may_have_taken_effect, summarize


@dataclass
class RunState:
    """What the command is doing now, for the message of an interruption."""

    #: A write under way: interrupted now, it may have taken effect.
    pending: Write | None = None
    #: SIGTERMs received (``docker stop``, ``timeout``, ``kill``): the command ends as an
    #: interruption (Ctrl-C) does.
    terminated: int = 0


@contextlib.contextmanager
def ending_on_sigterm(state: RunState) -> Iterator[None]:
    """While the block runs, SIGTERM ends the command as asyncio ends it on SIGINT: the first
    cancels the running task (what was under way unwinds, and a write's interruption is
    reported as such), a second raises ``KeyboardInterrupt`` where the program stands."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        state.terminated += 1
        if state.terminated == 1 and task is not None and not task.done():
            task.cancel()
            loop.call_soon_threadsafe(lambda: None)  # wakes a loop waiting in select()
            return
        raise KeyboardInterrupt

    if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:  # asked to ignore it: it stays so
        yield
        return
    try:
        previous = signal.signal(signal.SIGTERM, on_sigterm)
    except ValueError:  # not the main thread (a test's): SIGTERM keeps its handler
        yield
        return
    try:
        yield
    finally:
        # None: a handler not set from Python, which cannot be put back; the default is.
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


async def run_operation(args: argparse.Namespace, state: RunState) -> int:
    """Run the operation command ``args.operation``; returns the exit status."""
    with ending_on_sigterm(state):
        return await _run_operation(args, state)


async def _run_operation(args: argparse.Namespace, state: RunState) -> int:
    settings = load_settings(args.profile)
    invocation = invocation_of(args, settings)
    command = invocation.write.command if invocation.write is not None else args.operation
    output = Output(json_mode=args.json)
    base_url = settings.base_url or txc_async.DEFAULT_BASE_URL
    if args.dry_run:
        request = await _first_request(invocation, base_url)
        if output.json_mode:
            output.json(describe(request, settings.api_key))
        else:
            print(render(request, settings.api_key), file=output.stream)
        for note in invocation.notes:
            print(note, file=sys.stderr)
        print("dry run: nothing was sent", file=sys.stderr)
        return 0
    if invocation.confirm and invocation.write is not None:
        problem = missing_credentials(settings, command)
        if problem is not None:
            raise problem
        # The client checks every flag before anything is asked.
        request = await _first_request(invocation, base_url)
        try:
            confirm(invocation.write, summarize(invocation.write, request, settings.api_key),
                    yes=args.yes, stdin=sys.stdin, stderr=sys.stderr)
        except Declined as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 0
    problem = missing_credentials(settings, command)
    if problem is not None and (settings.api_key or settings.api_secret):
        raise problem  # a key without its secret (or the reverse) serves no command
    for note in invocation.notes:
        print(note, file=sys.stderr)
    try:
        async with _client(settings, base_url) as client:
            return await _send(invocation, client, output, state)
    except txc_async.InvalidParameterError as exc:
        # A private operation refused by a client without a key, before anything was sent.
        problem = missing_credentials(settings, command)
        if exc.parameter == "api_key" and problem is not None:
            raise problem from None
        raise


def _client(settings: Settings, base_url: str) -> txc_async.Client:
    """The client of a real call. Its budgets and nonces are shared by every process of this
    machine by default (a SQLite file), so that scripts running commands one after another,
    or at once, stay within the limits and never reuse a nonce."""
    from txc_async._limiters.url import default_limiter_url, limiter_from_url

    try:
        limiter = limiter_from_url(settings.limiter or default_limiter_url())
    except ValueError as exc:
        problem = str(exc)
    else:
        return txc_async.Client(settings.api_key, settings.api_secret, base_url=base_url,
                                limiter=limiter)
    raise ConfigError(f"the limiter (TXC_LIMITER or a profile's limiter): {problem}")


async def _first_request(invocation: Invocation, base_url: str) -> CapturedRequest:
    """The request the command would send first, built by the client and not sent."""

    async def first(client: txc_async.Client) -> None:
        if invocation.walk is None:
            await invocation.call(client)
            return
        async for _ in invocation.walk(client):  # pragma: no branch - captured first
            break

    try:
        return await capture(base_url, first)
    except txc_async.InvalidParameterError as exc:
        raise _flag_error(exc, invocation) from None


def _flag_error(error: txc_async.InvalidParameterError, invocation: Invocation) -> Exception:
    """A refused parameter: a usage error naming its flag when a flag gave it, else as is."""
    if error.parameter in invocation.parameters:
        return UsageError(f"--{error.parameter.replace('_', '-')}: {error.rule}")
    return error


async def _send(
    invocation: Invocation, client: txc_async.Client, output: Output, state: RunState
) -> int:
    # Pending until the call ends: an interruption (a cancellation) leaves it set, so that the
    # message says the write may have taken effect.
    state.pending = invocation.write
    try:
        if invocation.walk is not None:
            status = await _walk(invocation, client, output)
        else:
            status = invocation.show(output, await _call(invocation, client))
    except txc_async.InvalidParameterError as exc:
        state.pending = None
        raise _flag_error(exc, invocation) from None
    except Exception:
        state.pending = None
        raise
    state.pending = None
    return status


async def _call(invocation: Invocation, client: txc_async.Client) -> object:
    """The operation's result; its refusals and lost answers as the command line names them."""
    try:
        return await invocation.call(client)
    except txc_async.TxcError as exc:
        if invocation.write is not None and may_have_taken_effect(exc):
            raise lost_answer(invocation.write, exc) from None
        raise


async def _walk(invocation: Invocation, client: txc_async.Client, output: Output) -> int:
    """``--all``: every record of every page, as JSON lines or one table."""
    assert invocation.walk is not None
    records = invocation.walk(client)
    if output.json_mode:
        count = 0
        async for record in records:
            output.json(record)
            count += 1
    else:
        count = output.records([record async for record in records], invocation.title)
    print(f"{count:,} records", file=sys.stderr)
    return 0
