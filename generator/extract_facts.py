"""Reads the exchange's OpenAPI documents at one commit of its documentation repository and writes
``generator/facts.json``: every operation's name, path, method, parameters, limits and answers.

The facts file holds facts only (names, types, enums, limits, numbers and example values), never
the documents' prose; the code generator reads it instead of the documents.

    python generator/extract_facts.py --repo PATH_TO_DOCS_REPOSITORY [--commit SHA] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import posixpath
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPOSITORY = "whitebit-exchange/docs"
COMMIT = "4a67f22deab047617e65230197a8a605835b536a"
FACTS = Path(__file__).resolve().with_name("facts.json")
FORMAT_VERSION = 1

#: A node of a parsed document: mappings, lists and scalars as JSON has them.
Node = Any
Facts = dict[str, Any]


class FactsError(Exception):
    """The documents say something the facts file cannot hold without a decision."""


@dataclass(frozen=True)
class Document:
    """One OpenAPI document and which of its operations belong to the API v4."""

    path: str
    #: Put before a component's name when another document names a component the same way.
    prefix: str
    #: How an operation without an operationId is named: "public" or "oauth" (by its path).
    naming: str
    #: The operations taken, as (METHOD, path); None takes every one.
    only: frozenset[tuple[str, str]] | None
    expected: int


DOCUMENTS = (
    Document("openapi/public/http-v4.yaml", "Public", "public", None, 14),
    Document("openapi/private/http-trade-v4.yaml", "Trade", "", None, 45),
    Document("openapi/private/main_api_v4.yaml", "Main", "", None, 65),
    Document(
        "openapi/oauth2.yaml", "OAuth", "oauth",
        frozenset({
            ("POST", "/oauth2/token"),
            ("POST", "/oauth2/refresh_token"),
            ("GET", "/oauth2/api-key/info"),
            ("GET", "/oauth2/api-key/{externalId}/secret"),
            ("DELETE", "/oauth2/api-key/{externalId}"),
        }),
        5,
    ),
)
PUBLIC_PREFIX = "/api/v4/public/"
METHODS = ("get", "post", "put", "patch", "delete")
#: The signer writes these into every signed body; the caller never passes them.
SIGNED_BODY_FIELDS = ("request", "nonce")
SIGNED_HEADERS = frozenset({"X-TXC-APIKEY", "X-TXC-PAYLOAD", "X-TXC-SIGNATURE"})

# What a compact schema keeps as it is; the rest is either walked or prose that is left out.
SCHEMA_VALUES = frozenset({
    "type", "format", "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems",
    "minProperties", "maxProperties", "nullable", "default", "example", "deprecated",
    "readOnly", "writeOnly", "required",
})
SCHEMA_PROSE = frozenset({"description", "title", "externalDocs", "xml"})
PARAMETER_KEYS = frozenset({
    "name", "in", "required", "schema", "example", "deprecated", "style", "explode",
    "description",
})
OPERATION_KEYS = frozenset({
    "operationId", "summary", "description", "tags", "security", "parameters", "requestBody",
    "responses", "servers", "externalDocs",
})

# Every "N requests" a description states must be one of these spellings, or the run fails.
_LIMIT = re.compile(
    r"(?P<requests>\d[\d,]*)\s+requests?\s*"
    r"(?:/\s*(?P<seconds>\d+)\s*(?:sec(?:onds?)?|s)\b|per\s+(?P<unit>second|minute|hour)\b)",
    re.IGNORECASE,
)
_MENTION = re.compile(r"\d[\d,]*\s+requests?\b", re.IGNORECASE)
_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600}
_RATE_LIMIT_WORDS = re.compile(r"rate[ -]limit", re.IGNORECASE)
_ERROR_CODES_LIST = re.compile(
    r'<Accordion title="Error Codes">(?P<body>.*?)</Accordion>', re.DOTALL,
)
_LISTED_CODE = re.compile(r"^\s*-\s*`(?P<code>-?\d+)`", re.MULTILINE)
_JSON_BLOCK = re.compile(r"```json\s*\n(?P<body>.*?)```", re.DOTALL)


class _JsonLikeLoader(yaml.SafeLoader):
    """Reads scalars as a JSON schema would: only true/false are booleans, dates and sexagesimal
    numbers stay strings, so that a country code NO or a time 10:30 keeps its text."""


_JsonLikeLoader.yaml_implicit_resolvers = {
    first: [
        (tag, regexp) for tag, regexp in resolvers
        if tag not in {
            "tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp",
            "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
        }
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_JsonLikeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|false)$"), list("tf"),
)
_JsonLikeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^-?(?:0|[1-9][0-9]*)$"), list("-0123456789"),
)
_JsonLikeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$"),
    list("-0123456789"),
)


class Corpus:
    """The documents at one commit, each read once, and the ``$ref``s between them."""

    def __init__(self, repo: Path, commit: str) -> None:
        self.repo = repo
        self.commit = commit
        self._documents: dict[str, Node] = {}

    def load(self, path: str) -> Node:
        """The parsed document at ``path`` (relative to the repository's root)."""
        if path not in self._documents:
            shown = subprocess.run(
                ["git", "-C", str(self.repo), "show", f"{self.commit}:{path}"],
                capture_output=True, text=True, check=False,
            )
            if shown.returncode != 0:
                raise FactsError(f"cannot read {path} at {self.commit}: {shown.stderr.strip()}")
            self._documents[path] = yaml.load(shown.stdout, Loader=_JsonLikeLoader)
        return self._documents[path]

    def resolve(self, ref: str, base: str) -> tuple[str, str, Node]:
        """The document, the JSON pointer and the node a ``$ref`` made in ``base`` names."""
        target, _, pointer = ref.partition("#")
        path = base
        if target:
            path = posixpath.normpath(posixpath.join(posixpath.dirname(base), target))
        node = self.load(path)
        for part in pointer.split("/")[1:]:
            key = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, list):
                node = node[int(key)]
            elif isinstance(node, dict) and key in node:
                node = node[key]
            else:
                raise FactsError(f"unresolved $ref {ref!r} in {base}")
        return path, pointer, node

    def deref(self, node: Node, base: str) -> tuple[str, Node]:
        """``node`` itself, or what its ``$ref`` names (followed until a node has none)."""
        seen: set[str] = set()
        while isinstance(node, dict) and "$ref" in node:
            if node["$ref"] in seen:
                raise FactsError(f"circular $ref {node['$ref']!r} in {base}")
            seen.add(node["$ref"])
            base, _, node = self.resolve(node["$ref"], base)
        return base, node


