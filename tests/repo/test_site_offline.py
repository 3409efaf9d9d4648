"""The documentation site works without a network: no page references a script or a stylesheet
on another host, the site serves its own pinned Mermaid, and (when Chromium is installed) a
browser whose network is cut draws every diagram as SVG and asks no other host for anything."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import http.server
import io
import json
import re
import shutil
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from sitebuild import mermaid

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
REMOTE = re.compile(r"^(https?:)?//", re.I)


class _References(HTMLParser):
    """The scripts and stylesheets a page loads: every ``<script src>``, and every ``<link
    href>`` that is a stylesheet, a script, a font or a connection made ahead of time."""

    LOADING_RELS = frozenset({"stylesheet", "preload", "modulepreload", "preconnect",
                              "dns-prefetch", "prefetch"})

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "script" and values.get("src"):
            self.urls.append(values["src"])
        elif tag == "link" and values.get("href"):
            rels = set(values.get("rel", "").lower().split())
            href = values["href"]
            if rels & self.LOADING_RELS or href.split("?")[0].endswith((".js", ".css")):
                self.urls.append(href)


def _loaded(page: Path) -> list[str]:
    parser = _References()
    parser.feed(page.read_text())
    return parser.urls


def _diagrams() -> dict[str, int]:
    """The site's pages with Mermaid diagrams and how many each has, from the Markdown."""
    counts = {}
    for page in DOCS.rglob("*.md"):
        count = len(re.findall(r"^```mermaid\s*$", page.read_text(), re.M))
        if count:
            counts[page.relative_to(DOCS).with_suffix("").as_posix() + "/"] = count
    return counts


def test_the_references_parser_sees_remote_scripts_and_stylesheets(tmp_path: Path) -> None:
    page = tmp_path / "index.html"
    page.write_text(
        '<link rel="stylesheet" href="https://fonts.example/css?family=x">'
        '<link rel="preconnect" href="https://fonts.example.net">'
        '<link rel="icon" href="assets/favicon.png">'
        '<script src="//cdn.example/lib.js"></script><script>inline()</script>'
    )
    assert [url for url in _loaded(page) if REMOTE.match(url)] == [
        "https://fonts.example/css?family=x", "https://fonts.example.net", "//cdn.example/lib.js",
    ]


def test_no_page_loads_a_script_or_stylesheet_from_another_host(site: Path) -> None:
    remote = {
        f"{page.relative_to(site)}: {url}"
        for page in site.rglob("*.html") for url in _loaded(page) if REMOTE.match(url)
    }
    assert sorted(remote) == []
    for sheet in site.rglob("*.css"):
        assert not re.search(r"@import\s+(url\()?['\"]?(https?:)?//", sheet.read_text()), sheet


def test_the_site_serves_the_pinned_mermaid_on_every_page_with_a_diagram(site: Path) -> None:
    served = site / "assets" / "javascripts" / "mermaid.min.js"
    digest = mermaid.MEMBERS["package/dist/mermaid.min.js"][1]
    assert hashlib.sha256(served.read_bytes()).hexdigest() == digest
    assert (site / "assets" / "javascripts" / "mermaid.LICENSE.txt").is_file()
    diagrams = _diagrams()
    assert len(diagrams) >= 3
    for page in diagrams:
        html = site / page / "index.html"
        assert html.read_text().count('class="mermaid"') == diagrams[page], page
        scripts = [url.rsplit("/", 1)[-1] for url in _loaded(html)]
        assert "mermaid.min.js" in scripts, page


