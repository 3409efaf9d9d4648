"""Mermaid, served by the documentation site itself.

mkdocs-material draws the site's ```` ```mermaid ```` diagrams with the Mermaid library, and loads
it from a CDN when a page is viewed unless the page already has it: without a network the
diagrams stay source text. This module puts a pinned Mermaid release into the site's assets
(``docs/assets/javascripts/mermaid.min.js``, which ``mkdocs.yml`` lists in ``extra_javascript``),
so that the site needs no network to be viewed.

The file comes from the npm registry's tarball of the pinned version, checked against the
tarball's and the file's SHA-256 before it is written; a file already in place with the pinned
digest is kept as it is, so the registry is asked once per checkout.

It runs as an mkdocs hook (``hooks:`` in ``mkdocs.yml``) before every build, ``mkdocs serve``
included, and on its own:

    python sitebuild/mermaid.py
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tarfile
import urllib.request
from pathlib import Path
from typing import Any

VERSION = "11.17.2"
TARBALL = f"https://registry.npmjs.org/mermaid/-/mermaid-{VERSION}.tgz"
TARBALL_SHA256 = "6ad2f42c3fc26bbf9e45cbb6d11898972573ea52b33a5f4ff51952899f950ffd"
#: The members of the tarball the site serves, where it serves them, and their digests.
MEMBERS = {
    "package/dist/mermaid.min.js": (
        "mermaid.min.js", "581ed7d74bd9048d0e3a91363927d72ef22942d7722546b27f7cc29e35390eb8"),
    "package/LICENSE": (
        "mermaid.LICENSE.txt", "ec9fb67dcb25eccc416ed56e1aab819222c805a2a4bfe4cb19e7556bf2ffde80"),
}
ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "docs" / "assets" / "javascripts"
TIMEOUT_S = 120.0


class MermaidError(RuntimeError):
    """The pinned Mermaid release could not be fetched, or its bytes are not the pinned ones."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _in_place(folder: Path) -> bool:
    for name, digest in MEMBERS.values():
        path = folder / name
        if not path.is_file() or _sha256(path.read_bytes()) != digest:
            return False
    return True


def _download(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as answer:
            data: bytes = answer.read()
    except OSError as error:
        raise MermaidError(
            f"could not download Mermaid {VERSION} from {url} ({error}); the documentation site "
            f"serves its own copy, which is fetched once from the npm registry"
        ) from None
    return data


def ensure(folder: Path = FOLDER, url: str = TARBALL) -> list[Path]:
    """Put the pinned Mermaid release's files into ``folder`` unless they are there already;
    returns their paths. Raises `MermaidError` if a download fails or a digest differs."""
    paths = [folder / name for name, _ in MEMBERS.values()]
    if _in_place(folder):
        return paths
    tarball = _download(url)
    if _sha256(tarball) != TARBALL_SHA256:
        raise MermaidError(f"{url}: SHA-256 {_sha256(tarball)}, expected {TARBALL_SHA256}")
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        for member, (name, digest) in MEMBERS.items():
            extracted = archive.extractfile(member)
            if extracted is None:
                raise MermaidError(f"{url}: {member} is not a file")
            data = extracted.read()
            if _sha256(data) != digest:
                raise MermaidError(f"{url}: {member}: SHA-256 {_sha256(data)}, expected {digest}")
            partial = folder / f".{name}.partial"
            partial.write_bytes(data)
            os.replace(partial, folder / name)
    return paths


def on_config(config: Any) -> Any:
    """mkdocs hook: the pinned Mermaid is in the docs' assets before the build reads them."""
    from mkdocs.exceptions import PluginError

    try:
        ensure()
    except MermaidError as error:
        raise PluginError(str(error)) from None
    return config


if __name__ == "__main__":
    try:
        for path in ensure():
            print(f"{path.relative_to(ROOT)}: Mermaid {VERSION}")
    except MermaidError as error:
        sys.exit(f"error: {error}")
