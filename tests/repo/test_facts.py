"""The facts file of the whole API v4 (``generator/facts.json``): every documented operation once,
named by the rules of the names, with a method, a path, an auth, a rate limit and typed
parameters, and no prose; where the documents' repository is on the machine, exactly the bytes the
extractor writes from it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import txc_async

ROOT = Path(__file__).resolve().parents[2]
FACTS_FILE = ROOT / "generator" / "facts.json"
EXTRACTOR = ROOT / "generator" / "extract_facts.py"
COMMIT = "4a67f22deab047617e65230197a8a605835b536a"
DOCS_REPO = Path(os.environ.get("TXC_DOCS_REPO", "/work/.mirror/whitebit-exchange+docs/repo"))

PUBLIC = "openapi/public/http-v4.yaml"
TRADE = "openapi/private/http-trade-v4.yaml"
MAIN = "openapi/private/main_api_v4.yaml"
OAUTH = "openapi/oauth2.yaml"
COUNTS = {PUBLIC: 14, TRADE: 45, MAIN: 65, OAUTH: 5}
SCALAR_TYPES = {"string", "integer", "number", "boolean"}
KNOWN_TYPES = SCALAR_TYPES | {"array", "object"}

#: The names the rules give, as the names' rules state them.
NAMED_BY_THE_RULES = {
    ("POST", "/api/v4/order/new"): "create_limit_order",
    ("POST", "/api/v4/orders"): "get_active_orders",
    ("GET", "/api/v4/public/orderbook/{market}"): "orderbook",
    ("GET", "/api/v4/public/orderbook/depth/{market}"): "orderbook_depth",
    ("GET", "/api/v4/public/platform/status"): "platform_status",
    ("GET", "/api/v4/public/funding-history/{market}"): "funding_history",
    ("GET", "/api/v4/public/mining-pool"): "mining_pool",
    ("POST", "/oauth2/token"): "oauth2_token",
    ("GET", "/oauth2/api-key/{externalId}/secret"): "oauth2_api_key_secret",
    ("GET", "/oauth2/api-key/info"): "oauth2_api_key_info",
    ("DELETE", "/oauth2/api-key/{externalId}"): "delete_oauth2_api_key",
}

#: The client's eight hand-written operations: (method, path, operationId, generated name).
EXISTING = {
    "ping": ("GET", "/api/v4/public/ping", None, "ping"),
    "main_balance": ("POST", "/api/v4/main-account/balance", "getMainBalance", "get_main_balance"),
    "investments_history": (
        "POST", "/api/v4/main-account/smart/investments", "getFixedInvestmentsHistory",
        "get_fixed_investments_history",
    ),
    "collateral_stop_limit_order": (
        "POST", "/api/v4/order/collateral/stop-limit", "createCollateralStopLimitOrder",
        "create_collateral_stop_limit_order",
    ),
    "create_mining_account": (
        "POST", "/api/v4/mining/accounts/create", "createMiningAccount", "create_mining_account",
    ),
    "mining_rewards": ("POST", "/api/v4/mining/rewards", "getMiningRewards", "get_mining_rewards"),
    "mining_hashrate": (
        "POST", "/api/v4/mining/hashrate", "getMiningHashrate", "get_mining_hashrate",
    ),
    "refresh_oauth_token": ("POST", "/oauth2/refresh_token", None, "oauth2_refresh_token"),
}


@cache
def facts() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(FACTS_FILE.read_text(encoding="utf-8"))
    return loaded


def operations() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = facts()["operations"]
    return found


def by_route(method: str, path: str) -> dict[str, Any]:
    (operation,) = [op for op in operations() if (op["method"], op["path"]) == (method, path)]
    return operation


def by_name(name: str) -> dict[str, Any]:
    (operation,) = [op for op in operations() if op["name"] == name]
    return operation


def rule_name(operation: dict[str, Any]) -> str:
    """The name the rules give, written apart from the extractor's own code."""
    if operation["operation_id"]:
        words = re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", operation["operation_id"])
        return "_".join(word.lower() for word in words)
    path = operation["path"]
    if operation["source"] == PUBLIC:
        path = path.removeprefix("/api/v4/public/")
    parts = [part for part in path.strip("/").split("/") if not part.startswith("{")]
    name = "_".join(parts).replace("-", "_")
    return "delete_" + name if operation["method"] == "DELETE" else name


