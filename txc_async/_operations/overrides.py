"""Where the generated declarations depart from the facts (``generator/facts.json``), each with
its source: the groups, the writes, the aliases of the hand-declared operations, the secrets,
and the operations this version cannot send. Read by ``generator/generate.py``."""

from __future__ import annotations

from typing import Any

__all__ = [
    "ALIASES",
    "BEARER_TOKEN",
    "DROPPED_PARAMS",
    "EXTRA_PARAMS",
    "GROUP_OF_TAG",
    "HAND_DECLARED",
    "NOT_DECIMAL",
    "SECRET_ANSWERS",
    "SECRET_PARAMS",
    "TAG_OF",
    "UNSENDABLE",
    "WRITES",
]

#: The module (and ``tag``) of each documentation tag (whitebit-exchange/docs, the ``tags`` of
#: each operation in openapi/public/http-v4.yaml, openapi/private/http-trade-v4.yaml,
#: openapi/private/main_api_v4.yaml and openapi/oauth2.yaml).
GROUP_OF_TAG: dict[str, str] = {
    "Public API V4": "market",
    "Collateral Trading": "collateral",
    "Spot Trading": "spot",
    "Market Fee": "fees",
    "Fees": "fees",
    "Main Account": "main_account",
    "Deposit": "deposits",
    "Withdraw": "withdrawals",
    "Transfer": "transfers",
    "Codes": "codes",
    "Crypto Lending - Fixed": "lending",
    "Crypto Lending - Flex": "lending",
    "Sub-Account": "sub_accounts",
    "Sub-Account API Keys": "sub_accounts",
    "Mining Pool": "mining",
    "JWT": "jwt",
    "Credit Line": "credit_line",
    "Travel Rule": "travel_rule",
    "Authentication": "oauth",
    "OAuth API Keys": "oauth",
}

#: Groups of operations the documents leave without a tag.
TAG_OF: dict[str, str] = {
    # openapi/private/http-trade-v4.yaml: /api/v4/convert/estimate, /confirm and /history carry
    # no tags; they are the convert pages of the documentation.
    "convert_estimate": "convert",
    "convert_confirm": "convert",
    "convert_history": "convert",
}

#: The generated names of the operations declared by hand (txc_async/_operations/public.py,
#: main_account.py, collateral.py, mining.py, oauth.py), which keep their own names, scopes and
#: limits: the generated name is an alias of the same declaration.
ALIASES: dict[str, str] = {
    "ping": "ping",
    "get_main_balance": "main_balance",
    "get_fixed_investments_history": "investments_history",
    "create_collateral_stop_limit_order": "collateral_stop_limit_order",
    "create_mining_account": "create_mining_account",
    "get_mining_rewards": "mining_rewards",
    "get_mining_hashrate": "mining_hashrate",
    "oauth2_refresh_token": "refresh_oauth_token",
}
#: The hand-declared names, for the checks that every operation is classified once.
HAND_DECLARED: frozenset[str] = frozenset(ALIASES.values())

#: Every operation that may change state (never sent again once it may have reached the
#: server). Every other one only reads. Each of the 129 operations is either here or a read;
#: tests/unit/test_whole_api.py lists all of them with their classification.
WRITES: frozenset[str] = frozenset({
    # collateral trading (openapi/private/http-trade-v4.yaml)
    "create_collateral_limit_order", "create_collateral_bulk_order",
    "create_collateral_market_order", "create_collateral_stop_limit_order",
    "create_collateral_trigger_market_order", "close_position",
    "change_collateral_account_leverage", "update_hedge_mode", "create_collateral_oco_order",
    "cancel_conditional_order", "cancel_oco_order", "cancel_oto_order",
    # convert: the confirmation executes the exchange; the estimate makes a quote that the
    # confirmation takes, so it is not sent twice either
    "convert_estimate", "convert_confirm",
    # spot trading
    "create_limit_order", "create_bulk_limit_order", "create_market_order",
    "create_stock_market_order", "create_stop_limit_order", "create_stop_market_order",
    "cancel_order", "cancel_bulk_orders", "cancel_all_orders", "modify_order", "set_kill_switch",
    # main account: addresses, tokens, withdrawals, transfers, codes, refunds
    "get_fiat_deposit_url", "issue_jwt_token", "get_web_socket_token", "issue_card_token",
    "refund_deposit", "create_withdraw", "create_withdraw_pay", "create_express_withdraw_token",
    "transfer_between_balances", "create_new_address", "create_code", "apply_code",
    # lending
    "create_fixed_investment", "close_fixed_investment", "create_flex_investment",
    "withdraw_from_flex_investment", "close_flex_investment", "update_flex_auto_reinvestment",
    # sub-accounts and their keys
    "create_sub_account", "delete_sub_account", "edit_sub_account", "sub_account_transfer",
    "block_sub_account", "unblock_sub_account", "confirm_sub_account_withdrawal",
    "create_sub_account_api_key", "edit_sub_account_api_key", "delete_sub_account_api_key",
    "reset_sub_account_api_key", "create_sub_account_api_key_ip_address",
    "delete_sub_account_api_key_ip_address", "get_sub_account_kyc_url",
    # mining
    "set_mining_payout_destination", "create_mining_watcher_link", "create_mining_account",
    # travel rule
    "submit_travel_rule_deposit_verification",
    # OAuth. The API key's secret is answered exactly once: asked again, the service answers
    # 409 and the key must be deleted (whitebit-exchange/docs, branch stage,
    # guides/fast-api-key-via-oauth.mdx), so a lost answer is not asked again either.
    "oauth2_token", "oauth2_refresh_token", "delete_oauth2_api_key", "oauth2_api_key_secret",
})

