# Release: a vLLM release sdist from the package index (PEP 691/503, sha256-checked, cached) -> git commit.
from __future__ import annotations

import base64
import contextlib
import hashlib
import html.parser
import http.client
import itertools
import json
import os
import re
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from filelock import FileLock
from packaging.version import InvalidVersion, Version

from extractor.errors import ReleaseError
from extractor.repo.git.clone import redact_url
from extractor.repo.git.history import tag_targets
from extractor.repo.git.run import GitError, config_value, damage_hint
from extractor.repo.git.write import FastImportError, fast_import, init_bare, set_config, update_ref
from extractor.repo.housekeeping import cache_dir
from extractor.util.atomic import replace_bytes, replacing

__all__ = [
    "Sdist",
    "check_version",
    "commit_id",
    "fetch_sdist",
    "index_url",
    "release_repo",
    "release_tag",
    "release_versions",
]

PROJECT = "vllm"
_JSON = "application/vnd.pypi.simple.v1+json"
# A release version as vLLM spells them, at most 64 characters (a file name holds it: 0.28.999... made
# the name too long to create, and the error blamed the cache).
# Always fullmatch()ed: `$` would let a trailing newline through (`--release $'0.28.0\n'`), into a file name
# and a tag.
_VERSION = re.compile(r"(?=.{1,64}\Z)\d+(\.\d+)*([a-z]+\d*)?(\.post\d+)?(\.dev\d+)?", re.ASCII)  # (ASCII digits)
# What asking the index can raise: ValueError for a URL that is no URL, HTTPException for one whose port is no
# number (InvalidURL) or a reply that is no HTTP.
_UNREACHABLE = (urllib.error.URLError, OSError, ValueError, http.client.HTTPException)
_COMMIT_ID = re.compile(r"""__commit_id__\s*=\s*(?:commit_id\s*=\s*)?['"]g?(?P<sha>[0-9a-f]{7,40})['"]""")
# Seconds the package index may say nothing before it is given up: a page of its list, a download.
_INDEX_SILENCE = 60
_DOWNLOAD_SILENCE = 600


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
        return _index_setting(configured, "PIP_INDEX_URL")
    try:
        from pip._internal.configuration import Configuration
        from pip._internal.models.index import PyPI
    except ImportError:
        raise ReleaseError("cannot tell which package index to use: pip is not importable; set PIP_INDEX_URL") from None
    found = None
    try:
        configuration = Configuration(isolated=False)
        configuration.load()
        for key, value in configuration.items():
            if key.endswith(".index-url") and not key.endswith("extra-index-url") and value:
                found = (str(value), key)
                break
    except Exception:  # a broken pip configuration falls back to pip's own default, as pip would not
        pass
    return _index_setting(*found) if found else str(PyPI.simple_url)


def _index_setting(value: str, name: str) -> str:
    """The index a setting names: its first word. An empty setting is no setting (pip ignores it, and so
    does index_url); one of blanks alone is refused, as pip would fail on it: falling back to pip's default
    index instead would send the requests to an index the user did not name (a mirror's variable left
    unset). A value that is no URL is said when the index is asked (`cannot reach the package index`)."""
    words = value.split()
    if not words:
        raise ReleaseError(
            f"{name} is blank ({value!r}): set it to the package index's simple URL, as pip's --index-url "
            "takes it, or unset it"
        )
    return words[0]


def _credentials(index: str) -> tuple[str, str] | None:
    """The host of an index URL holding credentials (`user:password@`, as pip takes them) and the
    Authorization header that sends them; None for an index without."""
    with contextlib.suppress(ValueError):
        parts = urllib.parse.urlsplit(index)
        user, at, host = parts.netloc.rpartition("@")
        if at:
            name, _, password = user.partition(":")
            pair = f"{urllib.parse.unquote(name)}:{urllib.parse.unquote(password)}"
            return host, "Basic " + base64.b64encode(pair.encode()).decode()
    return None