class Schemas:
    """Turns schemas into compact ones, keeping each named component by name in one table."""

    def __init__(self, corpus: Corpus, names: dict[tuple[str, str], str]) -> None:
        self.corpus = corpus
        self.names = names
        self.table: dict[str, Facts] = {}
        self._building: set[str] = set()

    def compact(self, node: Node, base: str, where: str) -> Facts:
        """The compact form of the schema ``node`` read in the document ``base``."""
        if not isinstance(node, dict):
            raise FactsError(f"{where}: a schema must be a mapping, not {node!r}")
        if "$ref" in node:
            return self._reference(node, base, where)
        allof = node.get("allOf")
        if isinstance(allof, list) and len(allof) == 1:
            # allOf of one schema is how OpenAPI 3.0 puts nullable beside a $ref.
            rest = {key: value for key, value in node.items() if key != "allOf"}
            return {**self.compact(allof[0], base, where), **self.compact(rest, base, where)}
        return self._walk(node, base, where)

    def _walk(self, node: dict[str, Node], base: str, where: str) -> Facts:
        compact: Facts = {}
        for key, value in node.items():
            here = f"{where}.{key}"
            if key in SCHEMA_PROSE or key.startswith("x-"):
                continue
            if key in SCHEMA_VALUES:
                compact[key] = value
            elif key == "items":
                compact[key] = self.compact(value, base, here)
            elif key == "properties":
                compact[key] = {
                    name: self.compact(child, base, f"{here}.{name}")
                    for name, child in value.items()
                }
            elif key == "additionalProperties" and isinstance(value, bool):
                compact[key] = value
            elif key == "additionalProperties":
                compact[key] = self.compact(value, base, here)
            elif key in ("oneOf", "anyOf", "allOf"):
                compact[key] = [
                    self.compact(child, base, f"{here}[{index}]")
                    for index, child in enumerate(value)
                ]
            else:
                raise FactsError(f"{where}: unknown schema keyword {key!r}")
        return compact

    def _reference(self, node: dict[str, Node], base: str, where: str) -> Facts:
        path, pointer, target = self.corpus.resolve(node["$ref"], base)
        siblings = self._walk(
            {key: value for key, value in node.items() if key != "$ref"}, base, where,
        )
        match = re.fullmatch(r"/components/schemas/([^/]+)", pointer)
        if match is None:
            return {**self.compact(target, path, where), **siblings}
        return {"$schema_name": self._named(path, match.group(1), target), **siblings}

    def _named(self, path: str, component: str, target: Node) -> str:
        name = self.names.get((path, component)) or _qualified(path, component)
        known = self.table.get(name)
        if known is not None and (known["source"], known["component"]) != (path, component):
            raise FactsError(f"two components are both named {name!r} in the facts")
        if known is None and name not in self._building:
            self._building.add(name)
            schema = self.compact(target, path, f"{path}#/components/schemas/{component}")
            self.table[name] = {"component": component, "source": path, "schema": schema}
            self._building.discard(name)
        return name