#: Parameters whose values are secrets (masked in errors, never on a command line), by
#: operation and wire name.
SECRET_PARAMS: frozenset[tuple[str, str]] = frozenset({
    # openapi/oauth2.yaml, /oauth2/token: the application's secret and a one-time grant
    ("oauth2_token", "client_secret"),
    ("oauth2_token", "code"),
    ("oauth2_token", "code_verifier"),
    # openapi/private/main_api_v4.yaml, applyCode: a code is money to whoever holds it
    ("apply_code", "code"),
})

#: Operations whose answers carry tokens, keys or codes: an error keeps only their shape.
SECRET_ANSWERS: frozenset[str] = frozenset({
    "oauth2_token", "issue_jwt_token", "get_web_socket_token", "create_express_withdraw_token",
    "create_sub_account_api_key", "reset_sub_account_api_key", "oauth2_api_key_secret",
    "create_code", "get_my_codes", "issue_card_token",
})

#: Parameters left out of a declaration, by operation and wire name.
DROPPED_PARAMS: frozenset[tuple[str, str]] = frozenset({
    # openapi/private/http-trade-v4.yaml, /api/v4/market/fee: a signed POST whose only
    # parameter is a query ``market`` that its page says the service ignores; the request is
    # the signed body alone.
    ("get_market_fee", "market"),
})

#: Answer fields holding numbers in strings that are identifiers, not amounts.
NOT_DECIMAL: frozenset[str] = frozenset({
    "id", "memo", "address", "code", "ticker", "network", "phone", "zip", "number", "account",
    "nonce", "request", "year", "month", "externalId", "unique_id", "transactionHash", "hash",
    "uniqueId", "title", "userId", "alias", "color", "name", "email", "provider",
})

#: Operations this version declares but cannot send as the service expects; a call is refused
#: before anything is sent, with the reason.
UNSENDABLE: dict[str, str] = {
    # openapi/private/main_api_v4.yaml, /api/card-token: a JWT Authorization header and its
    # own host, https://fgw.whitebit.com
    "issue_card_token": "it needs a JWT bearer token and the host https://fgw.whitebit.com",
}

#: Operations authenticated by an OAuth access token in an ``Authorization: Bearer`` header
#: (openapi/oauth2.yaml, /oauth2/api-key/*): the caller gives it as the secret parameter
#: ``access_token``, which is sent in that header and nowhere else.
BEARER_TOKEN: frozenset[str] = frozenset({
    "oauth2_api_key_info", "oauth2_api_key_secret", "delete_oauth2_api_key",
})

#: Parameters the pinned documents do not list yet, by operation, as facts' parameters are
#: written. ``code_verifier``: the PKCE verifier of the Fast API Key flow's token exchange
#: (whitebit-exchange/docs, branch stage, guides/fast-api-key-via-oauth.mdx: "POST to
#: /oauth2/token with client_id, client_secret, code, and code_verifier"; RFC 7636, section
#: 4.1: 43 to 128 characters).
EXTRA_PARAMS: dict[str, list[dict[str, Any]]] = {
    "oauth2_token": [{"in": "body", "name": "code_verifier", "required": False,
                      "schema": {"type": "string", "minLength": 43, "maxLength": 128}}],
}
