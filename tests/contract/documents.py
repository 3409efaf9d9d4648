"""The documented answers of every operation, as the contract tests read them: the success
examples of ``generator/facts.json`` and the error examples of ``generator/error_facts.json``,
both taken from one commit of the service's documentation repository (``SOURCE``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FACTS = ROOT / "generator" / "facts.json"
ERROR_FACTS = ROOT / "generator" / "error_facts.json"

#: What a documented body is: JSON as ``json.loads`` reads it.
Json = Any


@dataclass(frozen=True)
class Source:
    """Where the examples are documented: a repository, one of its files, a commit."""

    repository: str
    path: str
    commit: str

    def __str__(self) -> str:
        return f"{self.repository}@{self.commit[:7]}:{self.path}"


@dataclass(frozen=True)
class Documented:
    """One documented answer of one operation."""

    operation: str
    name: str
    status: int
    body: Json  # None: documented without content
    source: Source
    #: Where in the operation's page: "response" (its examples), "schema" (the example of the
    #: answer's schema), "description" (a JSON block of its text).
    documented_in: str

    @property
    def id(self) -> str:
        return f"{self.operation}/{self.name}"

    @property
    def wire(self) -> bytes:
        return b"" if self.body is None else json.dumps(self.body).encode()


@cache
def facts() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(FACTS.read_text(encoding="utf-8"))
    return loaded


@cache
def error_facts() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(ERROR_FACTS.read_text(encoding="utf-8"))
    return loaded


def _source(document: str, section: dict[str, Any]) -> Source:
    return Source(section["repository"], document, section["commit"])


def _schema_example(schema: dict[str, Any] | None) -> Json:
    """The example the answer's schema gives of the whole body (following named schemas), or
    None."""
    schemas = facts()["schemas"]
    while schema is not None:
        if "example" in schema:
            return schema["example"]
        if "$schema_name" not in schema:
            return None
        schema = schemas[schema["$schema_name"]]["schema"]
    return None


def successes() -> list[Documented]:
    """Every documented success example of every operation: the answer's named examples and
    the example of its schema."""
    found: list[Documented] = []
    for op in facts()["operations"]:
        source = _source(op["source"], facts()["source"])
        answer = op["answer"]
        for name, body in answer["examples"].items():
            found.append(Documented(op["name"], name, answer["status"], body, source, "response"))
        example = _schema_example(answer["schema"])
        if example is not None:
            found.append(Documented(op["name"], "schema", answer["status"], example, source,
                                    "schema"))
    return found


def errors() -> list[Documented]:
    """Every documented error example of every operation, with the status it is answered
    with."""
    documents = {op["name"]: op["source"] for op in facts()["operations"]}
    section = error_facts()["source"]
    found: list[Documented] = []
    for name, operation in error_facts()["operations"].items():
        source = _source(documents[name], section)
        for example in operation["examples"]:
            found.append(Documented(name, example["name"], example["status"], example["body"],
                                    source, example["documented_in"]))
    return found


def meaning(operation: str, status: int, code: int | None) -> str | None:
    """What the operation's page says ``code`` means in an answer of ``status``: listed for
    that status, else for every status, else its one meaning; None when the page says
    nothing."""
    if code is None:
        return None
    listed = [m for m in error_facts()["operations"][operation]["meanings"] if m["code"] == code]
    for wanted in (status, None):
        for entry in listed:
            if entry["status"] == wanted:
                text: str = entry["text"]
                return text
    texts = {entry["text"] for entry in listed}
    return texts.pop() if len(texts) == 1 else None