def _qualified(path: str, component: str) -> str:
    stem = re.sub(r"[^0-9A-Za-z]+", " ", posixpath.basename(path).rsplit(".", 1)[0])
    return "".join(word.capitalize() for word in stem.split()) + component


def component_names(corpus: Corpus) -> dict[tuple[str, str], str]:
    """Each component's name in the facts: its own, or prefixed by its document's where two
    documents use the same name (``FeeInfo`` -> ``PublicFeeInfo`` and ``MainFeeInfo``)."""
    owners: dict[tuple[str, str], Document] = {}
    for document in DOCUMENTS:
        for component in corpus.load(document.path).get("components", {}).get("schemas", {}):
            owners[(document.path, component)] = document
    uses = Counter(component for _, component in owners)
    return {
        (path, component): document.prefix + component if uses[component] > 1 else component
        for (path, component), document in owners.items()
    }


def snake_case(identifier: str) -> str:
    """``createLimitOrder`` -> ``create_limit_order`` (``getKYCUrl`` -> ``get_kyc_url``)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", identifier)
    return re.sub(r"[^0-9a-zA-Z]+", "_", spaced).strip("_").lower()


def _path_words(path: str) -> list[str]:
    return [
        word for segment in path.strip("/").split("/") if not segment.startswith("{")
        for word in re.split(r"[^0-9a-zA-Z]+", segment) if word
    ]


def operation_name(document: Document, method: str, path: str, operation_id: str | None) -> str:
    """The operation's name: its operationId in snake_case, else one made of its path."""
    if operation_id:
        return snake_case(operation_id)
    if document.naming == "public" and path.startswith(PUBLIC_PREFIX):
        name = "_".join(_path_words(path[len(PUBLIC_PREFIX):]))
    elif document.naming == "oauth":
        name = "_".join(_path_words(path))
    else:
        raise FactsError(f"{method} {path} in {document.path} has no operationId to name it by")
    name = name.lower()
    return f"delete_{name}" if method == "DELETE" else name


def parse_rate_limit(text: str, where: str) -> Facts | None:
    """The one limit ``text`` states ("Rate limit: 1000 requests/10 sec.", "1 request per
    second", ...), or None; a count of requests in any other spelling fails the run."""
    limits = {match.start(): match for match in _LIMIT.finditer(text)}
    for mention in _MENTION.finditer(text):
        if mention.start() not in limits:
            raise FactsError(f"{where}: unknown rate limit spelling {mention.group(0)!r}")
    found = {
        (
            int(match["requests"].replace(",", "")),
            int(match["seconds"]) if match["seconds"] else _UNIT_SECONDS[match["unit"].lower()],
        )
        for match in limits.values()
    }
    if len(found) > 1:
        raise FactsError(f"{where}: several rate limits {sorted(found)}")
    if not found:
        return None
    ((requests, seconds),) = found
    return {"requests": requests, "seconds": seconds}


