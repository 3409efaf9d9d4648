"""What an operation's declaration holds: where and how it is sent, its limit, its parameters and
the rules across them; and the one method that turns a caller's keywords into the wire's
parameters, checking each."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from enum import Enum
from typing import Any, Generic, Literal, TypeVar, cast

from .._errors import InvalidParameterError
from .._limiters.base import RateLimit
from .._validate import Check

__all__ = ["Auth", "Excludes", "Kind", "NotAfter", "Operation", "Param", "Rule", "group_of"]

R = TypeVar("R")
T = TypeVar("T")

#: What a parameter holds, as the command line and the documentation read it.
Kind = Literal["text", "integer", "decimal", "time", "boolean", "choice", "list", "object"]
#: A rule across parameters, given the wire's parameters once each is checked.
_BoundRule = Callable[[Mapping[str, Any]], None]


class Auth(Enum):
    """How a request authenticates."""

    NONE = "none"  # public GET
    SIGNED = "signed"  # JSON body signed with the API key and secret
    FORM = "form"  # form body carrying its own credentials (OAuth)
    BEARER = "bearer"  # an OAuth access token or a JWT as a bearer header (not sent yet)


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of an operation.

    ``name`` is the caller's keyword (snake_case; the command line's flag is ``--kebab-case`` of
    it), ``wire`` the name or names it is sent under (its own name when none is given), ``check``
    turns the caller's value into the value sent or refuses it. ``help`` says in one line what
    it is, and for an optional one what leaving it out means ("(default: ...)"). ``choices``
    lists the values of a fixed set, ``enum`` the enum whose members stand for them. A
    ``secret`` value is masked in any error that quotes what was sent, and never taken from a
    command line's flags. ``metavar`` is what the command line's usage shows for the value
    (default: after its kind).
    """

    name: str
    _: KW_ONLY
    kind: Kind
    check: Check
    help: str
    wire: tuple[str, ...] = ()
    required: bool = False
    choices: tuple[str, ...] | tuple[int, ...] = ()
    enum: type[Enum] | None = None
    secret: bool = False
    metavar: str = ""

    def __post_init__(self) -> None:
        if not self.wire:
            object.__setattr__(self, "wire", (self.name,))


@dataclass(frozen=True, slots=True)
class NotAfter:
    """A rule across two parameters: ``earlier`` may not come after ``later`` when both are
    given (``start`` and ``end`` of a range)."""

    earlier: str
    later: str

    def bind(self, wire_of: Mapping[str, str]) -> _BoundRule:
        """The rule over the wire's parameters (``wire_of``: each parameter's wire name)."""
        first, last = wire_of[self.earlier], wire_of[self.later]
        name, rule = self.earlier, f"must not be after {self.later}"

        def check(wire: Mapping[str, Any]) -> None:
            low, high = wire.get(first), wire.get(last)
            if low is not None and high is not None and low > high:
                raise InvalidParameterError(name, rule)

        return check


@dataclass(frozen=True, slots=True)
class Excludes:
    """A rule across parameters: ``param`` given as True refuses every one of ``others``;
    ``reason`` says why (the service's refusal)."""

    param: str
    others: tuple[str, ...]
    reason: str

    def bind(self, wire_of: Mapping[str, str]) -> _BoundRule:
        """The rule over the wire's parameters (``wire_of``: each parameter's wire name)."""
        key, keys = wire_of[self.param], tuple(wire_of[other] for other in self.others)
        name = self.param
        rule = f"cannot be combined with {' or '.join(self.others)} ({self.reason})"

        def check(wire: Mapping[str, Any]) -> None:
            if wire.get(key) is True and any(other in wire for other in keys):
                raise InvalidParameterError(name, rule)

        return check


Rule = NotAfter | Excludes


def group_of(path: str) -> str:
    """The service's rate-limit group of a path (whitebit-exchange/docs,
    api-reference/rate-limits.mdx and data/rate-limits.yaml, ``scopeLimits``; counted per IP
    address): ``public_group`` for ``/api/v4/public/*`` (20,000 per 10 s: the fourteen public
    operations' own limits add up to more), ``main_account`` for ``/api/v4/main-account/*``,
    ``trade_account`` for ``/api/v4/trade-account/*``, and ``default`` for every other path."""
    if path.startswith("/api/v4/main-account/"):
        return "main_account"
    if path.startswith("/api/v4/trade-account/"):
        return "trade_account"
    if path.startswith("/api/v4/public/"):
        return "public_group"
    return "default"


