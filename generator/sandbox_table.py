"""Writes the sandbox's own table of the service's operations from ``facts.json``.

    python generator/sandbox_table.py [--check]

Writes ``txc_async/sandbox/_documented.json``: per operation its name, method, path (with
``{param}`` placeholders), authentication, parameters (wire name, where, type, required, enum,
bounds), the documented success answer (the first documented example, or one made of the schema's
examples), the documented error examples, the shape of a validation refusal, its rate limit and its
group. The sandbox reads nothing of the client's tables (``txc_async._operations``): this table is
made from the facts alone, so that the sandbox stays an independent check of the client.
``--check`` writes nothing and exits 1 when the file differs from what it would write.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FACTS = ROOT / "generator" / "facts.json"
TABLE = ROOT / "txc_async" / "sandbox" / "_documented.json"

#: The groups of the service's rate limits, counted per IP address, by path prefix, and the
#: figure of the group every other path falls in (whitebit-exchange/docs at the facts' commit,
#: api-reference/rate-limits.mdx, "REST API rate limits", and data/rate-limits.yaml
#: ``scopeLimits``). The sandbox names the public group ``public_group``: ``public`` is ping's own
#: budget, as it always was.
GROUPS: tuple[tuple[str, str, int], ...] = (
    ("/api/v4/public/", "public_group", 20000),
    ("/api/v4/trade-account/", "trade_account", 12000),
    ("/api/v4/main-account/", "main_account", 1000),
)
DEFAULT_GROUP = ("default", 10000)
GROUP_SECONDS = 10

#: The endpoints whose own limit the rate-limit page states (data/rate-limits.yaml,
#: ``endpointLimits``, per 10 seconds), by method and path. Where an operation's own page states
#: a limit too, the two must agree (the generator stops otherwise); where neither does, the
#: endpoint is limited by its group alone.
PAGE_LIMITS: dict[tuple[str, str], int] = {
    ("GET", "/api/v4/public/markets"): 2000,
    ("GET", "/api/v4/public/ticker"): 2000,
    ("GET", "/api/v4/public/orderbook/{market}"): 600,
    ("POST", "/api/v4/trade-account/balance"): 12000,
    ("POST", "/api/v4/order/new"): 10000,
    ("POST", "/api/v4/order/market"): 10000,
    ("POST", "/api/v4/order/bulk"): 10000,
    ("POST", "/api/v4/order/cancel"): 10000,
    ("POST", "/api/v4/order/modify"): 10000,
    ("POST", "/api/v4/order/kill-switch"): 10000,
    ("POST", "/api/v4/collateral-account/balance"): 12000,
    ("POST", "/api/v4/order/collateral/limit"): 10000,
    ("POST", "/api/v4/order/collateral/bulk"): 10000,
    ("POST", "/api/v4/main-account/history"): 200,
}

#: The sandbox's names for the budgets of the operations it has simulated from the start, which
#: ``Sandbox(rate_limits=...)`` has always taken; every other operation's budget is its name.
BUDGET_NAMES: dict[str, str] = {
    "ping": "public",
    "get_main_balance": "main_balance",
    "get_fixed_investments_history": "investments",
    "create_collateral_stop_limit_order": "collateral_stop_limit_order",
    "create_mining_account": "create_mining_account",
    "get_mining_rewards": "mining_rewards",
    "get_mining_hashrate": "mining_hashrate",
    "oauth2_refresh_token": "refresh_oauth_token",
}

#: Where the service authenticates otherwise than the facts record. openapi/private/
#: main_api_v4.yaml, /api/card-token: "Authorization: JWT token from the Issue JWT token response
#: field data.token", on the Fiat Gateway's host; the facts record the document's signed scheme.
AUTH: dict[str, str] = {"issue_card_token": "jwt"}

#: String parameters that hold amounts: a number in a string, as the documents' examples show
#: ("0.01", "40000"). Identifiers spelt in digits (``uniqueId``, ``memo``, ``quoteId``) are text.
_AMOUNT = re.compile(r"amount|price|total|stopLoss|takeProfit", re.IGNORECASE)
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?")

#: The default shape of a signed operation's validation refusal (whitebit-exchange/docs,
#: api-reference/rate-limits.mdx, "Private endpoints"; code 30 "Validation failed" as
#: openapi/private/http-trade-v4.yaml's ErrorResponse example gives it).
_PRIVATE_REFUSAL = {"code": 30, "message": "Validation failed", "errors": {}}


def resolve(schema: Any, schemas: dict[str, Any]) -> dict[str, Any]:
    while isinstance(schema, dict) and "$schema_name" in schema:
        schema = schemas[schema["$schema_name"]]["schema"]
    return schema if isinstance(schema, dict) else {}


def example_of(schema: Any, schemas: dict[str, Any]) -> Any:
    """A value of ``schema`` made of the examples its parts give."""
    schema = resolve(schema, schemas)
    if "example" in schema:
        return schema["example"]
    if "oneOf" in schema or "anyOf" in schema:
        return example_of((schema.get("oneOf") or schema.get("anyOf"))[0], schemas)
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            value = example_of(part, schemas)
            if isinstance(value, dict):
                merged |= value
        return merged
    if schema.get("properties"):
        return {key: example_of(sub, schemas) for key, sub in schema["properties"].items()}
    if schema.get("type") == "array":
        return [example_of(schema.get("items"), schemas)]
    if isinstance(schema.get("additionalProperties"), dict):
        return {"BTC": example_of(schema["additionalProperties"], schemas)}
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    return {"string": "1", "integer": 1, "number": "1.5", "boolean": True,
            "object": {}}.get(schema.get("type", ""))


def param_spec(wire: str, schema: Any, schemas: dict[str, Any]) -> dict[str, Any]:
    """What the sandbox checks of one value: its type and the documented bounds."""
    schema = resolve(schema, schemas)
    kind = schema.get("type")
    if kind is None and ("properties" in schema or "additionalProperties" in schema):
        kind = "object"
    example = schema.get("example")
    if kind == "string" and (
        _AMOUNT.search(wire) and isinstance(example, str) and _NUMBER.fullmatch(example)
    ):
        kind = "decimal"
    if kind not in ("string", "decimal", "integer", "number", "boolean", "array", "object"):
        kind = "any"
    spec: dict[str, Any] = {"type": kind}
    for key, name in (("enum", "enum"), ("minimum", "minimum"), ("maximum", "maximum"),
                      ("minLength", "min_length"), ("maxLength", "max_length"),
                      ("pattern", "pattern"), ("format", "format"), ("minItems", "min_items"),
                      ("maxItems", "max_items"), ("nullable", "nullable")):
        if key in schema:
            spec[name] = schema[key]
    if kind == "array" and schema.get("items"):
        spec["items"] = param_spec(wire, schema["items"], schemas)
    if kind == "object" and schema.get("properties"):
        spec["properties"] = {
            name: param_spec(name, sub, schemas) for name, sub in schema["properties"].items()
        }
        if schema.get("required"):
            spec["required_properties"] = list(schema["required"])
    return spec


def group_of(path: str) -> tuple[str, int]:
    for prefix, name, limit in GROUPS:
        if path.startswith(prefix):
            return name, limit
    return DEFAULT_GROUP


def rate_limit_of(op: dict[str, Any]) -> dict[str, Any]:
    """The endpoint's own limit: its page's, the rate-limit page's, the document's stated
    default, or its group's figure (the group's window then always fills first)."""
    stated, source = op["rate_limit"], op["rate_limit_source"]
    page = PAGE_LIMITS.get((op["method"], op["path"]))
    if stated is not None and page is not None and (
        stated["requests"], stated["seconds"]) != (page, GROUP_SECONDS):
        raise SystemExit(f"{op['name']}: its page states {stated}, the rate-limit page {page}")
    if stated is not None and source == "operation":
        return {"requests": stated["requests"], "seconds": stated["seconds"],
                "source": "operation"}
    if page is not None:
        return {"requests": page, "seconds": GROUP_SECONDS, "source": "rate-limits page"}
    if stated is not None:
        return {"requests": stated["requests"], "seconds": stated["seconds"],
                "source": "document"}
    return {"requests": group_of(op["path"])[1], "seconds": GROUP_SECONDS, "source": "group"}


def errors_of(op: dict[str, Any], schemas: dict[str, Any]) -> list[dict[str, Any]]:
    """The documented error answers: status, the codes their examples show, and a body made of
    the schema's examples (None where the documents give no JSON body)."""
    found = []
    for response in op["errors"]["responses"]:
        schema = response["schema"]
        found.append({
            "status": response["status"],
            "codes": response["example_codes"],
            "body": example_of(schema, schemas) if schema is not None else None,
        })
    return found


