"""The refusals users take for failures of the library, each a typed error that says what it
is: a region block, a permission the account lacks, the service's maintenance; and every
API error's code with the meaning its operation's page gives it."""

from __future__ import annotations

import pickle
import subprocess
import sys
from typing import Any

import pytest
from aioresponses import aioresponses

import txc_async
from txc_async import (
    ApiError,
    AuthenticationError,
    PermissionDeniedError,
    RegionBlockedError,
    ServiceMaintenanceError,
    TransportError,
    ValidationError,
)

from ..support.common import BASE, requests_to

BALANCE = BASE + "/api/v4/main-account/balance"
INVEST = BASE + "/api/v4/main-account/smart/investments"
ORDER = BASE + "/api/v4/order/collateral/stop-limit"
ORDER_OK: dict[str, Any] = {
    "market": "BTC_USDT", "side": "buy", "amount": "1", "price": "2", "activation_price": "3",
}
# concepts/order-types.mdx, "Regional restrictions" (whitebit-exchange/docs).
REGION_BODY = {"code": 30, "errors": {"orderType": ["This order type is not available"]},
               "message": "Validation failed"}
# The lending operations' 403 (openapi/private/main_api_v4.yaml).
NO_LENDING = {"code": 0, "message": "You don't have permission to use this endpoint. Please "
                                    "contact support for more details"}


async def test_a_region_block_is_its_own_error(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(ORDER, status=453, payload=REGION_BODY)
    with pytest.raises(RegionBlockedError) as caught:
        await client.collateral_stop_limit_order(**ORDER_OK)
    error = caught.value
    assert not isinstance(error, ValidationError)
    assert (error.status, error.code) == (453, 30)
    assert error.errors == {"orderType": ["This order type is not available"]}
    assert "region" in error.reason and error.reason in str(error)
    assert str(error).startswith("collateral_stop_limit_order: ")
    assert len(requests_to(mocked, "/api/v4/order/collateral/stop-limit")) == 1


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (403, NO_LENDING),
        # The same refusal in the public shape, and with a success status.
        (200, {"success": False, "message": NO_LENDING["message"], "code": 0}),
        (403, b""),
    ],
)
async def test_a_missing_permission_says_what_the_account_lacks(
    mocked: aioresponses, client: txc_async.Client, status: int, body: Any
) -> None:
    kwargs = {"body": body} if isinstance(body, bytes) else {"payload": body}
    mocked.post(INVEST, status=status, **kwargs)
    with pytest.raises(PermissionDeniedError) as caught:
        await client.investments_history()
    error = caught.value
    assert isinstance(error, AuthenticationError)
    assert error.lacks and error.lacks in str(error)
    assert "not allowed" in error.lacks or "no access" in error.lacks
    # Nothing is retried: the same request is refused again.
    assert len(requests_to(mocked, "/api/v4/main-account/smart/investments")) == 1


@pytest.mark.parametrize(
    ("message", "words"),
    [
        ("This action is unauthorized. Please, enable Two-Factor authentication.", "two-factor"),
        ("This action is unauthorized. Enable your key in API settings", "enable it"),
        ("This API Key is not authorized to perform this action.", "API key's settings"),
    ],
)
async def test_each_documented_permission_refusal_has_its_own_advice(
    mocked: aioresponses, client: txc_async.Client, message: str, words: str
) -> None:
    mocked.post(BALANCE, status=412, payload={"code": 1, "message": message})
    with pytest.raises(PermissionDeniedError) as caught:
        await client.main_balance()
    assert words in caught.value.lacks


async def test_maintenance_is_retried_for_a_read_then_raised(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(BALANCE, status=503, body=b"<html>maintenance</html>", repeat=True)
    with pytest.raises(ServiceMaintenanceError) as caught:
        await client.main_balance()
    assert isinstance(caught.value, TransportError)
    assert caught.value.status == 503
    assert "maintenance" in str(caught.value) and "platform_status" in str(caught.value)
    assert len(requests_to(mocked, "/api/v4/main-account/balance")) == 4  # 1 + max_retries


async def test_maintenance_never_sends_a_write_again(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(ORDER, status=503, body=b"<html>maintenance</html>", repeat=True)
    with pytest.raises(ServiceMaintenanceError) as caught:
        await client.collateral_stop_limit_order(**ORDER_OK)
    assert caught.value.may_have_reached_server
    assert len(requests_to(mocked, "/api/v4/order/collateral/stop-limit")) == 1


async def test_a_503_with_a_json_body_is_a_server_error_not_maintenance(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    mocked.post(BALANCE, status=503, payload={"error": ["Service temporary unavailable"]},
                repeat=True)
    with pytest.raises(TransportError) as caught:
        await client.main_balance()
    assert type(caught.value) is TransportError


async def test_a_code_carries_its_operations_documented_meaning(
    mocked: aioresponses, client: txc_async.Client
) -> None:
    # http-trade-v4.yaml, createCollateralStopLimitOrder, "Error Codes": 10 is the balance.
    mocked.post(ORDER, status=422, payload={"code": 10, "message": "Inner validation failed",
                                            "errors": {"amount": ["Not enough balance"]}})
    with pytest.raises(ValidationError) as caught:
        await client.collateral_stop_limit_order(**ORDER_OK)
    error = caught.value
    assert error.meaning == "insufficient balance to place the order"
    assert "code 10: insufficient balance to place the order" in str(error)


def test_a_meaning_needs_an_operation_whose_page_lists_the_code() -> None:
    outside = ApiError("Validation failed", status=422, code=10)
    assert outside.meaning is None
    outside._attach_operation("ping")
    assert outside.meaning is None  # ping's page lists no codes
    listed = ApiError("Validation failed", status=422, code=10)
    listed._attach_operation("collateral_stop_limit_order")
    # A walk naming itself over the operation keeps the operation's meaning.
    listed._attach_operation("iter_something", outer=True)
    assert listed.operation == "iter_something"
    assert listed.meaning == "insufficient balance to place the order"


def test_the_meanings_are_read_only_when_asked_for() -> None:
    code = (
        "import sys, txc_async; c = txc_async.Client; "
        "assert 'txc_async._models_generated.error_meanings' not in sys.modules"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.parametrize(
    "error",
    [
        RegionBlockedError("Validation failed", status=453, code=30, reason="not here"),
        PermissionDeniedError("nope", status=403, code=0, lacks="B2B access"),
        ServiceMaintenanceError("under maintenance", status=503),
    ],
)
def test_the_new_errors_cross_processes_whole(error: txc_async.TxcError) -> None:
    error._attach_operation("collateral_stop_limit_order")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert copy.__dict__ == error.__dict__
