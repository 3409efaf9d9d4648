"""``oauth refresh`` and what becomes of the refresh token a refresh uses up.

Every refresh issues a new refresh token and the one used stops working. The new one is saved
where the used one came from: a profile's ``oauth_refresh_token`` in the configuration file
(only that value changes, the file replaced at once, its mode kept), said on stderr. One that
came from the environment cannot be changed by the command: stderr says how to keep the new
one. A refresh token refused as invalid is explained: used up or expired, and what to do.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable
from typing import TextIO

import txc_async

from ._arguments import PROG
from ._invocation import Invocation
from ._profiles import ConfigError, Settings, save_value
from ._render import Output
from ._writes import Write

_KEY = "oauth_refresh_token"


def refresh_command(args: argparse.Namespace, settings: Settings) -> Invocation:
    """``oauth refresh``: the application's id, secret and refresh token from the settings."""
    values = {
        "client_id": (settings.oauth_client_id, "TXC_OAUTH_CLIENT_ID"),
        "client_secret": (settings.oauth_client_secret, "TXC_OAUTH_CLIENT_SECRET"),
        "refresh_token": (settings.oauth_refresh_token, "TXC_OAUTH_REFRESH_TOKEN"),
    }
    missing = [variable for value, variable in values.values() if not value]
    if missing:
        raise ConfigError(f"oauth refresh needs {', '.join(missing)} (in the environment, or "
                          "oauth_* keys of a profile); secrets are never taken as arguments")
    client_id, client_secret, refresh_token = (value or "" for value, _ in values.values())
    write = Write("oauth refresh", "Refresh the token",
                  "The refresh token may have been used up: if it is refused now, authorize "
                  "the application again for a new one.")

    async def call(client: txc_async.Client) -> object:
        return await refreshed(settings, client.refresh_oauth_token(
            client_id=client_id, client_secret=client_secret, refresh_token=refresh_token))

    def show(output: Output, token: object) -> int:
        output.fields(token, "OAuth token")
        return 0

    return Invocation(call, show, write=write)


async def refreshed(settings: Settings, exchange: Awaitable[object]) -> object:
    """The answer of a refresh that used the settings' refresh token, its new refresh token
    kept (`keep_refresh_token`); a refusal of the token used says what to do."""
    try:
        token = await exchange
    except txc_async.ApiError as exc:
        refused = refused_token(exc, settings)
        if refused is None:
            raise
        raise refused from None
    if isinstance(token, txc_async.OAuthToken):
        keep_refresh_token(settings, token)
    return token


def keep_refresh_token(
    settings: Settings, token: txc_async.OAuthToken, notes: TextIO | None = None
) -> None:
    """Save the new refresh token where the used one came from, and say so on ``notes``
    (stderr); where it cannot be saved, say how to keep it. Never writes a token to
    ``notes``."""
    import sys

    notes = sys.stderr if notes is None else notes
    if settings.profile is not None and _KEY not in settings.from_environment:
        path = settings.path
        assert path is not None
        try:
            save_value(path, settings.profile, _KEY, token.refresh_token)
        except (ConfigError, OSError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            print(f"{PROG}: warning: the new refresh token was not saved ({reason}): put the "
                  f"refresh_token above in {_KEY} of [profiles.{settings.profile}] in {path}; "
                  "the one used no longer works", file=notes)
            return
        print(f"{PROG}: the new refresh token was saved to [profiles.{settings.profile}] in "
              f"{path} (the one used no longer works)", file=notes)
        return
    print(f"{PROG}: the refresh token used no longer works, and TXC_OAUTH_REFRESH_TOKEN "
          "cannot be changed from here: set it to the refresh_token above before the next "
          f"refresh (with --json: jq -r .refresh_token), or keep it as {_KEY} of a profile "
          "(--profile NAME), where each new one is saved", file=notes)


def refused_token(error: txc_async.ApiError, settings: Settings) -> ConfigError | None:
    """A refresh token refused as invalid (``{"token": ["Invalid token."]}``), as what it
    means and what to do; None for any other refusal."""
    if "token" not in error.errors:
        return None
    reasons = " ".join(error.errors["token"]) or "refused"
    source = settings.source(_KEY) if settings.oauth_refresh_token else "TXC_OAUTH_REFRESH_TOKEN"
    return ConfigError(
        f"oauth refresh: the refresh token ({source}) was refused ({reasons}): it was used "
        "already (each refresh issues a new one) or it expired (one lives about 10 minutes). "
        f"Authorize the application again for a new one and put it in {source}"
    )
