"""Reads the error answers the exchange's OpenAPI documents give for each operation, at the commit
``facts.json`` names, and writes ``generator/error_facts.json``: every documented error example
body (with its status) and the meaning each page gives of its numeric error codes.

    python generator/extract_error_facts.py --repo PATH_TO_DOCS_REPOSITORY [--check]

``facts.json`` keeps no example bodies of errors and no text; this file holds the two things the
typed errors and the contract tests need from the error answers: the bodies, and the one-line
meaning of each listed code (``32`` on ``create_collateral_limit_order``: "amount validation
failed"), with links and markup taken out.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import extract_facts as ef

ERROR_FACTS = Path(__file__).resolve().with_name("error_facts.json")
FORMAT_VERSION = 1

#: A line of a code list: ``- `30` - default validation error code`` or ``- 5 - not enough
#: balance`` (an accordion "Error Codes" in the operation's description, or "Response error
#: codes:" in an error response's description).
_CODE_LINE = re.compile(r"^\s*-\s*`?(?P<code>-?\d+)`?\s+[-\u2013\u2014]\s+(?P<text>\S.*)$",
                        re.MULTILINE)
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")

Facts = dict[str, Any]


def clean(text: str) -> str:
    """A code's meaning as one plain line: links made their text, backticks and bold dropped,
    spaces collapsed, no final period."""
    text = _LINK.sub(r"\1", text).replace("`", "").replace("**", "")
    return " ".join(text.split()).rstrip(".")


def listed_meanings(text: str) -> list[tuple[int, str]]:
    """The (code, meaning) pairs of the code list lines of ``text``."""
    return [(int(match["code"]), clean(match["text"])) for match in _CODE_LINE.finditer(text)]


def is_error_body(body: object) -> bool:
    """A whole error answer's body, as the documents' error envelopes have it: ``{code,
    message, errors}``, ``{success: false, ...}``. (A bulk answer's per-item ``{result, error}``
    is part of a success answer, not one.)"""
    return isinstance(body, dict) and (
        ("message" in body and ("code" in body or "errors" in body))
        or body.get("success") is False
    )


class ErrorExtractor:
    """The error facts of every operation of one corpus."""

    def __init__(self, corpus: ef.Corpus) -> None:
        self.corpus = corpus

    def facts(self) -> Facts:
        operations: dict[str, Facts] = {}
        for document in ef.DOCUMENTS:
            spec = self.corpus.load(document.path)
            for method, path, operation in ef._operations(document, spec):
                name = ef.operation_name(document, method, path, operation.get("operationId"))
                operations[name] = self.operation(document.path, operation)
        return {
            "source": {
                "repository": ef.REPOSITORY,
                "commit": self.corpus.commit,
                "files": [document.path for document in ef.DOCUMENTS],
            },
            "format_version": FORMAT_VERSION,
            "operations": operations,
        }

    def operation(self, base: str, operation: ef.Node) -> Facts:
        meanings: list[Facts] = []
        examples: list[Facts] = []
        description = operation.get("description") or ""
        for listing in ef._ERROR_CODES_LIST.finditer(description):
            for code, text in listed_meanings(listing["body"]):
                meanings.append({"code": code, "status": None, "text": text})
        statuses: list[tuple[int, set[int], bool]] = []  # status, its codes, JSON content
        for status_key, raw in operation["responses"].items():
            status_text = str(status_key)
            if status_text.startswith("2") or not status_text.isdigit():
                continue
            status = int(status_text)
            path, response = self.corpus.deref(raw, base)
            codes: set[int] = set()
            for code, text in listed_meanings(response.get("description") or ""):
                meanings.append({"code": code, "status": status, "text": text})
                codes.add(code)
            found = self.response_examples(path, response, status)
            codes.update(e["body"]["code"] for e in found
                         if isinstance(e["body"], dict) and isinstance(e["body"].get("code"), int))
            statuses.append((status, codes, bool(response.get("content"))))
            examples.extend(found)
        blocks = [json.loads(block["body"]) for block in ef._JSON_BLOCK.finditer(description)
                  if _is_json(block["body"])]
        for index, body in enumerate(b for b in blocks if is_error_body(b)):
            status, how = _status_of(body, statuses)
            examples.append({"name": f"description-{index + 1}", "status": status, "body": body,
                             "documented_in": "description", "status_from": how})
        meanings.sort(key=lambda m: (m["code"], -1 if m["status"] is None else m["status"]))
        return {"meanings": _unique(meanings), "examples": examples}

    def response_examples(self, base: str, response: ef.Node, status: int) -> list[Facts]:
        """The bodies one error response documents: its named examples, else its example, else
        its schema's; a response without content is one example with no body."""
        contents = response.get("content") or {}
        if not contents:
            return [{"name": str(status), "status": status, "body": None,
                     "documented_in": "response", "no_content": True}]
        found: list[Facts] = []
        for content in contents.values():
            if "example" in content:
                found.append({"name": str(status), "status": status, "body": content["example"],
                              "documented_in": "response"})
            for name, raw in (content.get("examples") or {}).items():
                _, example = self.corpus.deref(raw, base)
                if "value" in example:
                    found.append({"name": name, "status": status, "body": example["value"],
                                  "documented_in": "response"})
            if not found and "schema" in content:
                _, schema = self.corpus.deref(content["schema"], base)
                if isinstance(schema, dict) and "example" in schema:
                    found.append({"name": f"{status}-schema", "status": status,
                                  "body": schema["example"], "documented_in": "schema"})
        return found


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _status_of(body: dict[str, Any], statuses: list[tuple[int, set[int], bool]]) -> \
        tuple[int, str]:
    """The status a description's error body is answered with: the documented error status
    that lists or shows its code, else the operation's first documented error status with a
    JSON body, else 422 (the documents' status of a refused request)."""
    code = body.get("code")
    listing = sorted(status for status, codes, _ in statuses if code in codes)
    if listing:
        return listing[0], "status_listing_code"
    with_body = sorted(status for status, _, content in statuses if content and status < 500)
    if with_body:
        return with_body[0], "first_error_status"
    return 422, "assumed"


def _unique(meanings: list[Facts]) -> list[Facts]:
    seen: set[tuple[int, int | None]] = set()
    kept: list[Facts] = []
    for meaning in meanings:
        key = (meaning["code"], meaning["status"])
        if key in seen:
            continue
        seen.add(key)
        kept.append(meaning)
    return kept


def main(argv: Sequence[str] | None = None) -> int:
    """Writes the error facts (or, with ``--check``, says whether they are up to date)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repo", type=Path, required=True,
                        help="a checkout or bare clone of " + ef.REPOSITORY)
    parser.add_argument("--commit", default=ef.COMMIT, help="the commit to read (default: pinned)")
    parser.add_argument("--out", type=Path, default=ERROR_FACTS, help="where to write them")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when --out differs from a fresh extraction")
    args = parser.parse_args(argv)
    try:
        rendered = ef.render(ErrorExtractor(ef.Corpus(args.repo, args.commit)).facts())
    except ef.FactsError as error:
        print(f"extract_error_facts: {error}", file=sys.stderr)
        return 2
    if args.check:
        current = args.out.read_bytes() if args.out.exists() else b""
        if current != rendered:
            print(f"extract_error_facts: {args.out} is not up to date", file=sys.stderr)
            return 1
        return 0
    args.out.write_bytes(rendered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