def _open(url: str, *, credentials: tuple[str, str] | None, timeout: float, accept: str | None = None) -> Any:
    """Open a URL of the index without the credentials in it (urllib would take `user:password@host` for
    the host's name, and a message would show them): they go as HTTP basic authentication, as pip sends
    them, to the index's host alone, and not on to where it redirects."""
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    request = urllib.request.Request(urllib.parse.urlunsplit(parts._replace(netloc=host)))
    if accept is not None:
        request.add_header("Accept", accept)
    if credentials is not None and credentials[0] == host:
        request.add_unredirected_header("Authorization", credentials[1])
    return urllib.request.urlopen(request, timeout=timeout)


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
    shown = redact_url(page)  # every message: a password in the index's URL is never shown
    try:
        accept = f"{_JSON}, text/html;q=0.1"
        with _open(page, credentials=_credentials(index), timeout=_INDEX_SILENCE, accept=accept) as response:
            body = response.read()
            kind = response.headers.get("Content-Type", "")
            base = response.geturl()
    except _UNREACHABLE as error:
        reason = getattr(error, "reason", error)
        raise ReleaseError(f"cannot reach the package index at {shown}: {reason}") from None
    files: dict[str, tuple[str, str | None]] = {}
    if _JSON in kind:
        try:
            for entry in json.loads(body)["files"]:
                url = urllib.parse.urljoin(base, entry["url"])
                files[entry["filename"]] = (url, entry.get("hashes", {}).get("sha256"))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ReleaseError(f"the package index at {shown} answered JSON that is not its API's: {error}") from None
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


def release_version(text: str) -> str:
    """A release as written by a user, as the index spells it: `v0.28.0` (a tag's spelling) is `0.28.0`."""
    rest = text[1:] if text[:1] in "vV" else text
    return rest if rest is not text and _VERSION.fullmatch(rest) else text


def looks_like_version(text: str) -> bool:
    """Whether a word is written as a release (`0.28.0`, `v0.28.0`), not as a SHA (`1234567`) or a branch."""
    version = release_version(text)
    return "." in version and bool(_VERSION.fullmatch(version))


def check_version(version: str) -> None:
    """Refuse what is no release version as vLLM spells them (see _VERSION)."""
    if not _VERSION.fullmatch(version):
        raise ReleaseError(f"not a release version: {version!r}")


def fetch_sdist(version: str) -> Sdist:
    """Return vLLM's sdist for `version`, downloaded once into the cache and checked by sha256."""
    check_version(version)
    filename = f"{PROJECT}-{version}.tar.gz"
    directory = cache_dir() / "sdists"
    target = directory / filename
    sidecar = directory / (filename + ".sha256")
    if target.exists() and sidecar.exists():
        expected = sidecar.read_bytes().decode("ascii", "replace").strip()  # (garbled: no match, fetched again)
        if _sha256(target) == expected:
            return Sdist(version, target, expected)
    index = index_url()
    files = _project_files(index)
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
        digest = hashlib.sha256()
        try:
            with (
                replacing(target, durable=False) as out,
                _open(url, credentials=_credentials(index), timeout=_DOWNLOAD_SILENCE) as response,
            ):
                for chunk in _download(response, filename):
                    digest.update(chunk)
                    out.write(chunk)
                if digest.hexdigest() != expected_hash:
                    raise ReleaseError(
                        f"{filename}: sha256 {digest.hexdigest()} does not match the index's {expected_hash}"
                    )
        except _UNREACHABLE as error:
            raise ReleaseError(f"cannot download {filename}: {getattr(error, 'reason', error)}") from None
        sidecar.write_text(expected_hash + "\n")
    return Sdist(version, target, expected_hash)


def _sdist_version(filename: str) -> tuple[Version, str] | None:
    """Return the final or post release an sdist's file name stands for, parsed and as spelled there."""
    if not (filename.startswith(f"{PROJECT}-") and filename.endswith(".tar.gz")):
        return None
    text = filename[len(PROJECT) + 1 : -len(".tar.gz")]
    if not _VERSION.fullmatch(text):
        return None
    try:
        version = Version(text)
    except InvalidVersion:
        return None
    return None if version.is_prerelease or version.is_devrelease else (version, text)


def release_versions(*, max_age: float = 3600.0) -> list[str]:
    """Return every release with an sdist on the index, oldest first in PEP 440 order.

    Pre- and dev releases are left out. The list is cached per index for `max_age` seconds, so matching
    against `release:all` asks the index at most once an hour.
    """
    index = index_url()
    directory = cache_dir() / "sdists"
    cached = directory / f"versions-{hashlib.sha256(index.encode()).hexdigest()[:16]}.json"
    try:
        if time.time() - cached.stat().st_mtime < max_age:
            listed = json.loads(cached.read_text())
            if isinstance(listed, list) and all(isinstance(item, str) for item in listed):
                return listed
    except (OSError, ValueError):
        pass
    found = dict(parsed for name in _project_files(index) if (parsed := _sdist_version(name)) is not None)
    versions = [found[version] for version in sorted(found)]
    with contextlib.suppress(OSError):  # a read-only cache only costs the next call a request
        replace_bytes(cached, json.dumps(versions).encode(), durable=False)
    return versions


