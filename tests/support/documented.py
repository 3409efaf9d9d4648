"""The service's documented operations as generator/facts.json records them, and values made
of their examples: what tests of the whole API send and expect."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from txc_async import InvalidParameterError

FACTS = json.loads((Path(__file__).resolve().parents[2] / "generator" / "facts.json").read_text())
BY_NAME: dict[str, dict[str, Any]] = {op["name"]: op for op in FACTS["operations"]}
SCHEMAS: dict[str, Any] = FACTS["schemas"]


def resolve(schema: Any) -> dict[str, Any]:
    if isinstance(schema, dict) and "$schema_name" in schema:
        return resolve(SCHEMAS[schema["$schema_name"]]["schema"])
    return schema if isinstance(schema, dict) else {}


def example_of(schema: Any) -> Any:
    """A value of ``schema`` made of the examples its fields give (the documented answer where
    the operation gives none as a whole)."""
    schema = resolve(schema)
    if "example" in schema:
        return schema["example"]
    if "oneOf" in schema or "anyOf" in schema:
        return example_of((schema.get("oneOf") or schema.get("anyOf"))[0])
    if schema.get("properties"):
        return {key: example_of(sub) for key, sub in schema["properties"].items()}
    if schema.get("type") == "array":
        return [example_of(schema.get("items"))]
    if isinstance(schema.get("additionalProperties"), dict):
        return {"KEY": example_of(schema["additionalProperties"])}
    if "enum" in schema:
        return schema["enum"][0]
    # A string of digits: text, and an amount where the model reads one.
    return {"string": "1", "integer": 1, "number": "1.5", "boolean": True,
            "object": {}}.get(schema.get("type", ""))


def value_for(param: Any, schema: dict[str, Any]) -> Any:
    """A value ``param`` accepts: the documents' example when its check takes it."""
    schema = resolve(schema)
    candidates: list[Any] = []
    if "example" in schema:
        candidates.append(schema["example"])
    if param.kind == "list":
        item = resolve(schema.get("items"))
        candidates.append([example_of(item)] * max(1, schema.get("minItems", 1)))
        candidates.append([{k: example_of(item["properties"][k]) for k in item.get("required",
                                                                                 ())}]
                          if item.get("properties") else [])
    if param.kind == "object":
        candidates.append(example_of(schema))
    candidates += {"choice": list(param.choices), "decimal": [Decimal("1.5")],
                   "time": [1700000000], "boolean": [True], "integer": [1, 0],
                   "text": ["abc"]}.get(param.kind, [])
    for candidate in candidates:
        try:
            param.check(param.name, candidate)
        except InvalidParameterError:
            continue
        return candidate
    raise AssertionError(f"no valid value for {param.name}")
