"""Fault injection: the faults a test queues per path (``FaultPlan``), and the answers they
give in place of an operation's, or make of its success answer."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import msgspec
from aiohttp import web

from ._table import template_of
from ._wire import HTML_429, encode, json_response

__all__ = [
    "ANSWER_FAULTS", "DECIMAL_FIELDS", "FAULT_KINDS", "STATUS_FAULTS", "Fault", "FaultPlan",
    "changed_answer", "fault_answer",
]

FAULT_KINDS = frozenset({
    "html_502", "json_503", "text_503", "json_500", "reset", "malformed_json", "slow", "late",
    "rate_limit_429", "nonce_429", "throttle", "validation_failed", "error_200", "empty_404",
    "oto_empty_leg", "unlisted_status", "non_finite", "oversized", "malformed_http",
})
#: Faults whose answer takes a status (400 or 422).
STATUS_FAULTS = frozenset({"throttle", "validation_failed"})
#: Faults that let the operation run and then change its success answer.
ANSWER_FAULTS = frozenset({"oto_empty_leg", "unlisted_status", "non_finite", "oversized"})
#: Answer fields that hold decimal amounts (the "non_finite" fault replaces them).
DECIMAL_FIELDS = frozenset({
    "amount", "price", "activation_price", "deal_money", "deal_stock", "left", "deal_fee",
    "dealMoney", "dealStock", "dealFee",
    "stopLoss", "takeProfit", "main_balance", "interestPaid", "percent", "interestRatio",
    "minInvestment", "maxInvestment", "maxPossibleInvestment", "totalReward", "reward", "fee",
    "fppsRate",
})
_MALFORMED_HTTP = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nBroken header line\r\n\r\n{}"
)


@dataclass(slots=True)
class Fault:
    """One fault queued for a request: what it does, and the values it does it with."""

    kind: str
    delay: float
    retry_after: float | None
    execute: bool
    value: Any = None
    size: int = 0
    status: int | None = None


class FaultPlan:
    """Faults queued per path; each applies to one request that reaches the path."""

    def __init__(self) -> None:
        self._queued: dict[str, deque[Fault]] = {}

    def add(
        self,
        path: str,
        kind: str,
        *,
        times: int = 1,
        delay: float = 0.0,
        retry_after: float | None = None,
        execute: bool = False,
        value: Any = None,
        size: int = 16 * 1024 * 1024,
        status: int | None = None,
    ) -> None:
        """Apply fault ``kind`` to the next ``times`` requests to ``path``: any documented
        operation's path; for a path with parameters, either the documented one
        (``/api/v4/public/orderbook/{market}``: every market) or one request path
        (``/api/v4/public/orderbook/BTC_USDT``: that market only, before the documented one's).

        ``throttle`` ("Too Many Attempts.", code 0) and ``validation_failed`` (the order
        refusal the API's first specification shows: code 30, "Validation failed", no field errors)
        answer with ``status``: 400 or 422, which the service uses (default 400 and 422).

        With ``execute=True`` the operation runs before the fault replaces its answer, as when
        a proxy fails after the service did the work. The answer faults always run the
        operation, then change its success answer (a refusal goes out unchanged):

        - ``oto_empty_leg``: the order's OTO legs that were not given read ``value``
          (default ``""``), as the exchange answers a one-leg stop-loss or take-profit;
        - ``unlisted_status``: the order's status reads ``value`` (default ``"ACTIVATING"``);
          investments and their plans get status ``value`` (default 9);
        - ``non_finite``: every decimal amount of the answer reads ``value`` (default ``"NaN"``);
        - ``oversized``: the answer is padded with spaces to ``size`` bytes and streamed in
          chunks, without a Content-Length.

        ``malformed_http`` answers bytes that are not valid HTTP, then closes the connection.
        """
        if kind not in FAULT_KINDS:
            raise ValueError(f"kind: must be one of {', '.join(sorted(FAULT_KINDS))}")
        if template_of(path) is None:
            raise ValueError(
                f"path: {path!r} is no documented operation's path (PATH_SCOPES lists them)"
            )
        if status is not None and (kind not in STATUS_FAULTS or status not in (400, 422)):
            raise ValueError(
                f"status: only {' and '.join(sorted(STATUS_FAULTS))} take one, 400 or 422"
            )
        queue = self._queued.setdefault(path, deque())
        execute = execute or kind in ANSWER_FAULTS
        for _ in range(times):
            queue.append(Fault(kind, delay, retry_after, execute, value, size, status))

    def clear(self) -> None:
        """Drop every fault still queued."""
        self._queued.clear()

    def pending(self, path: str) -> int:
        """How many queued faults still wait for a request to ``path``."""
        return len(self._queued.get(path, ()))

    def take(self, path: str, template: str | None = None) -> Fault | None:
        """The next fault queued for ``path``, else for its documented path ``template``,
        removed from the queue (None when there is none); the sandbox calls this for every
        request that reaches ``path``."""
        queue = self._queued.get(path)
        if not queue and template is not None and template != path:
            queue = self._queued.get(template)
        return queue.popleft() if queue else None


def fault_answer(request: web.Request, fault: Fault) -> web.Response:
    """The answer a fault gives in place of the operation's (every kind but the answer faults,
    ``slow`` and ``late``)."""
    kind = fault.kind
    if kind == "malformed_http":
        transport = request.transport
        if transport is not None:
            transport.write(_MALFORMED_HTTP)
            transport.close()
        return web.Response(status=500)
    if kind == "reset":
        transport = request.transport
        if transport is not None:
            transport.abort()
        return web.Response(status=500)
    if kind == "html_502":
        return web.Response(status=502, body=b"<html><body>502 Bad Gateway</body></html>",
                            content_type="text/html")
    if kind == "json_503":
        return json_response(503, {"code": 503, "message": "Service unavailable"})
    if kind == "text_503":
        return web.Response(status=503, text="Service is under maintenance")
    if kind == "json_500":
        return json_response(500, {"error": ["Internal server error."]})
    if kind == "malformed_json":
        return web.Response(status=200, body=b'{"offset": 0, "data": [{"mining',
                            content_type="application/json")
    if kind == "rate_limit_429":
        headers = {}
        if fault.retry_after is not None:
            headers["Retry-After"] = f"{fault.retry_after:g}"
        return web.Response(status=429, body=HTML_429, content_type="text/html",
                            headers=headers)
    if kind == "nonce_429":
        return json_response(429, {"code": 0, "message": "Too many requests.", "errors": {}})
    if kind == "throttle":
        return json_response(fault.status or 400,
                             {"code": 0, "message": "Too Many Attempts.", "errors": {}})
    if kind == "validation_failed":
        return json_response(fault.status or 422,
                             {"code": 30, "message": "Validation failed", "errors": {}})
    if kind == "error_200":
        return json_response(200, {"success": False, "message": "Service error",
                                   "result": None})
    return web.Response(status=404)  # empty_404


def changed_answer(fault: Fault, answer: Any, http_status: int) -> web.Response:
    """The success answer ``answer`` (of ``http_status``) as an answer fault changes it."""
    kind = fault.kind
    if kind == "oversized":
        return _padded(encode(answer), fault.size, http_status)
    answer = msgspec.json.decode(encode(answer))  # a copy: the sandbox's records stay intact
    if kind == "oto_empty_leg":
        oto = answer.get("oto") if isinstance(answer, dict) else None
        if isinstance(oto, dict):
            for leg in ("stopLoss", "takeProfit"):
                oto.setdefault(leg, "" if fault.value is None else fault.value)
    elif kind == "unlisted_status":
        if isinstance(answer, dict) and isinstance(answer.get("records"), list):
            status = 9 if fault.value is None else fault.value
            for record in answer["records"]:
                record["status"] = status
                record["plan"]["status"] = status
        elif isinstance(answer, dict) and "status" in answer:
            answer["status"] = "ACTIVATING" if fault.value is None else fault.value
    else:  # non_finite
        _replace_decimals(answer, "NaN" if fault.value is None else fault.value)
    return json_response(http_status, answer)


def _replace_decimals(data: Any, value: Any) -> None:
    if isinstance(data, dict):
        for key, item in data.items():
            if key in DECIMAL_FIELDS and isinstance(item, str):
                data[key] = value
            else:
                _replace_decimals(item, value)
    elif isinstance(data, list):
        for item in data:
            _replace_decimals(item, value)


def _padded(body: bytes, size: int, status: int) -> web.Response:
    """``body`` followed by spaces up to ``size`` bytes, streamed without a Content-Length."""

    async def chunks() -> AsyncIterator[bytes]:
        yield body
        left = size - len(body)
        block = b" " * (256 * 1024)
        while left > 0:
            piece = block if left >= len(block) else block[:left]
            left -= len(piece)
            yield piece

    return web.Response(status=status, body=chunks(), content_type="application/json")
