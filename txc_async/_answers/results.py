"""Reads success answers into the typed models: msgspec's cached strict decoder first (the fast
path), then a tolerant reading of what the API's documentation leaves open. A non-finite number
never becomes a value either way: the answer is refused with
[`AnswerFormatError`][txc_async.AnswerFormatError].

Tolerant means: a field may come in either of its spellings (a struct's ``wire_aliases``), each
field read in whichever spelling it comes, and in both when one is empty or null or both say the
same (two that differ refuse the answer);
``""``, ``null`` or a missing value where a decimal or an optional object is documented reads as
None; a value an enum does not list reads as the plain wire value; ``[]``
reads as an empty map; unknown fields are ignored; an integer written as a string of digits, or
as a number with nothing after its point, reads as that integer. Decimals, on either path, are
read as Python's ``Decimal`` reads text: a JSON number or string, with surrounding whitespace,
underscores between digits and the digits of other scripts (``" 1.5 "``, ``"1_000"``) read as
the number they spell; a value no ``Decimal`` can hold makes the answer unreadable. Nothing else
is guessed.
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal, InvalidOperation
from itertools import chain
from operator import attrgetter
from typing import Any, Generic, TypeVar

import msgspec
import msgspec.inspect as mi

from .._errors import AnswerFormatError

__all__ = ["AnswerDecoder", "Unreadable", "has_duplicate_keys"]

R = TypeVar("R")
W = TypeVar("W")

_STRICT_FAILURES = (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError,
                    RecursionError)



class _Beyond:
    """A JSON number whose exponent no ``Decimal`` can hold (``1e999999999999999999999``): an
    unreadable value where a number is documented, and no reason to lose the rest of the answer
    (a token answer's new refresh token) where none is."""

    __slots__ = ()


_BEYOND = _Beyond()


def _decimal_or_beyond(text: str) -> Decimal | _Beyond:
    try:
        return Decimal(text)
    except ArithmeticError:
        return _BEYOND


_decode_json = msgspec.json.Decoder(float_hook=_decimal_or_beyond).decode

_Check = Callable[[Iterable[Any]], bool]


#: The largest answer scanned for a non-finite amount's spelling rather than walked: the scan
#: costs about 3.5 ns a byte, the walk about as much per amount, so a small answer (an order,
#: an order book: 2 µs to scan, 12 µs to walk) is scanned and a page of records (37 KB of 100
#: investments: 134 µs to scan, under 100 µs to walk) walked.
_SCAN_AT_MOST = 4096
#: ASCII upper case to lower case, for `bytes.translate`.
_FOLD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")


def _spells_no_non_finite(body: bytes) -> bool:
    """Whether ``body`` spells no non-finite Decimal: none of its spellings (``NaN``, ``sNaN``,
    ``Inf``, ``Infinity``: ASCII letters in any case, which ``Decimal`` may split with
    underscores, ``N_aN``) and no escape that could spell one (``\\u004eaN``). Such an
    answer holds only finite amounts, and is not walked to check them (two scans of the bytes
    in C, where the walk visits every amount)."""
    if b"\\u" in body:
        return False
    folded = body.translate(_FOLD, b"_")  # lower case, underscores out: one pass in C
    return b"nan" not in folded and b"inf" not in folded


_is_finite = Decimal.is_finite


def _finite_check(info: mi.Type) -> _Check | None:
    """A function telling whether every Decimal in some values of type ``info`` is finite (None
    when the type holds no Decimal). Built once per answer type from C-level iteration: the
    strict decoding is msgspec's, and checking its result must stay cheap."""
    if isinstance(info, mi.DecimalType):
        return lambda values: all(map(_is_finite, values))
    if isinstance(info, mi.UnionType):
        members = [t for t in info.types if not isinstance(t, mi.NoneType)]
        if len(members) != 1:
            return _finite_check_of_kinds(members)
        inner = _finite_check(members[0])
        if inner is None:
            return None
        # None and Decimal zero are dropped: both are finite; NaN and infinities are truthy.
        return lambda values: inner(filter(None, values))
    if isinstance(info, mi.ListType):
        item = _finite_check(info.item_type)
        if item is None:
            return None
        return lambda values: item(chain.from_iterable(values))
    if isinstance(info, mi.DictType):
        entry = _finite_check(info.value_type)
        if entry is None:
            return None
        return lambda values: entry(chain.from_iterable(map(dict.values, values)))
    if isinstance(info, mi.StructType):
        names: list[str] = []
        nested: list[tuple[Callable[[Any], Any], _Check]] = []
        for field in info.fields:
            if _is_decimal(field.type):
                names.append(field.name)
                continue
            check = _finite_check(field.type)
            if check is not None:
                nested.append((attrgetter(field.name), check))
        if not names and not nested:
            return None
        # Every Decimal field of every value in one C-level pass: ``attrgetter`` of several
        # names gives a tuple; None (null in the answer) and zero are dropped, both finite.
        get = attrgetter(*names) if names else None
        many_names = len(names) > 1

        def each_field(values: Iterable[Any]) -> bool:
            many = values if isinstance(values, list) else list(values)
            if get is not None:
                found = chain.from_iterable(map(get, many)) if many_names else map(get, many)
                if not all(map(_is_finite, filter(None, found))):
                    return False
            return all(check(map(field, many)) for field, check in nested)

        return each_field
    return None


def _kind_of(info: mi.Type) -> type | None:
    """The Python type a value of ``info`` decodes to, for a union told apart by kind."""
    if isinstance(info, mi.StructType):
        return info.cls
    return {mi.ListType: list, mi.DictType: dict, mi.DecimalType: Decimal}.get(type(info))


def _finite_check_of_kinds(members: list[mi.Type]) -> _Check | None:
    """`_finite_check` of a union of members of different kinds (a struct or a list, as msgspec
    tells them apart): each value is checked by the member of its kind."""
    checks = [(kind, check) for member in members
              if (kind := _kind_of(member)) is not None
              and (check := _finite_check(member)) is not None]
    if not checks:
        return None

    def by_kind(values: Iterable[Any]) -> bool:
        for value in values:
            for kind, check in checks:
                if isinstance(value, kind):
                    if not check([value]):
                        return False
                    break
        return True

    return by_kind


def _finite_value(info: mi.Type) -> Callable[[Any], bool] | None:
    """Like `_finite_check`, for one value of type ``info`` (an answer or a result)."""
    if isinstance(info, mi.DictType) and isinstance(info.value_type, mi.DecimalType):
        # A map of amounts (the balance): its values, checked at once.
        return lambda value: all(map(_is_finite, value.values()))
    check = _finite_check(info)
    if check is None:
        return None
    return lambda value: check((value,))


def _is_decimal(info: mi.Type) -> bool:
    """A decimal field: ``Decimal`` or ``Decimal | None``."""
    if isinstance(info, mi.UnionType):
        return any(isinstance(t, mi.DecimalType) for t in info.types)
    return isinstance(info, mi.DecimalType)


class Unreadable(Exception):
    """Raised by an operation's result function: the answer fits its type, but what it says
    cannot be read (the message says why). The decoder turns it into
    [`AnswerFormatError`][txc_async.AnswerFormatError]."""


class _Twice(Exception):
    pass


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Twice
    return obj


def has_duplicate_keys(body: bytes) -> bool | None:
    """Whether an object of the JSON ``body`` names a key twice (msgspec, like most JSON readers,
    keeps the last one silently); None when that cannot be told (nested too deeply for Python's
    reader, or text it refuses where msgspec skipped it). One field in its two spellings is no
    key named twice: the careful reading compares them (`_spelled_value`)."""
    try:
        # Read as msgspec reads it: a byte order mark, control characters in strings and bytes
        # that are not UTF-8 (inside strings it skips) are no reason to stop.
        json.loads(body.decode("utf-8-sig", "surrogateescape"), object_pairs_hook=_unique,
                   parse_int=str, parse_float=str, parse_constant=str, strict=False)
    except _Twice:
        return True
    except (ValueError, RecursionError):
        return None
    return False


def _always(body: bytes, answer: object) -> bool:
    return True


class _Unfit(Exception):
    """Internal: the answer does not fit the type at ``path``."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(f"{what} at {path}")


class AnswerDecoder(Generic[W, R]):
    """Decodes one operation's success answer (type ``wire``) and turns it into its result.

    ``write`` marks operations that change something (an
    [`AnswerFormatError`][txc_async.AnswerFormatError] then says that the server accepted the
    request); ``secret_answer`` marks answers that carry tokens, of which an error keeps only the
    shape.

    An answer that names a key twice in one object says two things: it is refused. A write's
    answer (small, and it says what the server did) is looked at for that every time; another
    answer when ``twice(body, answer)``, a cheap test that is true whenever a key may be named
    twice (the balance: ``"main_balance"`` in the text other than once per asset read, or an
    escape that could spell a key).
    """

    def __init__(
        self,
        wire: type[W],
        result: Callable[[W], R],
        *,
        write: bool,
        secret_answer: bool = False,
        checked_result: type | None = None,
        twice: Callable[[bytes, W], bool] | None = None,
    ) -> None:
        self._strict: Callable[[bytes], W] = msgspec.json.Decoder(wire).decode
        self._info = mi.type_info(wire)
        self._result = result
        self.write = write
        self._secret_answer = secret_answer
        # With ``checked_result`` (the result's type), the result is checked instead of the wire
        # answer: cheaper when the result is a plain container of decimals.
        self._check_result = checked_result is not None
        self._finite = _finite_value(
            mi.type_info(checked_result) if checked_result is not None else self._info
        )
        self._twice: Callable[[bytes, W], bool] | None = _always if write else twice
        # An answer whose fields have second spellings (``CollateralOrder.wire_aliases``) is
        # read the careful way only: the strict decoder knows one spelling of each field and
        # would drop, without a word, a field written in the other (``orderId`` beside
        # ``deal_money``).
        self._spelled_twice = bool(getattr(wire, "wire_aliases", None))

    def __call__(self, body: bytes) -> R:
        if self._spelled_twice:
            return self._read(body, self.tolerant(body))
        try:
            answer = self._strict(body)
        except _STRICT_FAILURES:
            return self._read(body, self.tolerant(body))
        finite = self._finite
        if finite is None or (len(body) <= _SCAN_AT_MOST and _spells_no_non_finite(body)):
            return self._read(body, answer)
        if self._check_result:
            result = self._read(body, answer)
            if finite(result):
                return result
        elif finite(answer):
            return self._read(body, answer)
        # The careful reading names the first non-finite number and refuses the answer.
        return self._read(body, self.tolerant(body))

    def _read(self, body: bytes, answer: W) -> R:
        """The result of a decoded ``answer``, unless it cannot be read."""
        twice = self._twice
        reason: str
        duplicates = (
            twice is not None and twice(body, answer) and has_duplicate_keys(body)
        )
        if duplicates is None:
            # What cannot be checked is not taken on trust.
            reason = "too deeply nested, or not text, to check that no key is named twice"
        elif duplicates:
            reason = "a key named twice in one object"
        else:
            try:
                return self._result(answer)
            except Unreadable as exc:
                reason = str(exc)
        raise AnswerFormatError(reason, body=self.kept_body(body), write=self.write)

    def tolerant(self, body: bytes) -> W:
        """The careful reading of ``body``; raises
        [`AnswerFormatError`][txc_async.AnswerFormatError] when it does not fit."""
        reason: str
        try:
            data = _decode_json(body)
        except _STRICT_FAILURES:
            reason = "not JSON"
        else:
            try:
                value: W = _convert(self._info, data, "$")
                return value
            except _Unfit as unfit:
                reason = str(unfit)
            except RecursionError:
                reason = "nested too deeply"
        raise AnswerFormatError(reason, body=self.kept_body(body), write=self.write)

    def kept_body(self, body: bytes) -> bytes:
        """What an error may keep of ``body``: all of it, or for an answer that carries tokens
        its shape with every string masked (nothing when it is not JSON)."""
        if not self._secret_answer:
            return body
        try:
            data = _decode_json(body)
        except _STRICT_FAILURES:
            return b""
        try:
            return msgspec.json.encode(_mask(data))
        except (TypeError, ValueError, RecursionError):  # pragma: no cover - decoded JSON encodes
            return b""


def _mask(data: object) -> object:
    if isinstance(data, str | _Beyond):
        return "***"
    if isinstance(data, dict):
        return {k: _mask(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_mask(v) for v in data]
    return data


def _finite_decimal(value: object, path: str) -> Decimal:
    if value is _BEYOND:
        raise _Unfit(path, "a number beyond what a decimal can hold")
    if isinstance(value, Decimal):
        number = value
    elif isinstance(value, int) and not isinstance(value, bool):
        number = Decimal(value)
    elif isinstance(value, str):
        try:
            number = Decimal(value)
        except (InvalidOperation, ValueError):
            raise _Unfit(path, "not a decimal number") from None
    else:
        raise _Unfit(path, f"expected a decimal, got {_kind(value)}")
    if not number.is_finite():
        raise _Unfit(path, "a non-finite number (NaN or infinity)")
    return number


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if value is _BEYOND:
        return "a number beyond what a decimal can hold"
    return {bool: "a boolean", int: "an integer", str: "a string", list: "an array",
            dict: "an object", Decimal: "a number"}.get(type(value), type(value).__name__)


def _is_empty(value: object) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _convert(info: mi.Type, value: Any, path: str) -> Any:
    if isinstance(info, mi.UnionType):
        members = [t for t in info.types if not isinstance(t, mi.NoneType)]
        nullable = len(members) < len(info.types)
        if nullable and value is None:
            return None
        if nullable and len(members) == 1:
            member = members[0]
            # "" (or an empty container) where a decimal or an optional object is documented.
            if isinstance(member, mi.DecimalType) and value == "":
                return None
            if isinstance(member, mi.StructType) and _is_empty(value):
                return None
            return _convert(member, value, path)
        for member in members:  # pragma: no cover - the models have no wider unions
            try:
                return _convert(member, value, path)
            except _Unfit:
                continue
        raise _Unfit(path, f"unexpected {_kind(value)}")  # pragma: no cover
    if isinstance(info, mi.AnyType):
        return value  # a field taken as it comes: the result function reads it
    if isinstance(info, mi.NoneType):
        if value is None:
            return None
        raise _Unfit(path, f"expected null, got {_kind(value)}")
    if isinstance(info, mi.DecimalType):
        return _finite_decimal(value, path)
    if isinstance(info, mi.IntType):
        return _integer(value, path)
    if isinstance(info, mi.FloatType):
        number = float(_finite_decimal(value, path))
        if not math.isfinite(number):
            raise _Unfit(path, "a number out of range")
        return number
    if isinstance(info, mi.StrType):
        if isinstance(value, str):
            return value
        raise _Unfit(path, f"expected a string, got {_kind(value)}")
    if isinstance(info, mi.BoolType):
        if isinstance(value, bool):
            return value
        raise _Unfit(path, f"expected a boolean, got {_kind(value)}")
    if isinstance(info, mi.EnumType):
        return _enum_value(info.cls, value, path)
    if isinstance(info, mi.StructType):
        return _struct(info, value, path)
    if isinstance(info, mi.ListType):
        if not isinstance(value, list):
            raise _Unfit(path, f"expected an array, got {_kind(value)}")
        return [_convert(info.item_type, item, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(info, mi.DictType):
        if value == []:  # an empty map, serialised as an empty list
            return {}
        if not isinstance(value, dict):
            raise _Unfit(path, f"expected an object, got {_kind(value)}")
        return {
            _convert(info.key_type, key, path): _convert(info.value_type, item, f"{path}.{key}")
            for key, item in value.items()
        }
    raise _Unfit(path, "a type the reader does not know")  # pragma: no cover


def _integer(value: object, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,30}", value):
        return int(value)
    if (
        isinstance(value, Decimal)
        and value.is_finite()
        and abs(value.adjusted()) <= 30
        and value == value.to_integral_value()
    ):
        return int(value)
    raise _Unfit(path, f"expected an integer, got {_kind(value)}")


def _enum_value(cls: type[enum.Enum], value: object, path: str) -> object:
    wire_type = int if issubclass(cls, int) else str
    if wire_type is int and isinstance(value, (str, Decimal)):
        value = _integer(value, path)  # digits in a string, or 2.0: the integer they spell
    if isinstance(value, bool) or not isinstance(value, wire_type):
        raise _Unfit(path, f"expected {'an integer' if wire_type is int else 'a string'}, "
                           f"got {_kind(value)}")
    try:
        return cls(value)
    except ValueError:
        return value  # a value the enum does not list: the plain wire value


def _struct(info: mi.StructType, value: object, path: str) -> object:
    if not isinstance(value, dict):
        raise _Unfit(path, f"expected an object, got {_kind(value)}")
    kwargs: dict[str, Any] = {}
    aliases: Mapping[str, str] = getattr(info.cls, "wire_aliases", None) or {}
    for field in info.fields:
        where = f"{path}.{field.encode_name}"
        raw = value.get(field.encode_name, msgspec.NODEFAULT)
        second = aliases.get(field.encode_name)
        if second is not None and second in value:
            raw, where = _spelled_value(
                field.type, (raw, where), (value[second], f"{path}.{second}")
            )
        if raw is msgspec.NODEFAULT:
            if not field.required:
                continue  # the struct's default
            if _nullable(field.type):
                kwargs[field.name] = None
                continue
            raise _Unfit(where, "missing")
        if raw is None and not field.required:
            # null: None where the field takes it (its default may tell "missing" apart),
            # else the struct's default.
            if _nullable(field.type):
                kwargs[field.name] = None
            continue
        kwargs[field.name] = _convert(field.type, raw, where)
    # The constructor does not check types, so an unlisted enum value stays as it came.
    return info.cls(**kwargs)


def _spelled_value(
    info: mi.Type, first: tuple[Any, str], second: tuple[Any, str]
) -> tuple[Any, str]:
    """The value, and where it was read, of a field an answer writes in two spellings (each as
    (raw value, path); the first may be missing): the one that says something when the other is
    missing, empty or null; the first when both say the same. Two that say different things
    are a contradiction no reading can settle."""
    (first_raw, first_where), (second_raw, second_where) = first, second
    if first_raw is msgspec.NODEFAULT or (_is_empty(first_raw) and not _is_empty(second_raw)):
        return second
    if _is_empty(second_raw):
        return first
    if _convert(info, first_raw, first_where) != _convert(info, second_raw, second_where):
        raise _Unfit(first_where, f"two different values, as {first_where.rsplit('.', 1)[1]} "
                                  f"and {second_where.rsplit('.', 1)[1]}")
    return first


def _nullable(info: mi.Type) -> bool:
    return isinstance(info, mi.UnionType) and any(isinstance(t, mi.NoneType) for t in info.types)