def _tarball(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_a_tarball_other_than_the_pinned_one_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "mermaid.tgz"
    fake.write_bytes(_tarball({"package/dist/mermaid.min.js": b"alert(1)",
                               "package/LICENSE": b"MIT"}))
    folder = tmp_path / "assets"
    with pytest.raises(mermaid.MermaidError, match="SHA-256"):
        mermaid.ensure(folder, url=fake.as_uri())
    assert not folder.exists() or list(folder.iterdir()) == []


def test_a_failed_download_says_what_was_fetched_from_where(tmp_path: Path) -> None:
    missing = (tmp_path / "nowhere.tgz").as_uri()
    with pytest.raises(mermaid.MermaidError, match=rf"Mermaid {mermaid.VERSION} from {missing}"):
        mermaid.ensure(tmp_path / "assets", url=missing)


def test_files_already_in_place_with_the_pinned_digests_are_kept(tmp_path: Path) -> None:
    if not mermaid._in_place(mermaid.FOLDER):
        pytest.skip("the pinned Mermaid is not in docs/assets/javascripts/ (make docs)")
    folder = tmp_path / "assets"
    folder.mkdir()
    for name, _ in mermaid.MEMBERS.values():
        shutil.copyfile(mermaid.FOLDER / name, folder / name)
    # No download: the address would fail.
    assert mermaid.ensure(folder, url=(tmp_path / "nowhere.tgz").as_uri()) == [
        folder / name for name, _ in mermaid.MEMBERS.values()
    ]


# --- In a browser without a network --------------------------------------------------------------

def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no Chromium on PATH (apt-get install chromium): the browser check is skipped")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _serve(folder: Path) -> Iterator[str]:
    """The built site over HTTP on 127.0.0.1, as ``python -m http.server -d site`` serves it."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextlib.contextmanager
def _browser(binary: str, profile: Path) -> Iterator[int]:
    """Headless Chromium whose every request to another host fails: names other than
    127.0.0.1 do not resolve, and everything not on the loopback goes to a proxy that is not
    there. Yields its DevTools port."""
    process = subprocess.Popen(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update",
         f"--user-data-dir={profile}", "--remote-debugging-port=0",
         "--proxy-server=http://127.0.0.1:9",
         "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
         "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        for _ in range(300):
            if port_file.exists() and port_file.read_text().strip():
                break
            if process.poll() is not None:
                pytest.fail(f"Chromium exited with {process.returncode}")
            threading.Event().wait(0.1)
        else:
            pytest.fail("Chromium did not open its DevTools port in 30 s")
        yield int(port_file.read_text().split()[0])
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class _DevTools:
    """The few DevTools protocol calls the check makes, on one page's socket."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.sequence = 0
        self.requested: list[str] = []
        self.loaded = asyncio.Event()

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.sequence += 1
        sequence = self.sequence
        await self.socket.send_json({"id": sequence, "method": method, "params": params})
        while True:
            message = json.loads((await self.socket.receive()).data)
            if message.get("method") == "Network.requestWillBeSent":
                self.requested.append(message["params"]["request"]["url"])
            elif message.get("method") == "Page.loadEventFired":
                self.loaded.set()
            elif message.get("id") == sequence:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                result: dict[str, Any] = message["result"]
                return result


def _rendered_diagrams(node: dict[str, Any]) -> tuple[int, int]:
    """How many Mermaid containers the document has, and how many hold an SVG in their
    (closed) shadow root, which is where Material puts the drawn diagram."""
    containers = drawn = 0
    attributes = node.get("attributes", [])
    classes = dict(zip(attributes[::2], attributes[1::2], strict=True)).get("class", "")
    if node.get("nodeName") in ("DIV", "PRE") and "mermaid" in classes.split():
        containers += 1

        def has_svg(inner: dict[str, Any]) -> bool:
            return inner.get("nodeName", "").lower() == "svg" or any(
                has_svg(child) for child in inner.get("children", []))

        drawn += any(has_svg(root) for root in node.get("shadowRoots", []))
    for child in node.get("children", []) + node.get("shadowRoots", []):
        inner_containers, inner_drawn = _rendered_diagrams(child)
        containers += inner_containers
        drawn += inner_drawn
    return containers, drawn


async def _draw(devtools_port: int, url: str, expected: int) -> tuple[tuple[int, int], list[str]]:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        async with session.put(f"http://127.0.0.1:{devtools_port}/json/new?about:blank") as made:
            target = await made.json(content_type=None)
        async with session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as socket:
            tools = _DevTools(socket)
            await tools.call("Network.enable")
            await tools.call("Page.enable")
            await tools.call("Page.navigate", url=url)
            found = (0, 0)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while loop.time() < deadline:
                document = await tools.call("DOM.getDocument", depth=-1, pierce=True)
                found = _rendered_diagrams(document["root"])
                if tools.loaded.is_set() and found[1] >= expected:
                    break
                await asyncio.sleep(0.25)
            return found, tools.requested


@pytest.mark.slow
def test_every_diagram_is_drawn_as_svg_in_a_browser_without_a_network(
    site: Path, tmp_path: Path
) -> None:
    binary = _chromium()
    diagrams = _diagrams()
    with _serve(site) as base, _browser(binary, tmp_path / "profile") as port:
        for page, count in sorted(diagrams.items()):
            (containers, drawn), requested = asyncio.run(_draw(port, base + page, count))
            assert (containers, drawn) == (count, count), (
                f"{page}: {drawn} of {count} diagrams drawn as SVG")
            elsewhere = [url for url in requested
                         if not url.startswith((base, "data:", "blob:", "about:"))]
            assert elsewhere == [], f"{page} asked other hosts for {elsewhere}"


async def _chart_sizes(devtools_port: int, url: str, width: int) -> list[list[Any]]:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        async with session.put(f"http://127.0.0.1:{devtools_port}/json/new?about:blank") as made:
            target = await made.json(content_type=None)
        async with session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as socket:
            tools = _DevTools(socket)
            await tools.call("Emulation.setDeviceMetricsOverride", width=width, height=900,
                             deviceScaleFactor=1, mobile=False)
            await tools.call("Page.enable")
            await tools.call("Page.navigate", url=url)
            expression = (
                "[...document.querySelectorAll('article img')].filter(i => i.complete)"
                ".map(i => [i.getAttribute('src'), i.naturalWidth,"
                " i.getBoundingClientRect().width])")
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            sizes: list[list[Any]] = []
            while loop.time() < deadline:
                answer = await tools.call("Runtime.evaluate", expression=expression,
                                          returnByValue=True)
                sizes = answer["result"]["value"]
                if tools.loaded.is_set() and sizes:
                    break
                await asyncio.sleep(0.25)
            return sizes


@pytest.mark.slow
def test_the_performance_charts_are_shown_at_their_own_size(site: Path, tmp_path: Path) -> None:
    """On a screen 1024 px wide or wider, the page shows each chart at its own size, so that
    its text is the size the chart gives it (tests/repo/test_chart.py: 11 px or more)."""
    binary = _chromium()
    charts = re.findall(r"\]\((assets/[\w-]+\.svg)\)", (DOCS / "performance.md").read_text())
    assert len(charts) >= 3
    with _serve(site) as base, _browser(binary, tmp_path / "profile") as port:
        for width in (1024, 1280, 1920):
            sizes = asyncio.run(_chart_sizes(port, base + "performance/", width))
            assert sorted(src.removeprefix("../") for src, _, _ in sizes) == sorted(charts)
            for src, natural, shown in sizes:
                assert abs(shown - natural) < 1, f"{src} at {width} px: {shown} of {natural} px"