def rate_limit_facts(description: str, default: Facts | None, where: str) -> Facts:
    """The rate limit, where it came from, and why there is none when there is none."""
    stated = parse_rate_limit(description, where)
    if stated is not None:
        return {"rate_limit": stated, "rate_limit_source": "operation", "rate_limit_reason": None}
    if default is not None:
        return {"rate_limit": default, "rate_limit_source": "document", "rate_limit_reason": None}
    # Some pages refer to the standard limits without a number, most say nothing at all.
    reason = "mentioned_without_number" if _RATE_LIMIT_WORDS.search(description) \
        else "not_stated"
    return {"rate_limit": None, "rate_limit_source": None, "rate_limit_reason": reason}


class Extractor:
    """Builds the facts of every operation of the documents from one corpus."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.schemas = Schemas(corpus, component_names(corpus))

    def facts(self) -> Facts:
        """The whole facts file: its source, the operations and the named schemas."""
        operations: list[Facts] = []
        counts: dict[str, int] = {}
        limits: dict[str, Facts | None] = {}
        for document in DOCUMENTS:
            spec = self.corpus.load(document.path)
            limits[document.path] = parse_rate_limit(
                spec.get("info", {}).get("description") or "", document.path,
            )
            found = [
                self.operation(document, method, path, operation, limits[document.path])
                for method, path, operation in _operations(document, spec)
            ]
            if len(found) != document.expected:
                raise FactsError(
                    f"{document.path}: {len(found)} operations, {document.expected} expected",
                )
            counts[document.path] = len(found)
            operations.extend(found)
        _check_unique([operation["name"] for operation in operations])
        return {
            "source": {
                "repository": REPOSITORY,
                "commit": self.corpus.commit,
                "files": [document.path for document in DOCUMENTS],
                "operations_per_file": counts,
                "rate_limit_defaults": limits,
            },
            "format_version": FORMAT_VERSION,
            "auth_schemes": {
                "none": {},
                "signed": {"headers": sorted(SIGNED_HEADERS), "body_fields": ["request", "nonce"]},
                "form": {"content_type": "application/x-www-form-urlencoded"},
                "bearer": {"header": "Authorization", "scheme": "Bearer"},
            },
            "operations": operations,
            "schemas": self.schemas.table,
        }

    def operation(
        self, document: Document, method: str, path: str, operation: Node,
        default_limit: Facts | None,
    ) -> Facts:
        """The facts of one operation."""
        where = f"{method} {path} ({document.path})"
        unknown = set(operation) - OPERATION_KEYS
        if unknown:
            raise FactsError(f"{where}: unknown keys {sorted(unknown)}")
        spec = self.corpus.load(document.path)
        body = self.request_body(document.path, operation, where)
        params = self.parameters(document.path, operation, where) + body["params"]
        _check_unique([param["name"] for param in params], where)
        names = {param["name"] for param in params}
        description = operation.get("description") or ""
        return {
            "name": operation_name(document, method, path, operation.get("operationId")),
            "operation_id": operation.get("operationId"),
            "method": method,
            "path": path,
            "source": document.path,
            "tags": list(operation.get("tags") or []),
            "auth": _auth(spec, operation, method, body["content_type"], where),
            "servers": [server["url"] for server in operation["servers"]]
            if "servers" in operation else None,
            **rate_limit_facts(description, default_limit, where),
            "params": params,
            "body_content_type": body["content_type"],
            "body_schema_name": body["schema_name"],
            "signed_body_fields": body["signed_fields"],
            "has_request_nonce": set(SIGNED_BODY_FIELDS) <= set(body["signed_fields"]),
            "answer": self.answer(document.path, operation, where),
            "errors": self.errors(document.path, operation, description, where),
            "paged": {"limit", "offset"} <= names,
        }

    def parameters(self, base: str, operation: Node, where: str) -> list[Facts]:
        """The path and query parameters, in the order the document lists them."""
        params: list[Facts] = []
        for raw in operation.get("parameters") or []:
            path, param = self.corpus.deref(raw, base)
            unknown = set(param) - PARAMETER_KEYS
            if unknown or param.get("in") not in ("path", "query"):
                raise FactsError(f"{where}: parameter {param.get('name')!r} {sorted(unknown)}")
            schema = self.schemas.compact(param.get("schema", {}), path, f"{where}:{param['name']}")
            if "example" in param:
                schema.setdefault("example", param["example"])
            params.append({
                "name": param["name"],
                "in": param["in"],
                "required": bool(param.get("required", param["in"] == "path")),
                "schema": schema,
            })
        return params

    def request_body(self, base: str, operation: Node, where: str) -> Facts:
        """The body's content type, its fields as parameters, and the signer's fields present."""
        found: Facts = {"content_type": None, "schema_name": None, "params": [],
                        "signed_fields": []}
        if "requestBody" not in operation:
            return found
        path, body = self.corpus.deref(operation["requestBody"], base)
        if len(body["content"]) != 1:
            raise FactsError(f"{where}: request content types {sorted(body['content'])}")
        ((content_type, content),) = body["content"].items()
        schema_node = content.get("schema", {})
        schema_name = None
        if "$ref" in schema_node:
            schema_name = self.schemas.compact(schema_node, path, where).get("$schema_name")
        path, schema_node = self.corpus.deref(schema_node, path)
        if schema_node.get("type", "object") != "object" or \
                {"oneOf", "anyOf", "allOf"} & set(schema_node):
            raise FactsError(f"{where}: the request body is not a plain object")
        required = set(schema_node.get("required") or [])
        for name, child in (schema_node.get("properties") or {}).items():
            if name in SIGNED_BODY_FIELDS:
                found["signed_fields"].append(name)
                continue
            found["params"].append({
                "name": name,
                "in": "body",
                "required": name in required,
                "schema": self.schemas.compact(child, path, f"{where}:{name}"),
            })
        found["signed_fields"].sort()
        return {**found, "content_type": content_type, "schema_name": schema_name}

    def answer(self, base: str, operation: Node, where: str) -> Facts:
        """The success answer: its status, content type, schema and example values."""
        responses = {str(status): node for status, node in operation["responses"].items()}
        success = sorted(status for status in responses if status.startswith("2"))
        if len(success) != 1:
            raise FactsError(f"{where}: success statuses {success}")
        path, response = self.corpus.deref(responses[success[0]], base)
        return {"status": int(success[0]), **self.content(path, response, f"{where}:answer")}

    def errors(self, base: str, operation: Node, description: str, where: str) -> Facts:
        """The error statuses, their schemas and the codes their example bodies carry."""
        answers: list[Facts] = []
        for status, raw in operation["responses"].items():
            status = str(status)
            if status.startswith("2"):
                continue
            path, response = self.corpus.deref(raw, base)
            content = self.content(path, response, f"{where}:{status}")
            examples = [*content.pop("examples").values(), *self._schema_example(content["schema"])]
            answers.append({
                "status": int(status) if status.isdigit() else status,
                **content,
                "example_codes": _codes(examples),
                "example_shapes": sorted({_shape(example) for example in examples}),
            })
        answers.sort(key=lambda answer: str(answer["status"]))
        return {"responses": answers, "described_codes": described_error_codes(description)}

    def _schema_example(self, schema: Facts | None) -> list[Node]:
        """The example a response's schema gives of the whole body, if it gives one."""
        while schema is not None and "$schema_name" in schema:
            schema = self.schemas.table[schema["$schema_name"]]["schema"]
        return [schema["example"]] if schema is not None and "example" in schema else []

    def content(self, base: str, response: Node, where: str) -> Facts:
        """A response's JSON content: type, compact schema and example values by name."""
        contents = response.get("content") or {}
        if not contents:
            return {"content_type": None, "schema": None, "examples": {}}
        if len(contents) != 1:
            raise FactsError(f"{where}: several content types {sorted(contents)}")
        ((content_type, content),) = contents.items()
        examples: Facts = {}
        if "example" in content:
            examples["example"] = content["example"]
        for name, raw in (content.get("examples") or {}).items():
            _, example = self.corpus.deref(raw, base)
            if "value" in example:
                examples[name] = example["value"]
        schema = content.get("schema")
        return {
            "content_type": content_type,
            "schema": None if schema is None else self.schemas.compact(schema, base, where),
            "examples": examples,
        }


