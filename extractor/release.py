# Release: a vLLM release sdist from the package index (PEP 691/503, sha256-checked, cached) -> git commit.
from __future__ import annotations

import hashlib
import html.parser
import json
import os
import re
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from extractor.errors import ReleaseError
from extractor.git import cache_dir

__all__ = ["Sdist", "commit_id", "fetch_sdist", "index_url", "release_repo", "release_tag"]

PROJECT = "vllm"
_JSON = "application/vnd.pypi.simple.v1+json"
_VERSION = re.compile(r"^\d+(\.\d+)*([a-z]+\d*)?(\.post\d+)?(\.dev\d+)?$")
_COMMIT_ID = re.compile(r"""__commit_id__\s*=\s*(?:commit_id\s*=\s*)?['"]g?(?P<sha>[0-9a-f]{7,40})['"]""")


@dataclass(frozen=True)
class Sdist:
    """A release sdist on disk, its sha256 checked against the index."""

    version: str
    path: Path
    sha256: str


def index_url() -> str:
    """Return the simple-API index pip uses: PIP_INDEX_URL, pip's configuration, else pip's default."""
    configured = os.environ.get("PIP_INDEX_URL")
    if configured:
        return configured.split()[0]
    try:
        from pip._internal.configuration import Configuration
        from pip._internal.models.index import PyPI
    except ImportError:
        raise ReleaseError("cannot tell which package index to use: pip is not importable; set PIP_INDEX_URL") from None
    try:
        configuration = Configuration(isolated=False)
        configuration.load()
        for key, value in configuration.items():
            if key.endswith(".index-url") and not key.endswith("extra-index-url") and value:
                return str(value).split()[0]
    except Exception:  # a broken pip configuration falls back to pip's own default, as pip would not
        pass
    return str(PyPI.simple_url)


class _Links(html.parser.HTMLParser):
    """Collect (filename, url) pairs from a PEP 503 HTML project page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self.links.append((data.strip(), self._href))
            self._href = None


def _project_files(index: str) -> dict[str, tuple[str, str | None]]:
    """Map each file of the project on the index to (url, sha256)."""
    page = index.rstrip("/") + f"/{PROJECT}/"
    request = urllib.request.Request(page, headers={"Accept": f"{_JSON}, text/html;q=0.1"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            body = response.read()
            kind = response.headers.get("Content-Type", "")
            base = response.geturl()
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise ReleaseError(f"cannot reach the package index at {page}: {reason}") from None
    files: dict[str, tuple[str, str | None]] = {}
    if _JSON in kind:
        for entry in json.loads(body)["files"]:
            url = urllib.parse.urljoin(base, entry["url"])
            files[entry["filename"]] = (url, entry.get("hashes", {}).get("sha256"))
        return files
    parser = _Links()
    parser.feed(body.decode("utf-8", "replace"))
    for filename, href in parser.links:
        url, _, fragment = urllib.parse.urljoin(base, href).partition("#")
        digest = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else None
        files[filename] = (url, digest)
    return files


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_sdist(version: str) -> Sdist:
    """Return vLLM's sdist for `version`, downloaded once into the cache and checked by sha256."""
    if not _VERSION.match(version):
        raise ReleaseError(f"not a release version: {version!r}")
    filename = f"{PROJECT}-{version}.tar.gz"
    directory = cache_dir() / "sdists"
    target = directory / filename
    sidecar = directory / (filename + ".sha256")
    if target.exists() and sidecar.exists():
        expected = sidecar.read_text().strip()
        if _sha256(target) == expected:
            return Sdist(version, target, expected)
    files = _project_files(index_url())
    if filename not in files:
        raise ReleaseError(f"no release {version} of {PROJECT} on the package index (no {filename})")
    url, expected_hash = files[filename]
    if not expected_hash:
        raise ReleaseError(f"the package index gives no sha256 for {filename}")
    directory.mkdir(parents=True, exist_ok=True)
    with FileLock(str(directory / f".{filename}.lock")):
        if target.exists() and _sha256(target) == expected_hash:
            sidecar.write_text(expected_hash + "\n")
            return Sdist(version, target, expected_hash)
        fd, temporary = tempfile.mkstemp(prefix=f".{filename}.", dir=directory)
        digest = hashlib.sha256()
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=600) as response:
                for chunk in _download(response, filename):
                    digest.update(chunk)
                    out.write(chunk)
            if digest.hexdigest() != expected_hash:
                raise ReleaseError(
                    f"{filename}: sha256 {digest.hexdigest()} does not match the index's {expected_hash}"
                )
            os.replace(temporary, target)
        except (urllib.error.URLError, OSError) as error:
            raise ReleaseError(f"cannot download {filename}: {getattr(error, 'reason', error)}") from None
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
        sidecar.write_text(expected_hash + "\n")
    return Sdist(version, target, expected_hash)


