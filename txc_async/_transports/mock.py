"""A transport whose answers come from a function, so that tests (and a user's) need no network."""


from collections.abc import Awaitable, Callable, Mapping
from typing import NamedTuple

from yarl import URL

from .base import BaseTransport, RawResponse

__all__ = ["Handler", "MockRequest", "MockTransport"]


class MockRequest(NamedTuple):
    """One request as the client gives it to its transport."""

    method: str
    url: URL
    #: The headers, signing headers included for a signed request (None: none).
    headers: Mapping[str, str] | None
    #: The body bytes: a signed request's JSON, the OAuth form (None: no body).
    body: bytes | None
    #: Seconds the exchange may take: the request must be answered by then.
    timeout: float


#: What a [`MockTransport`][txc_async.MockTransport] asks for every answer.
Handler = Callable[[MockRequest], RawResponse | Awaitable[RawResponse]]


class MockTransport(BaseTransport):
    """A transport that sends nothing: ``handler`` is given each request as a
    [`MockRequest`][txc_async.MockRequest] and returns its answer, a ``RawResponse(status, headers,
    body)``, or an awaitable of one (an ``async def`` handler may wait, as a slow server would). A
    failure of the network is the handler raising
    [`txc_async.TransportError`][txc_async.TransportError] or
    [`txc_async.RequestTimeout`][txc_async.RequestTimeout], as any transport would:

    ```python
    def handler(request: MockRequest) -> RawResponse:
        return RawResponse(200, {"Date": "Sun, 22 Nov 2026 10:00:00 GMT"},
                           b'{"BTC": {"main_balance": "1.5"}}')

    client = txc_async.Client(api_key=..., api_secret=...,
                              transport=txc_async.MockTransport(handler))
    ```

    The client's limiter, signing, retries and answer decoding run as they do against the
    service.
    """

    def __init__(self, handler: Handler) -> None:
        #: Gives the answer to every request.
        self.handler = handler

    async def send(
        self, method: str, url: URL, *, headers: Mapping[str, str] | None, body: bytes | None,
        timeout: float,
    ) -> RawResponse:
        """The handler's answer to this request (or the handler's error)."""
        answer = self.handler(MockRequest(method, url, headers, body, timeout))
        if isinstance(answer, RawResponse):
            return answer
        return await answer

    async def aclose(self) -> None:
        """Nothing to release."""
