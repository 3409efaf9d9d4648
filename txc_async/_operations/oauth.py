"""The OAuth operations (``/oauth2/*``): form bodies that carry their own credentials."""

from __future__ import annotations

from .._answers.results import AnswerDecoder
from .._limiters.base import RateLimit
from .._models import OAuthToken, _OAuthEnvelope
from .._validate import text
from .declaration import Auth, Operation, Param

__all__ = ["AUTHORIZATION_CODE_REMOVED", "REFRESH_OAUTH_TOKEN"]

#: The service's notice (whitebit-exchange/docs, branch ``stage`` at 0c9303a,
#: platform/oauth/overview.mdx and guides/fast-api-key-via-oauth.mdx).
AUTHORIZATION_CODE_REMOVED = (
    "the service's documentation (whitebit-exchange/docs, branch stage, "
    "platform/oauth/overview.mdx) announces that the OAuth 2.0 authorization-code flow, refresh "
    "included, is removed on 2026-11-01; the Fast API Key flow (guides/fast-api-key-via-oauth.mdx:"
    " oauth2_token with code_verifier, then the oauth2_api_key_* operations) issues no refresh "
    "token"
)


def _oauth(answer: _OAuthEnvelope) -> OAuthToken:
    return answer.data.token()


REFRESH_OAUTH_TOKEN: Operation[OAuthToken] = Operation(
    name="refresh_oauth_token", method="POST", path="/oauth2/refresh_token",
    auth=Auth.FORM, retry_safe=False,
    decode=AnswerDecoder(_OAuthEnvelope, _oauth, write=True, secret_answer=True),
    scope="refresh_oauth_token", rate_limit=RateLimit(1, 1.0), tag="oauth",
    summary="exchange a refresh token for a new access token (the old one stops working)",
    deprecated=AUTHORIZATION_CODE_REMOVED,
    params=(
        Param("client_id", kind="text", required=True, check=text(max_length=512),
              help="the OAuth application's client id"),
        Param("client_secret", kind="text", required=True, check=text(max_length=512),
              secret=True, help="the OAuth application's client secret"),
        Param("refresh_token", kind="text", wire=("token",), required=True,
              check=text(max_length=4096), secret=True, help="the refresh token to exchange"),
    ),
)