def refusal_of(op: dict[str, Any], auth: str, schemas: dict[str, Any]) -> dict[str, Any]:
    """How the operation refuses a parameter: the status, and the body the per-field errors go
    into (``field`` names where; None: the body is the errors themselves)."""
    if auth == "none":
        # openapi/public/http-v4.yaml, PublicValidationError: "Flat field-keyed validation
        # error (HTTP 422) returned by the market-data endpoints".
        return {"status": 422, "body": {}, "field": None}
    candidates = []
    for response in op["errors"]["responses"]:
        if response["status"] not in (400, 422):
            continue
        schema = resolve(response["schema"], schemas)
        properties = schema.get("properties") or {}
        if "errors" not in properties:
            continue
        if {"code", "message"} <= properties.keys():
            codes = [c for c in response["example_codes"] if c in (0, 30)]
            body = {"code": codes[0] if codes else 30, "message": "Validation failed",
                    "errors": {}}
        else:
            body = {key: (example_of(sub, schemas) if key != "errors" else {})
                    for key, sub in properties.items()}
        candidates.append((response["status"] != 422, {"status": response["status"],
                                                        "body": body, "field": "errors"}))
    if candidates:
        return min(candidates, key=lambda pair: pair[0])[1]
    return {"status": 422, "body": dict(_PRIVATE_REFUSAL), "field": "errors"}


