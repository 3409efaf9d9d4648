"""The error facts (``generator/error_facts.json``): taken from the same documents as the facts,
every operation once, every meaning a line of text for one code; where the documents'
repository is on the machine, exactly the bytes the extractor writes from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ERROR_FACTS = ROOT / "generator" / "error_facts.json"
FACTS = ROOT / "generator" / "facts.json"
EXTRACTOR = ROOT / "generator" / "extract_error_facts.py"
DOCS_REPO = Path(os.environ.get("TXC_DOCS_REPO", "/work/.mirror/whitebit-exchange+docs/repo"))


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def test_the_error_facts_come_from_the_facts_documents() -> None:
    errors, facts = _load(ERROR_FACTS), _load(FACTS)
    assert errors["source"]["repository"] == facts["source"]["repository"]
    assert errors["source"]["commit"] == facts["source"]["commit"]
    assert set(errors["operations"]) == {op["name"] for op in facts["operations"]}


def test_every_meaning_is_one_line_for_one_code() -> None:
    for name, operation in _load(ERROR_FACTS)["operations"].items():
        keys = [(m["code"], m["status"]) for m in operation["meanings"]]
        assert len(keys) == len(set(keys)), name
        for meaning in operation["meanings"]:
            text = meaning["text"]
            assert text and "\n" not in text and "](" not in text and "`" not in text, name


def test_the_documented_codes_have_their_meanings() -> None:
    """The meanings are the pages' own code lists: a collateral limit order's "Error Codes"
    accordion gives code 32 for every status, and the lists give well over a hundred."""
    errors = _load(ERROR_FACTS)["operations"]
    explained = sum(len(operation["meanings"]) for operation in errors.values())
    assert explained >= 150
    assert {"code": 32, "status": None, "text": "amount validation failed"} in \
        errors["create_collateral_limit_order"]["meanings"]


def test_rerunning_the_extractor_gives_the_same_bytes(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    commit = _load(FACTS)["source"]["commit"]
    found = DOCS_REPO.exists() and subprocess.run(
        ["git", "-C", str(DOCS_REPO), "cat-file", "-e", f"{commit}^{{commit}}"],
        capture_output=True, check=False,
    ).returncode == 0
    if not found:
        pytest.skip(f"no documentation repository with {commit} at {DOCS_REPO} (TXC_DOCS_REPO)")
    out = tmp_path / "error_facts.json"
    run = subprocess.run(
        [sys.executable, str(EXTRACTOR), "--repo", str(DOCS_REPO), "--commit", commit,
         "--out", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert run.returncode == 0, run.stderr
    assert out.read_bytes() == ERROR_FACTS.read_bytes()