def _download(response: Any, filename: str) -> Iterator[bytes]:
    """Read a download in chunks: a bar on a terminal, else one line saying what and how big."""
    from extractor.progress import byte_bar, note

    length = response.headers.get("Content-Length")
    size = int(length) if length and length.isdigit() else None
    host = urllib.parse.urlsplit(response.geturl()).hostname or "the package index"
    note(f"downloading {filename}" + (f" ({size / 1e6:.1f} MB)" if size else "") + f" from {host}")
    yield from byte_bar(iter(lambda: response.read(1 << 16), b""), size, filename)


def release_tag(version: str) -> str:
    return f"v{version}"


def _fast_import_stream(sdist: Sdist, tag: str) -> bytes:
    """Render the sdist's `vllm/` package as a git fast-import stream of one root commit."""
    try:
        with tarfile.open(sdist.path, "r:gz") as archive:
            members = sorted(
                (member.name.split("/", 1)[1], member)
                for member in archive
                if member.name.partition("/")[2].startswith(f"{PROJECT}/") and (member.isfile() or member.issym())
            )
            chunks: list[bytes] = []
            for path, member in members:
                if member.issym():
                    data, mode = member.linkname.encode(), "120000"
                else:
                    extracted = archive.extractfile(member)
                    data = extracted.read() if extracted else b""
                    mode = "100755" if member.mode & 0o111 else "100644"
                chunks.append(f"M {mode} inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
    except (tarfile.TarError, OSError) as error:
        raise ReleaseError(f"cannot read {sdist.path.name}: {error}") from None
    if not chunks:
        raise ReleaseError(f"{sdist.path.name} holds no {PROJECT}/ package")
    # The commit is a pure function of the sdist, so every machine builds the same SHA.
    newest = max(int(member.mtime) for _, member in members)
    message = f"vLLM {sdist.version} from its release sdist (sha256 {sdist.sha256})\n".encode()
    who = f"vLLM release <release@{PROJECT}> {newest} +0000"
    header = f"commit refs/tags/{tag}\nauthor {who}\ncommitter {who}\ndata {len(message)}\n".encode()
    return header + message + b"deleteall\n" + b"".join(chunks) + b"done\n"


def release_repo(versions: list[str], *, repo: Path | None = None) -> Path:
    """Return a bare git repository holding each release's `vllm/` package as a commit tagged vX.Y.Z."""
    target = repo or cache_dir() / "releases" / f"{PROJECT}.git"
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target.parent / f".{target.name}.lock")):
        if not (target / "HEAD").exists():
            subprocess.run(["git", "init", "--quiet", "--bare", str(target)], check=True)
        for version in versions:
            tag = release_tag(version)
            exists = subprocess.run(
                ["git", "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}"],
                cwd=target,
                capture_output=True,
            )
            if exists.returncode == 0:
                continue
            stream = _fast_import_stream(fetch_sdist(version), tag)
            result = subprocess.run(
                ["git", "fast-import", "--quiet", "--done"],
                cwd=target,
                input=stream,
                capture_output=True,
            )
            if result.returncode != 0:
                raise ReleaseError(f"cannot build the git repository for {version}: {result.stderr.decode()[-300:]}")
    return target


def commit_id(version_py: bytes) -> str | None:
    """Read the commit a release was built from out of its `vllm/_version.py` (`g` prefix dropped)."""
    match = _COMMIT_ID.search(version_py.decode("utf-8", "replace"))
    return match["sha"] if match else None
