"""A Redis URL's secrets (the user-info's password or token, secret query parameters) never
show in a RedisLimiter's repr, in its errors, or anywhere in their chains."""

from __future__ import annotations

import socket

import pytest

pytest.importorskip("redis")

from txc_async import RateLimit, RedisLimiter, TransportError
from txc_async._secrets import safe_url as _safe_url
from txc_async._secrets import url_secrets as _passwords

from ..support.reachable import reachable_text

# (URL with {port}, the secrets it holds)
URLS: list[tuple[str, tuple[str, ...]]] = [
    ("redis://app:Pw-userinfo-1@127.0.0.1:{port}/0", ("Pw-userinfo-1",)),
    ("redis://:Pw%40enc%2Fded@127.0.0.1:{port}", ("Pw%40enc%2Fded", "Pw@enc/ded")),
    ("redis://Tok-only-user-2@127.0.0.1:{port}", ("Tok-only-user-2",)),
    ("redis://127.0.0.1:{port}/0?password=Pw+query+3&db=1",
     ("Pw+query+3", "Pw query 3", "Pw%2Bquery%2B3")),
    ("redis://127.0.0.1:{port}?PASSWORD=Pw-upper-4&password=Pw-twice-5",
     ("Pw-upper-4", "Pw-twice-5")),
    ("rediss://127.0.0.1:{port}?ssl_password=Pw-ssl-6&ssl_cert_reqs=none", ("Pw-ssl-6",)),
    ("redis://u:p@ss-at-7@127.0.0.1:{port}", ("p@ss-at-7",)),
    ("unix://:Pw-unix-8@/tmp/nowhere-txc.sock?db=0", ("Pw-unix-8",)),
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.parametrize(("template", "secrets"), URLS, ids=[str(i) for i in range(len(URLS))])
def test_urls_are_masked_wherever_a_secret_sits(template: str, secrets: tuple[str, ...]) -> None:
    url = template.format(port=6390)
    shown = _safe_url(url)
    assert "***" in shown
    for secret in secrets:
        assert secret not in shown
        assert any(secret in spelling or spelling in secret for spelling in _passwords(url))
    limiter = RedisLimiter(url)
    for secret in secrets:
        assert secret not in repr(limiter)


def test_what_is_not_secret_stays_readable() -> None:
    url = "redis://app:pw@cache.internal:6390/2?db=3&socket_keepalive=true"
    assert _safe_url(url) == "redis://app:***@cache.internal:6390/2?db=3&socket_keepalive=true"
    assert _safe_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
    assert _passwords("redis://127.0.0.1:6379/0") == []


@pytest.mark.parametrize("url", [
    "redis://:Pw-bad-db-9@127.0.0.1:6390?db=Pw-bad-db-9",
    "http://:Pw-scheme-10@127.0.0.1:6390",
    "redis://[::1:Pw-v6-11",
    "redis:/app:Pw-one-slash-12@127.0.0.1:6390/0",
    "redis:app:Pw-no-slash-13@127.0.0.1:6390/0",
    "rediss:///0?password=Pw-hostless-14",
])
def test_refused_urls_do_not_carry_their_secret(url: str) -> None:
    with pytest.raises(ValueError) as caught:
        RedisLimiter(url)
    secret = url.split("Pw-", 1)[1].split("@", 1)[0]
    text = reachable_text(caught.value)
    assert f"Pw-{secret}" not in text
    assert caught.value.__context__ is None


@pytest.mark.parametrize(("template", "secrets"), URLS[:6], ids=[str(i) for i in range(6)])
async def test_errors_of_an_unreachable_store_carry_no_secret(
    template: str, secrets: tuple[str, ...]
) -> None:
    limiter = RedisLimiter(template.format(port=free_port()), timeout=2.0)
    try:
        with pytest.raises(TransportError) as caught:
            await limiter.acquire("key-id", "main_balance", RateLimit(10, 1.0), 10.0)
    finally:
        await limiter.aclose()
    err = caught.value
    assert "rate-limit store" in str(err) and not err.may_have_reached_server
    text = reachable_text(err)
    for secret in secrets:
        assert secret not in text


@pytest.mark.parametrize("url", [
    "10.0.0.5:6379/0?password=Pw-no-scheme-15",
    "cache.internal/0?password=Pw-no-scheme-16",
    "app:Pw-no-scheme-17@cache.internal:6379/0",
    "redis:/app:Pw-one-slash-18@127.0.0.1:6390/0",
    "rediss:///0?password=Pw-hostless-19",
])
def test_mistyped_limiter_urls_are_refused_without_quoting_them(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A limiter URL mistyped (no scheme, one slash, no host) is refused wherever it is given,
    and the refusal never quotes it: it may hold the store's password."""
    from txc_async import Client, InvalidParameterError, limiter_from_url
    from txc_async.cli import main

    secret = "Pw-" + url.split("Pw-", 1)[1].split("@", 1)[0]
    with pytest.raises(ValueError) as caught:
        limiter_from_url(url)
    assert secret not in reachable_text(caught.value)
    monkeypatch.setenv("TXC_LIMITER", url)
    with pytest.raises(InvalidParameterError) as refused:
        Client.from_env(base_url="http://127.0.0.1:9")
    assert secret not in reachable_text(refused.value)
    assert refused.value.__context__ is None
    with pytest.raises(SystemExit):
        main(["backfill-rewards", "--limiter", url, "--start", "2024-01-01", "--end", "2024-01-02",
              "--out", "-"])
    out, err = capsys.readouterr()
    assert secret not in out + err
    assert "limiter" in err


def test_a_url_holding_credentials_in_its_path_is_shown_masked_whole() -> None:
    assert _safe_url("redis:/app:Pw-path-20@127.0.0.1:6390/0") == "redis:***"