def operation(op: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    auth = AUTH.get(op["name"], op["auth"])
    answer = op["answer"]
    if answer["schema"] is None:
        body = None
    elif answer["examples"]:
        body = next(iter(answer["examples"].values()))
    else:
        body = example_of(answer["schema"], schemas)
    group = group_of(op["path"])[0]
    params = []
    for param in op["params"]:
        params.append({"name": param["name"], "in": param["in"], "required": param["required"],
                       **param_spec(param["name"], param["schema"], schemas)})
    return {
        "name": op["name"],
        "method": op["method"],
        "path": op["path"],
        "auth": auth,
        "tags": op["tags"],
        "budget": BUDGET_NAMES.get(op["name"], op["name"]),
        "group": group,
        "rate_limit": rate_limit_of(op),
        "params": params,
        "answer": {"status": answer["status"], "body": body, "empty": answer["schema"] is None},
        "refusal": refusal_of(op, auth, schemas),
        "errors": errors_of(op, schemas),
    }


def render() -> str:
    facts = json.loads(FACTS.read_text())
    schemas = facts["schemas"]
    source = facts["source"]
    groups = {name: {"requests": limit, "seconds": GROUP_SECONDS}
              for _, name, limit in GROUPS}
    groups[DEFAULT_GROUP[0]] = {"requests": DEFAULT_GROUP[1], "seconds": GROUP_SECONDS}
    operations = [operation(op, schemas) for op in facts["operations"]]
    budgets = [op["budget"] for op in operations]
    if len(set(budgets)) != len(budgets) or set(budgets) & groups.keys():
        raise SystemExit("a budget name is used twice")
    origin = {"repository": source["repository"], "commit": source["commit"]}
    lines = [
        "{",
        f' "source": {json.dumps(origin)},',
        ' "generated_by": "generator/sandbox_table.py from generator/facts.json",',
        f' "groups": {json.dumps(groups, sort_keys=True)},',
        ' "operations": [',
    ]
    rows = [" " + json.dumps(op, sort_keys=True, ensure_ascii=False) for op in operations]
    lines.append(",\n".join(rows))
    lines += [" ]", "}", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not TABLE.exists() or TABLE.read_text() != text:
            print(f"{TABLE.relative_to(ROOT)} is not what generator/sandbox_table.py writes; "
                  "run `make generate`")
            return 1
        return 0
    TABLE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