def _download(response: Any, filename: str) -> Iterator[bytes]:
    """Read a download in chunks: a bar on a terminal, else one line saying what and how big."""
    from extractor.util.progress import byte_bar, note, sized

    length = response.headers.get("Content-Length")
    size = int(length) if length and length.isdigit() else None
    host = urllib.parse.urlsplit(response.geturl()).hostname or "the package index"
    note(f"downloading {filename}" + (f" ({sized(size)})" if size else "") + f" from {host}")
    yield from byte_bar(iter(lambda: response.read(1 << 16), b""), size, filename)


def release_tag(version: str) -> str:
    return f"v{version}"


def _write_release(sdist: Sdist, tag: str, out: IO[bytes], marks: Iterator[int]) -> None:
    """Write the sdist's `vllm/` package as one root commit of a git fast-import stream.

    The tarball is read once, as a stream: each file goes out as a blob as it comes (a gzip tarball read
    out of order is decompressed again from its start for every member), then the commit names them.
    """
    files: list[tuple[bytes, str, int]] = []  # quoted path, mode, mark
    newest = 0
    try:
        with tarfile.open(sdist.path, "r|gz") as archive:
            for member in archive:
                path = member.name.split("/", 1)[1] if "/" in member.name else ""
                if not path.startswith(f"{PROJECT}/") or not (member.isfile() or member.issym()):
                    continue
                quoted = _quoted_path(path)
                if quoted is None:
                    raise ReleaseError(f"{sdist.path.name} holds a file git cannot store: {member.name!r}")
                if member.issym():
                    data, mode = member.linkname.encode(), "120000"
                else:
                    extracted = archive.extractfile(member)
                    data = extracted.read() if extracted else b""
                    mode = "100755" if member.mode & 0o111 else "100644"
                mark = next(marks)
                out.write(f"blob\nmark :{mark}\ndata {len(data)}\n".encode() + data + b"\n")
                files.append((quoted, mode, mark))
                newest = max(newest, int(member.mtime))
    except (tarfile.TarError, OSError, EOFError) as error:
        raise ReleaseError(f"cannot read {sdist.path.name}: {error}") from None
    if not files:
        raise ReleaseError(f"{sdist.path.name} holds no {PROJECT}/ package")
    # The commit is a pure function of the sdist, so every machine builds the same SHA.
    message = f"vLLM {sdist.version} from its release sdist (sha256 {sdist.sha256})\n".encode()
    who = f"vLLM release <release@{PROJECT}> {newest} +0000"
    out.write(f"commit refs/tags/{tag}\nauthor {who}\ncommitter {who}\ndata {len(message)}\n".encode())
    out.write(message + b"deleteall\n")
    out.write(b"".join(f"M {mode} :{mark} ".encode() + path + b"\n" for path, mode, mark in sorted(files)))


# fast-import's C-style quoting of a path: the characters it escapes by name, any other control byte in octal.
_ESCAPES = {ord("\\"): b"\\\\", ord('"'): b'\\"', ord("\n"): b"\\n", ord("\t"): b"\\t", ord("\r"): b"\\r"}


def _quoted_path(path: str) -> bytes | None:
    """A path as a fast-import command takes it, always quoted (a name holding a newline would otherwise end
    the command, and the rest of the name be read as commands: a crafted sdist could move a release's tag);
    None for a path that is no tree's (a NUL byte, an empty, `.` or `..` part)."""
    data = path.encode("utf-8", "surrogateescape")  # as tarfile decoded it
    if b"\0" in data or {"", ".", ".."} & set(path.split("/")):
        return None
    escaped = (
        _ESCAPES.get(byte) or (b"\\%03o" % byte if byte < 0x20 or byte == 0x7F else bytes([byte])) for byte in data
    )
    return b'"' + b"".join(escaped) + b'"'