def _operations(document: Document, spec: Node) -> Iterable[tuple[str, str, Node]]:
    for path, item in spec.get("paths", {}).items():
        if set(item) - set(METHODS):
            raise FactsError(f"{document.path} {path}: path-level keys {sorted(item)}")
        for method in METHODS:
            if method in item and (document.only is None
                                   or (method.upper(), path) in document.only):
                yield method.upper(), path, item[method]


def _auth(spec: Node, operation: Node, method: str, content_type: str | None, where: str) -> str:
    requirements = operation.get("security", spec.get("security")) or []
    if not requirements:
        if content_type == "application/x-www-form-urlencoded":
            return "form"
        if method == "GET" and content_type is None:
            return "none"
        raise FactsError(f"{where}: no security and neither a public GET nor a form")
    if len(requirements) != 1:
        raise FactsError(f"{where}: several security alternatives")
    schemes = spec.get("components", {}).get("securitySchemes", {})
    used = [schemes[name] for name in requirements[0]]
    if all(s.get("type") == "apiKey" and s.get("in") == "header" for s in used) \
            and {s.get("name") for s in used} == SIGNED_HEADERS:
        return "signed"
    if len(used) == 1 and used[0].get("type") == "http" and used[0].get("scheme") == "bearer":
        return "bearer"
    raise FactsError(f"{where}: unknown security {requirements}")


