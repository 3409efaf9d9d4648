"""Building requests: each operation's URL, the signature and headers of a request, and what a
request carried that no error may show."""

from __future__ import annotations

import platform
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

import aiohttp
from yarl import URL

from .._errors import TxcError
from .._operations import Auth, Operation
from .._secrets import mask_secrets
from .._signing import Signer
from .._version import __version__

__all__ = ["Requests", "default_user_agent", "mask_carried_secrets"]

_FORM = Auth.FORM
_BEARER = Auth.BEARER
_NONE = Auth.NONE
#: How many URLs of public reads are kept (each a set of parameters); past it they are made
#: again.
_PUBLIC_URLS = 1024
#: The parameter that carries an operation's bearer token (``Auth.BEARER``).
BEARER_PARAM = "access_token"
#: A parameter of a path: ``{market}``.
_PATH_PARAM = re.compile(r"\{(\w+)\}")
_SIGNING_HEADERS = ("X-TXC-APIKEY", "X-TXC-PAYLOAD", "X-TXC-SIGNATURE")


def default_user_agent() -> str:
    """``txc_async/<version> (Python <x.y>; aiohttp <x.y>)``."""
    python = ".".join(platform.python_version_tuple()[:2])
    aiohttp_version = ".".join(aiohttp.__version__.split(".")[:2])
    return f"txc_async/{__version__} (Python {python}; aiohttp {aiohttp_version})"


class Requests:
    """Makes the requests of one server and key: the URL of every operation, and the headers
    and body of each request, signed with the key when it carries a nonce."""

    __slots__ = (
        "_form_headers", "_plain_headers", "_public_urls", "_targets", "base_url", "signer",
        "user_agent",
    )

    def __init__(self, base_url: URL, signer: Signer | None, user_agent: str | None) -> None:
        self.base_url = base_url
        #: Per operation, noted the first time it is called: its URL, and the names of the
        #: parameters its path holds (``/public/orderbook/{market}``), whose URL is made per
        #: request.
        self._targets: dict[str, tuple[URL, tuple[str, ...]]] = {}
        #: The URL of each public read made so far, by operation and parameters.
        self._public_urls: dict[tuple[Any, ...], URL] = {}
        #: Signs private requests (None: the client serves public operations only).
        self.signer = signer
        agent = default_user_agent()
        self.user_agent = f"{user_agent} {agent}" if user_agent else agent
        self._plain_headers = {"User-Agent": self.user_agent}
        self._form_headers = {
            "User-Agent": self.user_agent,
            "Content-Type": "application/x-www-form-urlencoded",
        }

    def build(
        self, op: Operation[Any], params: Mapping[str, Any], nonce: int | None
    ) -> tuple[URL, Mapping[str, str], bytes | None]:
        """The URL, headers and body of a request: signed with ``nonce`` (a new one for every
        attempt), or unsigned when there is none."""
        if nonce is None and op.auth is _NONE:
            # A public read: the same parameters make the same URL, made once.
            key = (op.name, *params.items())
            try:
                found = self._public_urls.get(key)
            except TypeError:  # a value that is no key (a list): made each time
                return self._public_url(op, params), self._plain_headers, None
            if found is None:
                found = self._public_url(op, params)
                if len(self._public_urls) >= _PUBLIC_URLS:
                    self._public_urls.clear()
                self._public_urls[key] = found
            return found, self._plain_headers, None
        target = self._targets.get(op.name)
        if target is None:
            target = self._target(op)
        url, path_params = target
        if path_params:
            url, path, params = self._filled(op.path, path_params, params)
        else:
            path = op.path
        signer = self.signer
        if nonce is not None and signer is not None:
            body, headers = signer.sign(path, params, nonce)
            headers["User-Agent"] = self.user_agent
            return url, headers, body
        if op.auth is _FORM:
            return url, self._form_headers, urllib.parse.urlencode(params).encode()
        if op.auth is _BEARER:
            # The caller's access token goes in the header, and nowhere else.
            params = dict(params)
            token = params.pop(BEARER_PARAM)
            headers = {**self._plain_headers, "Authorization": f"Bearer {token}"}
            if params:
                url = url.with_query({k: str(v) for k, v in params.items()})
            return url, headers, None
        if params:
            url = url.with_query({k: str(v) for k, v in params.items()})
        return url, self._plain_headers, None

    def _public_url(self, op: Operation[Any], params: Mapping[str, Any]) -> URL:
        """The URL of a public read of ``op`` with ``params`` (the path's, then the query's)."""
        target = self._targets.get(op.name)
        if target is None:
            target = self._target(op)
        url, path_params = target
        if path_params:
            url, _, params = self._filled(op.path, path_params, params)
        if params:
            url = url.with_query({k: str(v) for k, v in params.items()})
        return url


    def url(self, op: Operation[Any]) -> URL:
        """The URL of ``op`` (its path's parameters left as ``{name}``)."""
        target = self._targets.get(op.name)
        return (target if target is not None else self._target(op))[0]

    def _target(self, op: Operation[Any]) -> tuple[URL, tuple[str, ...]]:
        url = self.base_url.with_path(self.base_url.path.rstrip("/") + op.path)
        target = self._targets[op.name] = (url, tuple(_PATH_PARAM.findall(op.path)))
        return target

    def _filled(
        self, template: str, names: tuple[str, ...], params: Mapping[str, Any]
    ) -> tuple[URL, str, Mapping[str, Any]]:
        """The URL and path of an operation whose path holds parameters, and the parameters left
        for the query or the body. Each value is quoted whole (a ``/`` in it cannot reach
        another path)."""
        path = template
        for name in names:
            path = path.replace(
                "{" + name + "}", urllib.parse.quote(str(params[name]), safe="")
            )
        rest = {key: value for key, value in params.items() if key not in names}
        url = self.base_url.with_path(self.base_url.raw_path.rstrip("/") + path, encoded=True)
        return url, path, rest


def mask_carried_secrets(
    exc: TxcError, op: Operation[Any], params: Mapping[str, Any],
    signed_headers: Mapping[str, str] | None,
) -> None:
    """Mask in ``exc`` what a request of ``op`` carried that no error may show (a server may
    quote what it was sent in its error text): the API key, the signature and payload of its
    last signed attempt (``signed_headers``), and its secret parameters."""
    if signed_headers is None and not op.secret_params:
        return
    secrets = [str(params[name]) for name in op.secret_params if name in params]
    if signed_headers is not None:
        secrets += [signed_headers.get(name, "") for name in _SIGNING_HEADERS]
    mask_secrets(exc, secrets)