def schemas_in(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``schema`` and every schema inside it."""
    yield schema
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from schemas_in(schema[key])
    for child in schema.get("properties", {}).values():
        yield from schemas_in(child)
    for key in ("oneOf", "anyOf", "allOf"):
        for child in schema.get(key, []):
            yield from schemas_in(child)


def test_the_facts_name_their_source() -> None:
    assert next(iter(facts())) == "source"
    source = facts()["source"]
    assert source["repository"] == "whitebit-exchange/docs"
    assert source["commit"] == COMMIT
    assert source["files"] == [PUBLIC, TRADE, MAIN, OAUTH]
    assert source["operations_per_file"] == COUNTS


def test_129_operations_each_under_its_own_name() -> None:
    assert len(operations()) == 129
    assert Counter(op["source"] for op in operations()) == COUNTS
    names = [op["name"] for op in operations()]
    assert len(set(names)) == len(names)
    routes = [(op["method"], op["path"]) for op in operations()]
    assert len(set(routes)) == len(routes)
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", name) for name in names)


def test_every_operation_has_a_method_a_path_and_an_auth() -> None:
    expected_auth = {PUBLIC: {"none"}, TRADE: {"signed"}, MAIN: {"signed"},
                     OAUTH: {"form", "bearer"}}
    for op in operations():
        assert op["method"] in {"GET", "POST", "DELETE"}, op["name"]
        assert op["path"].startswith("/"), op["name"]
        assert op["auth"] in expected_auth[op["source"]], op["name"]
    assert by_route("POST", "/oauth2/refresh_token")["auth"] == "form"
    assert by_route("POST", "/oauth2/refresh_token")["body_content_type"] == \
        "application/x-www-form-urlencoded"
    assert by_route("GET", "/oauth2/api-key/info")["auth"] == "bearer"


def test_every_operation_has_a_rate_limit_or_says_why_not() -> None:
    for op in operations():
        limit = op["rate_limit"]
        if limit is None:
            assert op["rate_limit_source"] is None, op["name"]
            assert op["rate_limit_reason"] in {"not_stated", "mentioned_without_number"}
        else:
            assert set(limit) == {"requests", "seconds"}, op["name"]
            assert all(isinstance(v, int) and v > 0 for v in limit.values()), op["name"]
            assert op["rate_limit_source"] in {"operation", "document"}, op["name"]
            assert op["rate_limit_reason"] is None, op["name"]
    # One spelling each: "Rate limit: 1000 requests/10 sec.", "Rate limit 600 requests/10 sec.",
    # "10 requests/60 sec.", "1 request per second"; and the public document's default.
    assert by_name("get_main_balance")["rate_limit"] == {"requests": 1000, "seconds": 10}
    assert by_name("orderbook")["rate_limit"] == {"requests": 600, "seconds": 10}
    assert by_name("get_web_socket_token")["rate_limit"] == {"requests": 10, "seconds": 60}
    assert by_name("oauth2_refresh_token")["rate_limit"] == {"requests": 1, "seconds": 1}
    status = by_name("platform_status")
    assert (status["rate_limit"], status["rate_limit_source"]) == (
        {"requests": 2000, "seconds": 10}, "document",
    )


def test_parameters_are_of_known_types_and_leave_the_signer_its_fields() -> None:
    schemas = facts()["schemas"]
    for op in operations():
        for param in op["params"]:
            where = f"{op['name']}.{param['name']}"
            assert param["in"] in {"path", "query", "body"}, where
            assert param["name"] not in {"request", "nonce"}, where
            assert isinstance(param["required"], bool), where
            assert param["in"] != "body" or op["body_content_type"], where
            for schema in schemas_in(param["schema"]):
                if "$schema_name" in schema:
                    assert schema["$schema_name"] in schemas, where
                elif not {"oneOf", "anyOf", "allOf"} & set(schema):
                    assert schema.get("type") in KNOWN_TYPES, where
        assert op["answer"]["status"] in {200, 201}, op["name"]
        assert op["has_request_nonce"] == (op["signed_body_fields"] == ["nonce", "request"])
    stop_limit = by_name("create_collateral_stop_limit_order")
    assert [p["name"] for p in stop_limit["params"] if p["required"]] == \
        ["market", "side", "amount", "price", "activation_price"]


def test_every_named_schema_is_in_the_table() -> None:
    schemas = facts()["schemas"]
    bodies = [op["answer"]["schema"] for op in operations() if op["answer"]["schema"]]
    bodies += [entry["schema"] for entry in schemas.values()]
    bodies += [e["schema"] for op in operations() for e in op["errors"]["responses"] if e["schema"]]
    names = {s["$schema_name"] for body in bodies for s in schemas_in(body) if "$schema_name" in s}
    assert names <= set(schemas)
    assert by_name("get_mining_rewards")["answer"]["schema"]["properties"]["data"]["items"] == \
        {"$schema_name": "MiningReward"}


def test_the_facts_hold_no_prose() -> None:
    prose = {"description", "summary", "title", "externalDocs"}
    for op in operations():
        assert not prose & set(op), op["name"]
        bodies = [param["schema"] for param in op["params"]]
        bodies += [op["answer"]["schema"] or {}]
        bodies += [error["schema"] or {} for error in op["errors"]["responses"]]
        for body in bodies:
            # Keywords only: a field may well be called "title" on the wire.
            assert not any(prose & set(schema) for schema in schemas_in(body)), op["name"]
    for name, entry in facts()["schemas"].items():
        assert not any(prose & set(schema) for schema in schemas_in(entry["schema"])), name


@pytest.mark.parametrize(("route", "name"), sorted(NAMED_BY_THE_RULES.items()))
def test_names_follow_the_rules(route: tuple[str, str], name: str) -> None:
    assert by_route(*route)["name"] == name


def test_every_name_is_the_one_the_rules_give() -> None:
    for op in operations():
        assert op["name"] == rule_name(op), op["path"]


@pytest.mark.parametrize("existing", sorted(EXISTING))
def test_the_eight_existing_operations_and_their_generated_names(existing: str) -> None:
    method, path, operation_id, generated = EXISTING[existing]
    op = by_route(method, path)
    assert (op["operation_id"], op["name"]) == (operation_id, generated)
    assert callable(getattr(txc_async.Client, existing))


def test_signed_fields_as_documented() -> None:
    assert by_name("get_main_balance")["has_request_nonce"] is True
    # Documented without request and nonce although signed: the generator's overrides add them.
    assert by_name("get_mining_rewards")["has_request_nonce"] is False
    assert by_name("get_mining_hashrate")["has_request_nonce"] is False
    assert by_name("ping")["signed_body_fields"] == []


def test_paged_operations_take_limit_and_offset() -> None:
    for op in operations():
        names = {param["name"] for param in op["params"]}
        assert op["paged"] == ({"limit", "offset"} <= names), op["name"]
    assert by_name("get_mining_rewards")["paged"]
    assert by_name("get_fixed_investments_history")["paged"]
    assert by_name("funding_history")["paged"]
    assert not by_name("orderbook")["paged"]  # a limit without an offset
    assert not by_name("ping")["paged"]


def _snapshot_has_the_commit() -> bool:
    if not DOCS_REPO.exists():
        return False
    found = subprocess.run(
        ["git", "-C", str(DOCS_REPO), "cat-file", "-e", f"{COMMIT}^{{commit}}"],
        capture_output=True, check=False,
    )
    return found.returncode == 0


def test_rerunning_the_extractor_gives_the_same_bytes(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    if not _snapshot_has_the_commit():
        pytest.skip(f"no documentation repository with {COMMIT} at {DOCS_REPO} (TXC_DOCS_REPO)")
    out = tmp_path / "facts.json"
    run = subprocess.run(
        [sys.executable, str(EXTRACTOR), "--repo", str(DOCS_REPO), "--commit", COMMIT,
         "--out", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert run.returncode == 0, run.stderr
    assert out.read_bytes() == FACTS_FILE.read_bytes()