def release_repo(versions: list[str], *, repo: Path | None = None) -> Path:
    """Return a bare git repository holding each release's `vllm/` package as a commit tagged vX.Y.Z.

    The releases it lacks are written by one `git fast-import`, which stores each distinct file once
    (releases share most of theirs), reading every tarball once as it downloads the next.
    """
    for version in versions:  # each becomes a tag, a file name, a line of fast-import's stream
        check_version(version)
    target = repo or cache_dir() / "releases" / f"{PROJECT}.git"
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target.parent / f".{target.name}.lock")):
        if os.path.lexists(target) and not target.is_dir():  # a file, a dangling symlink, a loop of them
            raise _damaged(target, "it is not a folder")
        if not (target / "HEAD").exists():
            with _git_failure_is_damage(target):
                init_bare(target)
                set_config(target, _WHOLE, "true")
        elif config_value(target, _WHOLE) is None:
            raise _damaged(target, "it was built by an older extractor, whose objects are not stored whole")
        listed = _tags(target)
        missing = [v for v in dict.fromkeys(versions) if f"refs/tags/{release_tag(v)}" not in listed]
        if missing:
            _import(target, missing)
            moved = {ref for ref, sha in _tags(target).items() if ref in listed and listed[ref] != sha}
            for ref in sorted(moved):  # never so (fast-import is not forced, paths are quoted): yet never kept
                with _git_failure_is_damage(target):
                    update_ref(target, ref, listed[ref])
            if moved:
                raise ReleaseError(f"the import of {', '.join(missing)} into {target} moved {', '.join(sorted(moved))}")
    return target


def _tags(target: Path) -> dict[str, str]:
    """The repository's tags, by ref name, each with the object it names."""
    with _git_failure_is_damage(target):
        tags = tag_targets(target)
    return tags


@contextlib.contextmanager
def _git_failure_is_damage(repo: Path) -> Iterator[None]:
    """Make git failing on the release repository a ReleaseError naming it and the remedy."""
    try:
        yield
    except GitError as error:
        raise _damaged(repo, error.complaint) from None
    except OSError as error:  # no git, or a folder that cannot be entered
        raise _damaged(repo, error.strerror or str(error)) from None


def _damaged(repo: Path, what: str) -> ReleaseError:
    remedy = damage_hint(repo) or " (remove it: it is built again)"
    return ReleaseError(f"cannot use the release repository {repo}: {what}{remedy}")


# Objects are stored whole, never as deltas (imported and repacked `whole`). fast-import makes a blob a delta
# of the blob written before it, which in a release's stream is another file: such deltas save nothing (vLLM's
# 97 releases took 141.4 MB with chains up to 50 deep, 137.6 MB without any), and every read of a blob applies
# its chain. Reading every blob of those releases took git 34 s of CPU, 2.4 s stored whole (0.28.0's whole
# package 0.75 s against 0.15 s).
# Set in every repository this code builds: one without it was built by an older extractor (its objects
# deltas), and is refused with the remedy (removed, it is built again).
_WHOLE = "extractor.wholeObjects"


def _import(target: Path, versions: list[str]) -> None:
    _remove_unfinished_packs(target)  # of an import killed before it could clean up (SIGKILL)
    # (The packs a stopped import leaves are removed under the repository's lock: no other import runs.)
    try:
        with fast_import(target, whole=True, after_abort=lambda: _remove_unfinished_packs(target)) as stream:
            marks = itertools.count(1)
            with ThreadPoolExecutor(max_workers=1) as downloads:  # the next sdist downloads meanwhile
                pending = [downloads.submit(fetch_sdist, version) for version in versions]
                for version, future in zip(versions, pending, strict=True):
                    _write_release(future.result(), release_tag(version), stream, marks)
    except FastImportError as error:
        raise ReleaseError(
            f"cannot build the release repository {target} for {', '.join(versions)}: {error.said}{damage_hint(target)}"
        ) from None


def _remove_unfinished_packs(target: Path) -> None:
    """Remove the temporary packs a killed `git fast-import` leaves (named by no ref, never used)."""
    for leftover in (target / "objects" / "pack").glob("tmp_pack_*"):
        with contextlib.suppress(OSError):
            leftover.unlink()


def commit_id(version_py: bytes) -> str | None:
    """Read the commit a release was built from out of its `vllm/_version.py` (`g` prefix dropped)."""
    match = _COMMIT_ID.search(version_py.decode("utf-8", "replace"))
    return match["sha"] if match else None
