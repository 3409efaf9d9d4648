"""Property tests: any parameters either go out well-formed and signed or are refused before
sending; any answer body, of any status, surfaces only as a result or a TxcError."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import txc_async
from txc_async import InvalidParameterError, TxcError
from txc_async.transports import RawResponse

from ..support.common import SECRET, RecordingLimiter
from ..support.transports import MemoryTransport, make_client


def check_well_formed(transport: MemoryTransport) -> None:
    """Every request sent is signed correctly, compact, and free of floats."""
    for method, url, headers, body in transport.sent:
        if url.path == "/oauth2/refresh_token" or method == "GET":
            continue
        assert headers is not None and body is not None
        payload = base64.b64encode(body).decode()
        assert headers["X-TXC-PAYLOAD"] == payload
        assert headers["X-TXC-SIGNATURE"] == hmac.new(
            SECRET.encode(), payload.encode(), hashlib.sha512
        ).hexdigest()
        decoded = json.loads(body, parse_float=lambda text: pytest.fail(f"float {text} sent"))
        assert decoded["request"] == url.path
        assert decoded["nonceWindow"] is True and decoded["nonce"].isdigit()
        assert msgspec.json.encode(decoded) == body, "compact, and sent as signed"


anything = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=300),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.datetimes(timezones=st.sampled_from([None, UTC])),
    st.sampled_from(["BTC_USDT", "buy", "sell", "LONG", "5m", "1h", "24h", "0.1", "acc_1", "1",
                     "\ud800", "ok\udfff"]),
    st.lists(st.integers(), max_size=2),
)

OPERATIONS: dict[str, tuple[str, ...]] = {
    "investments_history": ("id", "ticker", "status", "limit", "offset"),
    "collateral_stop_limit_order": (
        "market", "side", "amount", "price", "activation_price", "stop_loss", "take_profit",
        "client_order_id", "position_side",
    ),
    "create_mining_account": ("name", "referral_code"),
    "mining_rewards": ("account", "start", "end", "limit", "offset"),
    "mining_hashrate": ("account", "start", "end", "interval"),
    "refresh_oauth_token": ("client_id", "client_secret", "refresh_token"),
}


SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


REQUIRED = {
    "collateral_stop_limit_order": {"market", "side", "amount", "price", "activation_price"},
    "create_mining_account": {"name"},
    "refresh_oauth_token": {"client_id", "client_secret", "refresh_token"},
}


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(sorted(OPERATIONS)))
    kwargs: dict[str, Any] = {}
    for parameter in OPERATIONS[name]:
        if parameter in REQUIRED.get(name, set()) or draw(st.booleans()):
            kwargs[parameter] = draw(anything)
    return name, kwargs


@SETTINGS
@given(call=calls())
async def test_random_parameters_go_out_well_formed_or_are_refused(
    call: tuple[str, dict[str, Any]],
) -> None:
    name, kwargs = call
    client, transport = make_client(RawResponse(500, {}, b"down"))
    try:
        await getattr(client, name)(**kwargs)
    except InvalidParameterError as exc:
        assert not transport.sent, "a refused call must send nothing"
        assert exc.parameter in {*OPERATIONS[name], "start", "end"}
    except TxcError:
        assert transport.sent
        check_well_formed(transport)
    else:  # pragma: no cover - the transport always answers 500
        pytest.fail("a 500 answer must raise")
    for value in kwargs.values():
        if isinstance(value, float):
            assert not transport.sent, "a float must never be sent"


@SETTINGS
@given(
    amount=st.decimals(min_value=Decimal("1e-18"), max_value=Decimal("1e15"), places=18),
    price=st.integers(1, 10**12),
)
async def test_valid_decimals_are_sent_exactly(amount: Decimal, price: int) -> None:
    client, transport = make_client(RawResponse(500, {}, b"down"))
    with pytest.raises(TxcError):
        await client.collateral_stop_limit_order(
            market="BTC_USDT", side="buy", amount=amount, price=price,
            activation_price=format(amount, "f"),
        )
    (sent,) = transport.sent
    assert sent[3] is not None
    body = json.loads(sent[3])
    assert Decimal(body["amount"]) == amount and Decimal(body["activation_price"]) == amount
    assert Decimal(body["price"]) == price
    assert "E" not in body["amount"] and "e" not in body["amount"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(
        ["code", "message", "errors", "data", "success", "records", "offset", "limit",
         "token", "error", "BTC", "main_balance", "name", "createdAt", "order_id"]
    ) | st.text(max_size=5), children, max_size=5),
    max_leaves=12,
)


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["json", "truncated", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    text = json.dumps(draw(json_values)).encode()
    if kind == "truncated":
        return text[: draw(st.integers(0, max(0, len(text) - 1)))]
    return text


@SETTINGS
@given(
    status=st.sampled_from([200, 201, 204, 301, 400, 401, 403, 404, 418, 422, 429, 500, 502, 503]),
    body=bodies(),
    retry_after=st.sampled_from([None, "1", "abc", "-5", "inf", "nan"]),
    operation=st.sampled_from(["ping", "main_balance", "investments_history", "mining_rewards",
                               "mining_hashrate", "create_mining_account",
                               "collateral_stop_limit_order", "refresh_oauth_token"]),
)
async def test_any_answer_surfaces_as_a_result_or_a_txc_error(
    status: int, body: bytes, retry_after: str | None, operation: str
) -> None:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    client, _transport = make_client(RawResponse(status, headers, body))
    arguments: dict[str, dict[str, Any]] = {
        "create_mining_account": {"name": "n"},
        "collateral_stop_limit_order": {
            "market": "BTC_USDT", "side": "buy", "amount": "1", "price": "1",
            "activation_price": "1",
        },
        "refresh_oauth_token": {"client_id": "c", "client_secret": "s", "refresh_token": "t"},
    }
    try:
        await getattr(client, operation)(**arguments.get(operation, {}))
    except TxcError as exc:
        str(exc), repr(exc)  # both must work
    except Exception as exc:  # pragma: no cover - this is the failure being looked for
        pytest.fail(f"{type(exc).__name__} escaped: {exc!r}")


SECRET_WORDS = ("test-secret", "AT-very-secret", "RT-very-secret", "RT-old-secret")


async def test_no_secret_in_logs_reprs_or_errors(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    answers = [
        RawResponse(200, {}, json.dumps({"data": {
            "access_token": "AT-very-secret", "expires_in": 300,
            "refresh_token": "RT-very-secret", "scope": "a", "token_type": "Bearer"}}).encode()),
        RawResponse(400, {}, b'{"data": {"token": ["Invalid token."]}}'),
        RawResponse(429, {}, b"<html>429</html>"),
        RawResponse(429, {}, b'{"code": 0, "message": "Too many requests.", "errors": {}}'),
        RawResponse(500, {}, b"down"),
        RawResponse(401, {}, b'{"code": 0, "message": "Invalid signature", "errors": {}}'),
    ]
    for answer in answers:
        client, transport = make_client(answer)
        seen.append(repr(client))
        try:
            token = await client.refresh_oauth_token(
                client_id="cid", client_secret="test-secret", refresh_token="RT-old-secret"
            )
            seen += [repr(token), str(token)]
        except TxcError as exc:
            seen += [str(exc), repr(exc)]
        try:
            await client.main_balance()
        except TxcError as exc:
            seen += [str(exc), repr(exc)]
        for _method, _url, headers, _body in transport.sent:
            if headers and "X-TXC-SIGNATURE" in headers:
                seen_signature = headers["X-TXC-SIGNATURE"]
                seen_payload = headers["X-TXC-PAYLOAD"]
                text = caplog.text + "".join(seen)
                assert seen_signature not in text and seen_payload not in text
    text = caplog.text + "\n".join(seen)
    assert caplog.records, "the retries above must have been logged"
    for word in SECRET_WORDS:
        assert word not in text, word


def test_tls_is_verified_by_default() -> None:
    client = txc_async.Client(limiter=RecordingLimiter())
    assert client._pipeline.transport._verify_tls is True  # type: ignore[attr-defined]
    assert datetime.now(UTC)  # the default base URL is https
    assert client.base_url.startswith("https://")


# -- decoded values: what a success answer can turn into ------------------------------------------

MISSING = object()


@st.composite
def non_finite_spellings(draw: st.DrawFn) -> str:
    word = draw(st.sampled_from(["nan", "snan", "inf", "infinity"]))
    word = "".join(c.upper() if draw(st.booleans()) else c for c in word)
    if "nan" in word.lower():
        word += draw(st.sampled_from(["", "0", "123"]))
    if draw(st.booleans()):
        at = draw(st.integers(1, len(word) - 1))
        word = word[:at] + "_" + word[at:]
    sign = draw(st.sampled_from(["", "+", "-"]))
    space = draw(st.sampled_from(["", " ", "\t", "\u2003"]))
    return f"{space}{sign}{word}{space}"


decimal_values = st.one_of(
    st.decimals(allow_nan=False, allow_infinity=False).map(str),
    st.decimals(allow_nan=False, allow_infinity=False, places=8).map(lambda d: format(d, "f")),
    st.just(""), st.none(), st.just(MISSING), non_finite_spellings(),
    st.text(max_size=8), st.integers(-(10**30), 10**30),
    st.floats(allow_nan=False, allow_infinity=False), st.booleans(),
)


def _expected_decimal(value: object) -> tuple[bool, Decimal | None]:
    """(readable, value) of a decimal field as the library promises to read it."""
    if value is MISSING or value is None or value == "":
        return True, None
    if isinstance(value, bool):
        return False, None
    if isinstance(value, int):
        return True, Decimal(value)
    if isinstance(value, float):
        return True, Decimal(repr(value))
    assert isinstance(value, str)
    try:
        number = Decimal(value)
    except ArithmeticError:
        return False, None
    return number.is_finite(), number if number.is_finite() else None


DECIMAL_FIELDS = ("amount", "price", "activation_price", "deal_money", "deal_stock", "left",
                  "deal_fee")


@SETTINGS
@given(
    decimals=st.fixed_dictionaries({name: decimal_values for name in DECIMAL_FIELDS}),
    legs=st.tuples(decimal_values, decimal_values),
    status=st.sampled_from(["NEW", "FILLED", "CANCELLED", "PENDING", "", "new"]),
    side=st.sampled_from(["buy", "sell", "BUY", "short"]),
    extra=st.dictionaries(st.text(max_size=5), json_values, max_size=3),
)
async def test_decoded_order_values_are_what_the_answer_says_or_refused(
    decimals: dict[str, Any], legs: tuple[Any, Any], status: str, side: str,
    extra: dict[str, Any],
) -> None:
    answer: dict[str, Any] = {**extra, "order_id": 9, "market": "BTC_USDT", "side": side,
                              "type": "stop limit", "timestamp": 1.5, "status": status}
    fields = dict(decimals)
    oto = {"otoId": 1}
    for name, value in zip(("stopLoss", "takeProfit"), legs, strict=True):
        if value is not MISSING:
            oto[name] = value
    answer["oto"] = oto
    for name, value in fields.items():
        if value is not MISSING:
            answer[name] = value
    body = json.dumps(answer).encode()
    client, transport = make_client(RawResponse(200, {}, body))
    expected = {name: _expected_decimal(value) for name, value in fields.items()}
    leg_expected = [_expected_decimal(value) for value in legs]
    readable = all(ok for ok, _ in [*expected.values(), *leg_expected])
    try:
        order = await client.collateral_stop_limit_order(
            market="BTC_USDT", side="buy", amount="1", price="1", activation_price="1"
        )
    except txc_async.AnswerFormatError as exc:
        assert not readable, f"a readable answer was refused: {exc}"
        assert "accepted the request" in str(exc)
        assert len(transport.sent) == 1
        return
    assert readable, "an unreadable or non-finite value was accepted"
    for name, (_, value) in expected.items():
        assert getattr(order, name) == value, name
    assert order.oto is not None
    assert (order.oto.stop_loss, order.oto.take_profit) == tuple(v for _, v in leg_expected)
    # The first specification's "CANCELLED" reads as the service's CANCELED.
    assert order.status == ("CANCELED" if status == "CANCELLED" else status)
    assert order.side == side
    assert isinstance(order.status, txc_async.OrderStatus) == (status in {"NEW", "FILLED",
                                                                          "CANCELLED"})


@SETTINGS
@given(
    rewards=st.lists(st.tuples(decimal_values, decimal_values), min_size=1, max_size=4),
    balances=st.dictionaries(st.sampled_from(["BTC", "ETH", "NAN", "INF"]), decimal_values,
                             max_size=4),
)
async def test_decoded_rewards_and_balances_hold_only_finite_decimals(
    rewards: list[tuple[Any, Any]], balances: dict[str, Any]
) -> None:
    records = []
    for reward, fee in rewards:
        record = {"miningAccountName": "nanopool_inf", "totalReward": "1", "fppsRate": "0.1",
                  "hashRate": "1 TH/s", "date": 1704067200}
        for name, value in (("reward", reward), ("fee", fee)):
            if value is not MISSING:
                record[name] = value
        records.append(record)
    page_body = json.dumps({"offset": 0, "limit": 100, "data": records}).encode()
    balance_body = json.dumps({
        ticker: ({} if value is MISSING else {"main_balance": value})
        for ticker, value in balances.items()
    }).encode()
    pairs = [(client_call, body) for client_call, body in
             (("mining_rewards", page_body), ("main_balance", balance_body))]
    for name, body in pairs:
        client, _ = make_client(RawResponse(200, {}, body))
        values = (
            [v for pair in rewards for v in pair] if name == "mining_rewards"
            else list(balances.values())
        )
        # A balance entry without main_balance is not a balance: refused, never read as none.
        readable = all(_expected_decimal(v)[0] for v in values) and (
            name == "mining_rewards" or MISSING not in values
        )
        try:
            result = await getattr(client, name)()
        except txc_async.AnswerFormatError:
            assert not readable
            continue
        assert readable
        if name == "mining_rewards":
            read = [(r.reward, r.fee) for r in result.data]
            assert read == [tuple(_expected_decimal(v)[1] for v in pair) for pair in rewards]
        else:
            assert result == {
                ticker: number for ticker, value in balances.items()
                if (number := _expected_decimal(value)[1]) is not None
            }


@SETTINGS
@given(
    secret=st.text(min_size=1, max_size=300),
    params=st.dictionaries(st.text(max_size=12), st.text(max_size=40), max_size=4),
    nonce=st.integers(min_value=0, max_value=10**15),
)
def test_every_signature_is_the_hmac_sha512_of_its_payload(
    secret: str, params: dict[str, str], nonce: int
) -> None:
    """The signer starts every signature from a copy of the key's HMAC state: whatever the
    secret (longer than SHA-512's block included) and however often it signs, each signature is
    HMAC-SHA512(secret, payload) as the service's documentation gives it (whitebit-exchange/docs,
    api-reference/authentication.mdx)."""
    from txc_async._nonces.sources import NonceSource
    from txc_async._signing import Signer

    signer = Signer("key", secret, NonceSource())
    for attempt in range(2):
        body, headers = signer.sign("/api/v4/main-account/balance", params, nonce + attempt)
        payload = base64.b64encode(body)
        assert headers["X-TXC-PAYLOAD"] == payload.decode("ascii")
        assert headers["X-TXC-SIGNATURE"] == hmac.new(
            secret.encode(), payload, hashlib.sha512
        ).hexdigest()
