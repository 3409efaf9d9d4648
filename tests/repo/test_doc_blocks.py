"""Every Python block of README.md and of the documentation site (``docs/**/*.md``) runs, so the
docs cannot drift from the code.

The pages are found when the tests are collected, so a page added to the site is covered with
nothing to register. Each block is a whole program, run in a fresh interpreter against a sandbox
of its own: its address and key in ``TXC_BASE_URL``, ``TXC_API_KEY`` and ``TXC_API_SECRET`` (what
``Client.from_env()`` reads), its OAuth application in ``TXC_OAUTH_CLIENT_ID``,
``TXC_OAUTH_CLIENT_SECRET`` and ``TXC_OAUTH_REFRESH_TOKEN``. An HTML comment right above a block
changes how it runs: ``<!-- pytest -->`` runs it as a test module with pytest (the plugin's
fixtures, pytest-asyncio's default strict mode); ``<!-- no-run: why -->`` skips a block that
cannot run here, and must say why.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from txc_async.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(
    r"(?:<!--(?P<directive>[^\n]*?)-->[ \t]*\n)?^```python[ \t]*\n(?P<code>.*?)^```[ \t]*$",
    re.M | re.S,
)


@dataclass(frozen=True)
class Block:
    line: int
    code: str
    mode: str  # "script", "pytest" or "skip"
    reason: str = ""


def doc_pages() -> list[Path]:
    """README.md, then every page of the site, in a stable order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def doc_blocks(text: str, page: str = "README.md") -> list[Block]:
    blocks: list[Block] = []
    for found in _BLOCK.finditer(text):
        line = text.count("\n", 0, found.start("code"))  # the fence's line, counted from 1
        directive = (found["directive"] or "").strip()
        if not directive:
            blocks.append(Block(line, found["code"], "script"))
        elif directive == "pytest":
            blocks.append(Block(line, found["code"], "pytest"))
        elif directive.startswith("no-run:") and directive[len("no-run:"):].strip():
            blocks.append(Block(line, found["code"], "skip", directive[len("no-run:"):].strip()))
        else:
            raise ValueError(
                f"{page} line {line}: unknown directive <!--{found['directive']}--> "
                "(use <!-- pytest --> or <!-- no-run: why -->)"
            )
    return blocks


PAGES = {page_id(page): page.read_text() for page in doc_pages()}
BLOCKS = [(page, block) for page, text in PAGES.items() for block in doc_blocks(text, page)]


def test_the_docs_have_runnable_blocks() -> None:
    readme = [block for page, block in BLOCKS if page == "README.md"]
    assert sum(block.mode != "skip" for block in readme) >= 2
    assert sum(block.mode != "skip" for page, block in BLOCKS if page.startswith("docs/")) >= 10
    assert any(block.mode == "pytest" for _, block in BLOCKS)
    # Every fence that opens a Python block was found (none hides behind a malformed comment).
    for page, text in PAGES.items():
        assert sum(found == page for found, _ in BLOCKS) == text.count("```python"), page


def test_directives_are_read_as_documented() -> None:
    text = (
        "```python\nprint(1)\n```\n\n<!-- pytest -->\n```python\ndef test(): pass\n```\n"
        "<!-- no-run: needs a live account -->\n```python\nx\n```\n"
    )
    assert [(b.line, b.mode, b.reason) for b in doc_blocks(text)] == [
        (1, "script", ""), (6, "pytest", ""), (10, "skip", "needs a live account"),
    ]
    with pytest.raises(ValueError, match="unknown directive"):
        doc_blocks("<!-- norun -->\n```python\nx\n```\n")
    with pytest.raises(ValueError, match=r"docs/a\.md line 2: unknown directive"):
        doc_blocks("<!-- no-run: -->\n```python\nx\n```\n", "docs/a.md")


@pytest.fixture
def sandbox_environment() -> Iterator[dict[str, str]]:
    """A sandbox served from a thread of its own, so that a block's ``asyncio.run`` and the
    sandbox's loop never share a thread; the environment a block needs to reach it."""
    ready = threading.Event()
    state: dict[str, object] = {}

    async def serve() -> None:
        stop = asyncio.Event()
        async with Sandbox() as box:
            state.update(box=box, loop=asyncio.get_running_loop(), stop=stop)
            ready.set()
            await stop.wait()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(30), "the sandbox did not start"
    box = state["box"]
    assert isinstance(box, Sandbox)
    yield {
        **os.environ,
        "TXC_BASE_URL": box.url,
        "TXC_API_KEY": box.api_key,
        "TXC_API_SECRET": box.api_secret,
        "TXC_OAUTH_CLIENT_ID": box.oauth_client_id,
        "TXC_OAUTH_CLIENT_SECRET": box.oauth_client_secret,
        "TXC_OAUTH_REFRESH_TOKEN": box.oauth_refresh_token,
    }
    loop, stop = state["loop"], state["stop"]
    assert isinstance(loop, asyncio.AbstractEventLoop) and isinstance(stop, asyncio.Event)
    loop.call_soon_threadsafe(stop.set)
    thread.join(30)


@pytest.mark.parametrize(
    ("page", "block"), BLOCKS, ids=[f"{page}:{block.line}" for page, block in BLOCKS]
)
def test_doc_block_runs(
    page: str, block: Block, sandbox_environment: dict[str, str], tmp_path: Path
) -> None:
    where = f"{page}:{block.line}"
    if block.mode == "skip":
        pytest.skip(f"{where} is marked no-run: {block.reason}")
    # Blank lines keep the page's line numbers in tracebacks.
    source = "\n" * block.line + block.code
    if block.mode == "pytest":
        path = tmp_path / "test_doc_example.py"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)]
    else:
        path = tmp_path / "doc_example.py"
        command = [sys.executable, str(path)]
    path.write_text(source)
    run = subprocess.run(
        command, cwd=tmp_path, env=sandbox_environment, capture_output=True, text=True,
        timeout=180,
    )
    assert run.returncode == 0, (
        f"{where} failed\n--- stdout\n{run.stdout}\n--- stderr\n{run.stderr}"
    )
    if block.mode == "pytest":
        assert re.search(r"\b\d+ passed\b", run.stdout) and " failed" not in run.stdout