def _shape(example: Node) -> tuple[str, ...]:
    """An example body's top-level keys, or the JSON type of a body that is not an object."""
    if isinstance(example, dict):
        return tuple(sorted(example))
    return ("array",) if isinstance(example, list) else (type(example).__name__,)


def _codes(examples: Iterable[Node]) -> list[int]:
    return sorted({
        example["code"] for example in examples
        if isinstance(example, dict) and isinstance(example.get("code"), int)
    })


def described_error_codes(description: str) -> list[int]:
    """The codes an operation's page lists under "Error Codes" or shows in JSON error bodies."""
    codes = {
        int(match["code"])
        for listing in _ERROR_CODES_LIST.finditer(description)
        for match in _LISTED_CODE.finditer(listing["body"])
    }
    for block in _JSON_BLOCK.finditer(description):
        try:
            body = json.loads(block["body"])
        except json.JSONDecodeError:
            continue
        codes.update(_codes([body] if isinstance(body, dict) else []))
    return sorted(codes)


def _check_unique(names: Sequence[str], where: str = "operations") -> None:
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated:
        raise FactsError(f"{where}: names used twice: {repeated}")


def render(facts: Facts) -> bytes:
    """The facts file's bytes: its sections in their order (the source first), every key inside
    them sorted, one-space indent, a final newline."""
    sections = {name: _sorted_keys(value) for name, value in facts.items()}
    return (json.dumps(sections, indent=1, ensure_ascii=False) + "\n").encode()


def _sorted_keys(node: Node) -> Node:
    if isinstance(node, dict):
        return {key: _sorted_keys(node[key]) for key in sorted(node)}
    if isinstance(node, list):
        return [_sorted_keys(item) for item in node]
    return node


def main(argv: Sequence[str] | None = None) -> int:
    """Writes the facts file (or, with ``--check``, says whether it is up to date)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repo", type=Path, required=True,
                        help="a checkout or bare clone of " + REPOSITORY)
    parser.add_argument("--commit", default=COMMIT, help="the commit to read (default: pinned)")
    parser.add_argument("--out", type=Path, default=FACTS, help="where to write the facts")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when --out differs from a fresh extraction")
    args = parser.parse_args(argv)
    try:
        rendered = render(Extractor(Corpus(args.repo, args.commit)).facts())
    except FactsError as error:
        print(f"extract_facts: {error}", file=sys.stderr)
        return 2
    if args.check:
        current = args.out.read_bytes() if args.out.exists() else b""
        if current != rendered:
            print(f"extract_facts: {args.out} is not up to date", file=sys.stderr)
            return 1
        return 0
    args.out.write_bytes(rendered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