#: Per parameter, what turning a keyword into the wire needs: its check, its wire name and the
#: further names it is also sent under.
_Entry = tuple[Check, str, tuple[str, ...]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Operation(Generic[R]):
    """One operation of the API, declared once: everything else (the client's method, its rate
    limit, the command line's flags, the sandbox's tables) derives from it.

    ``name`` is the operation's name (the client method's), ``method`` and ``path`` where it is
    sent, ``auth`` how it authenticates, ``retry_safe`` whether sending it again after it may
    have reached the server cannot do harm (False for a write), ``decode`` turns a success
    answer's body into the result. ``scope`` names its rate-limit budget and ``rate_limit`` is
    the limit the service documents for it; ``group`` is the service's group it also counts
    against (from its path). ``tag`` is the documentation's group of
    operations (``"main_account"``, ``"mining"``, ...), ``summary`` says what it does in one
    line. ``params`` are its parameters, ``rules`` the rules across them, and
    ``secret_params`` the wire names of the secret ones. ``deprecated`` says, citing the
    service's documentation, when and why the service stops serving it (a ``DeprecationWarning``
    when it is called). ``unsendable`` says why this version
    cannot send it as the service expects (empty when it can): a call is then refused before
    anything is sent.

    [`wire_params`][txc_async.Operation.wire_params] turns a caller's keywords into what is
    sent; [`with_decoder`][txc_async.Operation.with_decoder] makes a variant that decodes its
    answers otherwise.
    """

    name: str
    method: str
    path: str
    auth: Auth
    retry_safe: bool
    decode: Callable[[bytes], R]
    scope: str
    rate_limit: RateLimit
    tag: str
    summary: str
    params: tuple[Param, ...] = ()
    rules: tuple[Rule, ...] = ()
    unsendable: str = ""
    deprecated: str = ""
    group: str = field(init=False)
    secret_params: tuple[str, ...] = field(init=False)
    _entries: dict[str, _Entry] = field(init=False, repr=False, compare=False)
    _required: tuple[Param, ...] = field(init=False, repr=False, compare=False)
    _rules: tuple[_BoundRule, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [param.name for param in self.params]
        if len(set(names)) < len(names):
            raise ValueError(f"{self.name}: a parameter is declared twice: {names}")
        wire_of = {param.name: param.wire[0] for param in self.params}
        derived = {
            "group": group_of(self.path),
            "secret_params": tuple(
                wire for param in self.params if param.secret for wire in param.wire
            ),
            "_entries": {
                param.name: (param.check, param.wire[0], param.wire[1:]) for param in self.params
            },
            "_required": tuple(param for param in self.params if param.required),
            "_rules": tuple(rule.bind(wire_of) for rule in self.rules),
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    def wire_params(self, given: Mapping[str, object]) -> dict[str, Any]:
        """The parameters to send for the caller's keywords ``given`` (a keyword given as None
        is left out): the required ones enforced first, then each checked and put under its wire
        name, then the rules across them applied.

        Raises [`InvalidParameterError`][txc_async.InvalidParameterError] naming the parameter,
        its message beginning with this operation's name.
        """
        wire: dict[str, Any] = {}
        entries = self._entries
        try:
            if self.unsendable:
                raise InvalidParameterError(
                    "operation", f"cannot be sent by this version: {self.unsendable}"
                )
            if self._required:
                self._require(given)
            for name, value in given.items():
                if value is None:
                    continue
                try:
                    check, key, also = entries[name]
                except KeyError:
                    raise self._unknown(name) from None
                wire[key] = value = check(name, value)
                if also:
                    for other in also:
                        wire[other] = value
            if self._rules:
                for rule in self._rules:
                    rule(wire)
        except InvalidParameterError as exc:
            exc._attach_operation(self.name)
            raise
        return wire

    def with_decoder(self, decode: Callable[[bytes], T]) -> Operation[T]:
        """This operation with its answers decoded by ``decode`` instead: a variant, the same
        wire operation (sent, limited and named alike), e.g. ``op.with_decoder(bytes)`` for
        the answer's body as it came."""
        # Another result type than this operation's: replaced on the operation of any result.
        same: Operation[Any] = self
        return cast("Operation[T]", dataclasses.replace(same, decode=decode))

    def _unknown(self, name: str) -> InvalidParameterError:
        known = ", ".join(param.name for param in self.params) or "none"
        return InvalidParameterError(name, f"is not a parameter of {self.name} (its parameters: "
                                     f"{known})")

    def _require(self, given: Mapping[str, object]) -> None:
        for param in self._required:
            if given.get(param.name) is None:
                raise InvalidParameterError(param.name, f"is required: {param.help}")
