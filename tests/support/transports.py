"""Mock transports that keep what they were sent, and clients bound to them."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from yarl import URL

import txc_async
from txc_async.transports import MockRequest, RawResponse

from .common import KEY, SECRET, RecordingLimiter, fast_retry


class MemoryTransport(txc_async.MockTransport):
    """A mock transport that keeps the requests it was sent and answers with a fixed response,
    or with what ``answer(body)`` gives for each request's body."""

    def __init__(self, answer: RawResponse | Callable[[bytes | None], RawResponse]) -> None:
        super().__init__(self._answer)
        self.answer = answer
        self.sent: list[tuple[str, URL, Mapping[str, str] | None, bytes | None]] = []

    def _answer(self, request: MockRequest) -> RawResponse:
        self.sent.append((request.method, request.url, request.headers, request.body))
        answer = self.answer
        return answer if isinstance(answer, RawResponse) else answer(request.body)


def make_client(
    answer: RawResponse | Callable[[bytes | None], RawResponse],
) -> tuple[txc_async.Client, MemoryTransport]:
    transport = MemoryTransport(answer)
    client = txc_async.Client(
        api_key=KEY, api_secret=SECRET, base_url="https://api.example.test",
        limiter=RecordingLimiter(), transport=transport, retry=fast_retry(),
    )
    return client, transport
