"""HTTPS, as the service is reached: the client's own session verifies the server's certificate
(on both request paths), refuses one it cannot verify before sending anything, and takes a
caller's CA or no verification when told to."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

import txc_async
from txc_async import RetryPolicy, TransportError

PING = "/api/v4/public/ping"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command to make a certificate")
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )
    return cert, key


@pytest.fixture
async def https_url(certificate: tuple[Path, Path]) -> AsyncIterator[str]:
    cert, key = certificate
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)

    async def ping(request: web.Request) -> web.Response:
        return web.json_response(["pong"])

    app = web.Application()
    app.router.add_get(PING, ping)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=served)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"https://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def _client(url: str, verify_tls: bool | ssl.SSLContext) -> txc_async.Client:
    return txc_async.Client(base_url=url, verify_tls=verify_tls,
                            retry=RetryPolicy(max_retries=0))


async def test_a_certificate_signed_by_the_given_ca_is_trusted(
    request_path: str, https_url: str, certificate: tuple[Path, Path]
) -> None:
    trusted = ssl.create_default_context(cafile=str(certificate[0]))
    client = _client(https_url, trusted)
    try:
        for _ in range(3):  # a new connection, then the same one again
            assert await client.ping() is True
        transport = client._pipeline.transport
        direct = transport._direct_exchange is not None  # type: ignore[attr-defined]
        assert direct is (request_path == "direct")
    finally:
        await client.close()


async def test_a_certificate_that_cannot_be_verified_is_refused_before_anything_is_sent(
    request_path: str, https_url: str
) -> None:
    client = _client(https_url, True)
    try:
        with pytest.raises(TransportError) as caught:
            await client.ping()
    finally:
        await client.close()
    assert "TLS handshake with 127.0.0.1" in str(caught.value)
    assert caught.value.may_have_reached_server is False


async def test_verification_turned_off_reaches_the_server(
    request_path: str, https_url: str
) -> None:
    client = _client(https_url, False)
    try:
        assert await client.ping() is True
    finally:
        await client.close()


async def test_a_server_closing_right_after_its_answer_fails_no_request_over_tls(
    request_path: str, certificate: tuple[Path, Path]
) -> None:
    """Over TLS too, a server that closes each connection right after answering (no
    ``Connection: close``) fails no request: each goes out on a connection still open."""
    import asyncio

    cert, key = certificate
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)
    seen: list[int] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            seen.append(1)
            writer.write(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n'
                         b'Content-Length: 8\r\n\r\n["pong"]')
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=served)
    port = server.sockets[0].getsockname()[1]
    client = _client(f"https://127.0.0.1:{port}", ssl.create_default_context(cafile=str(cert)))
    try:
        for _ in range(20):
            assert await client.ping() is True
    finally:
        await client.close()
        server.close()
        await server.wait_closed()
    assert len(seen) == 20
