"""Release sdists: the index comes from pip, files are sha256-checked and cached, then become a git commit."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from extractor.catalog.load import release_commit
from extractor.errors import ReleaseError
from extractor.pipeline.extract import ExtractOptions, extract_commit
from extractor.repo.release import commit_id, fetch_sdist, index_url, release_repo
from tests.conftest import cli, git


def make_sdist(version: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        files = {
            f"vllm-{version}/vllm/_version.py": "__commit_id__ = commit_id = 'gabcdef1234'\n",
            f"vllm-{version}/vllm/config/a.py": 'raise ValueError("from the sdist")\n',
            f"vllm-{version}/setup.py": "",
        }
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1_700_000_000
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class Index:
    """A tiny PEP 691 (or PEP 503) index on loopback, counting the requests it serves."""

    def __init__(self, files: dict[str, bytes], *, html: bool = False, wrong_hash: bool = False) -> None:
        self.files, self.html, self.wrong_hash, self.hits = files, html, wrong_hash, 0
        self.authorizations: list[str | None] = []  # each request's Authorization header
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                index.hits += 1
                index.authorizations.append(self.headers.get("Authorization"))
                if self.path == "/simple/vllm/":
                    body, kind = index.page()
                elif self.path.startswith("/files/") and self.path[7:] in index.files:
                    body, kind = index.files[self.path[7:]], "application/octet-stream"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple"
        # (polled often: shutdown() waits for the loop's next look, half a second by default)
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    def digest(self, data: bytes) -> str:
        return hashlib.sha256(data + (b"x" if self.wrong_hash else b"")).hexdigest()

    def page(self) -> tuple[bytes, str]:
        if self.html:
            links = "".join(
                f'<a href="/files/{name}#sha256={self.digest(data)}">{name}</a>' for name, data in self.files.items()
            )
            return f"<html><body>{links}</body></html>".encode(), "text/html"
        entries = [
            {"filename": name, "url": f"/files/{name}", "hashes": {"sha256": self.digest(data)}}
            for name, data in self.files.items()
        ]
        document = {"meta": {"api-version": "1.1"}, "name": "vllm", "files": entries}
        return json.dumps(document).encode(), "application/vnd.pypi.simple.v1+json"


@pytest.fixture
def serve(isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    servers: list[Index] = []

    def start(**kwargs: bool) -> Index:
        index = Index({"vllm-9.9.0.tar.gz": make_sdist("9.9.0")}, **kwargs)
        monkeypatch.setenv("PIP_INDEX_URL", index.url)
        servers.append(index)
        return index

    yield start
    for index in servers:
        index.server.shutdown()


def test_index_url_comes_from_pip_index_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/custom/simple")
    assert index_url() == "http://127.0.0.1:9/custom/simple"


def test_index_url_defaults_to_pips_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from pip._internal.models.index import PyPI

    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    assert index_url() == PyPI.simple_url


@pytest.mark.parametrize("html", [False, True], ids=["pep691 json", "pep503 html"])
def test_sdist_is_downloaded_checked_and_cached(serve, html: bool) -> None:  # type: ignore[no-untyped-def]
    index = serve(html=html)
    sdist = fetch_sdist("9.9.0")
    assert sdist.path.read_bytes() == index.files["vllm-9.9.0.tar.gz"]
    assert sdist.sha256 == hashlib.sha256(sdist.path.read_bytes()).hexdigest()
    hits = index.hits
    assert fetch_sdist("9.9.0").path == sdist.path
    assert index.hits == hits  # the cache answers, the index is not asked again


def test_sha256_mismatch_is_refused_and_nothing_is_cached(serve) -> None:  # type: ignore[no-untyped-def]
    serve(wrong_hash=True)
    with pytest.raises(ReleaseError, match="does not match"):
        fetch_sdist("9.9.0")
    with pytest.raises(ReleaseError, match="does not match"):
        fetch_sdist("9.9.0")


def test_unknown_release_and_bad_versions(serve) -> None:  # type: ignore[no-untyped-def]
    serve()
    with pytest.raises(ReleaseError, match=r"no release 1\.2\.3 of vllm"):
        fetch_sdist("1.2.3")
    with pytest.raises(ReleaseError, match="not a release version"):
        fetch_sdist("../etc")


def test_unreachable_index(isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    with pytest.raises(ReleaseError, match="cannot reach the package index"):
        fetch_sdist("9.9.0")


def test_release_becomes_a_tagged_commit_pinned_to_its_recorded_sha(serve) -> None:  # type: ignore[no-untyped-def]
    serve()
    commit, pinned = release_commit("9.9.0")
    assert pinned == "abcdef1234" and commit.revision == "release:9.9.0"
    catalog = extract_commit(commit, options=ExtractOptions(), pinned_sha=pinned)
    (line,) = catalog.lines
    assert line.record.analyzedSha == "abcdef1234"
    assert line.record.githubUrl.startswith("https://github.com/vllm-project/vllm/blob/abcdef1234/vllm/config/a.py#L1")
    again, _ = release_commit("9.9.0")
    assert again.sha == commit.sha


def test_commit_id_reads_the_version_file() -> None:
    assert commit_id(b"__commit_id__ = commit_id = 'g2cf0a6915'\n") == "2cf0a6915"
    assert commit_id(b"__commit_id__ = commit_id = None\n") is None


def test_releases_are_imported_in_one_pass_each_file_stored_once(
    isolated_cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Several sdists go into one fast-import; each release's commit is the one it gets when built alone."""
    index = Index({f"vllm-{v}.tar.gz": make_sdist(v) for v in ("9.8.0", "9.9.0")})
    monkeypatch.setenv("PIP_INDEX_URL", index.url)
    try:
        both = release_repo(["9.8.0", "9.9.0"], repo=tmp_path / "both.git")
        alone = release_repo(["9.9.0"], repo=tmp_path / "alone.git")
    finally:
        index.server.shutdown()
    assert git(both, "rev-parse", "v9.9.0") == git(alone, "rev-parse", "v9.9.0")
    assert git(both, "ls-tree", "-r", "--name-only", "v9.8.0") == "vllm/_version.py\nvllm/config/a.py"
    # Two commits over one tree (the two packages are the same files): 2 blobs, 3 trees, 2 commits.
    counts = dict(line.split(": ") for line in git(both, "count-objects", "-v").splitlines())
    assert int(counts["in-pack"]) + int(counts["count"]) == 7


def test_an_import_that_fails_leaves_no_unfinished_pack(
    isolated_cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A fast-import stopped halfway (here: the second sdist is not on the index) leaves no temporary pack,
    nor does one an earlier import left when it was killed outright."""
    index = Index({"vllm-9.8.0.tar.gz": make_sdist("9.8.0")})
    monkeypatch.setenv("PIP_INDEX_URL", index.url)
    target = tmp_path / "r.git"
    try:
        release_repo(["9.8.0"], repo=target)
        (target / "objects" / "pack" / "tmp_pack_AbC123").write_bytes(b"PACK")  # as a SIGKILL leaves it
        with pytest.raises(ReleaseError):
            release_repo(["9.8.0", "9.9.9"], repo=target)
    finally:
        index.server.shutdown()
    assert not list((target / "objects" / "pack").glob("tmp_pack_*"))


def deltas(repo: Path) -> int:
    """How many blobs of a repository's packs are stored as deltas (a small import leaves loose objects)."""
    packs = sorted(str(index) for index in (repo / "objects" / "pack").glob("*.idx"))
    listed = git(repo, "verify-pack", "-v", *packs).splitlines() if packs else []
    return sum(1 for line in listed if len(line.split()) == 7 and line.split()[1] == "blob")


def similar_sdist(version: str) -> bytes:
    """An sdist of modules alike, each differing from the other versions' in a line: git would store them as
    deltas. Enough of them that fast-import writes a pack (below 100 objects it leaves them loose)."""
    body = "".join(f"def f{n}():\n    return {n}\n" for n in range(200))
    modules = {f"vllm-{version}/vllm/config/m{n}.py": f"VERSION = {version!r}, {n}\n{body}" for n in range(120)}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in {
            f"vllm-{version}/vllm/_version.py": "__commit_id__ = commit_id = 'gabcdef1234'\n",
            **modules,
        }.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(text.encode()), 1_700_000_000
            archive.addfile(info, io.BytesIO(text.encode()))
    return buffer.getvalue()


def test_releases_are_stored_whole_and_a_repository_of_an_older_extractor_is_refused(
    isolated_cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No object is a delta (reading one would apply its chain), over imports that add packs of their own; a
    repository without the mark this code sets (an older extractor's, its objects deltas) is refused in one
    line that says how to have it built again, and left as it was."""
    versions = ["9.7.0", "9.8.0", "9.9.0"]
    index = Index({f"vllm-{v}.tar.gz": similar_sdist(v) for v in versions})
    monkeypatch.setenv("PIP_INDEX_URL", index.url)
    target = tmp_path / "r.git"
    try:
        release_repo(versions[:2], repo=target)
        release_repo(versions, repo=target)  # a later import adds a pack of its own
        assert deltas(target) == 0
        assert git(target, "config", "extractor.wholeObjects") == "true"
        git(target, "config", "--unset", "extractor.wholeObjects")
        with pytest.raises(ReleaseError) as refused:
            release_repo(versions[:1], repo=target)
    finally:
        index.server.shutdown()
    said = str(refused.value)
    assert said.startswith(f"cannot use the release repository {target}: it was built by an older extractor")
    assert "\n" not in said and "built again" in said
    assert subprocess.run(["git", "config", "extractor.wholeObjects"], cwd=target).returncode == 1


@pytest.mark.release
def test_a_real_release_commit_is_the_same_whoever_builds_it(tmp_path: Path) -> None:
    """The release repository's commits are a pure function of the sdists: caches built before agree."""
    repo = release_repo(["0.27.0"], repo=tmp_path / "vllm.git")
    assert git(repo, "rev-parse", "v0.27.0") == "e0d68c924bbaa4db0793d48ce34a70bb60ee0df6"


def test_release_versions_lists_final_sdists_in_pep440_order(serve) -> None:  # type: ignore[no-untyped-def]
    from extractor.repo.release import release_versions

    index = serve()
    index.files = {
        name: b"x"
        for name in [
            "vllm-0.10.0.tar.gz",
            "vllm-0.9.2.tar.gz",
            "vllm-0.6.1.post1.tar.gz",
            "vllm-0.6.1.tar.gz",
            "vllm-0.11.0rc1.tar.gz",
            "vllm-0.12.0.dev3.tar.gz",
            "vllm-0.9.2-cp38-abi3-manylinux1_x86_64.whl",
            "vllm-0.2.0.tar.gz",
        ]
    }
    assert release_versions() == ["0.2.0", "0.6.1", "0.6.1.post1", "0.9.2", "0.10.0"]
    hits = index.hits
    assert release_versions() == ["0.2.0", "0.6.1", "0.6.1.post1", "0.9.2", "0.10.0"]
    assert index.hits == hits  # the listing is cached
    index.files["vllm-0.11.0.tar.gz"] = b"x"
    assert release_versions(max_age=0)[-1] == "0.11.0"


def test_a_range_of_releases_asks_the_index(serve) -> None:  # type: ignore[no-untyped-def]
    """What `release:all` and an open range name is what the index lists (ranges are read in test_spec.py)."""
    from extractor.catalog.spec import ReleaseRange, parse_catalogs

    index = serve()
    index.files["vllm-9.10.0.tar.gz"] = b"x"
    for text, expected in (("release:all", ["9.9.0", "9.10.0"]), ("release:9.9.1..", ["9.10.0"])):
        spec = parse_catalogs(text, repo="")
        assert isinstance(spec, ReleaseRange)
        assert [release.version for release in spec.releases()] == expected


def test_a_release_run_forks_its_workers_first_unless_its_catalog_is_cached(serve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`--release` starts its workers before it resolves the release and imports the pipeline, as `--sha`
    does; a run whose catalog is in the cache forks none."""
    import subprocess
    import sys

    from tests.test_workers import FORKS_SPY

    serve()
    command = [sys.executable, "-c", FORKS_SPY, "--release", "9.9.0", "--jobs", "2", "--output", "-", "--quiet"]
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1767225600"}
    first = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    again = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert (first.returncode, first.stderr) == (0, "forked 1\n")
    assert (again.returncode, again.stderr) == (0, "")
    assert again.stdout == first.stdout and '"from the sdist"' in first.stdout


def test_a_version_too_long_for_a_file_name_is_not_a_release_version() -> None:
    """Its sdist's name could not be made (the system's "File name too long" blamed the cache folder)."""
    from extractor.errors import ReleaseError
    from extractor.repo.release import fetch_sdist

    with pytest.raises(ReleaseError, match="not a release version"):
        fetch_sdist("0.28." + "9" * 5000)


@pytest.mark.parametrize("index", ["not a url", ":", "http://[::1"])
def test_a_package_index_that_is_no_url_is_said_not_taken_for_a_bug(
    index: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from extractor.errors import ReleaseError
    from extractor.repo.release import fetch_sdist

    monkeypatch.setenv("PIP_INDEX_URL", index)
    with pytest.raises(ReleaseError, match="cannot reach the package index at "):
        fetch_sdist("0.99.1")


def test_a_blank_index_setting_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch, isolated_cache: Path) -> None:
    """PIP_INDEX_URL of blanks alone (an IndexError once) is one line naming the setting; an empty one is no
    setting, as pip takes it: pip's configuration, else its default, is used."""
    monkeypatch.setenv("PIP_INDEX_URL", "   ")
    with pytest.raises(ReleaseError, match=r"^PIP_INDEX_URL is blank \('   '\): set it to the package index's simple"):
        index_url()
    result = cli("--release", "9.9.0", "--output", "-")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("extractor: error: PIP_INDEX_URL is blank") and result.stderr.count("\n") == 1
    from pip._internal.models.index import PyPI

    monkeypatch.setenv("PIP_INDEX_URL", "")
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    assert index_url() == PyPI.simple_url


@pytest.mark.parametrize(
    "index",
    [
        pytest.param("http://user:s3cret@127.0.0.1:9/simple", id="refused connection"),
        pytest.param("http://user:s3cret@127.0.0.1:x/simple", id="a port that is no number"),
        pytest.param("http://us%3Aer:s3cret@[::1/simple", id="no URL"),
    ],
)
def test_an_index_url_password_is_never_shown(
    index: str, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path
) -> None:
    """A message naming the index shows its password as pip does (`user:****@`): never the secret itself."""
    monkeypatch.setenv("PIP_INDEX_URL", index)
    with pytest.raises(ReleaseError, match="cannot reach the package index at ") as raised:
        fetch_sdist("9.9.0")
    assert "s3cret" not in str(raised.value)
    assert ":****@" in str(raised.value)


def test_index_credentials_go_as_basic_auth_not_in_the_url(serve, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """As pip sends them: `user:password@` of the index URL is an Authorization header to its host (urllib
    would take `user:password@127.0.0.1` for the host's name)."""
    index = serve()
    monkeypatch.setenv("PIP_INDEX_URL", index.url.replace("http://", "http://us%40er:pa%3Ass@"))
    sdist = fetch_sdist("9.9.0")
    assert sdist.path.read_bytes() == index.files["vllm-9.9.0.tar.gz"]
    expected = "Basic " + base64.b64encode(b"us@er:pa:ss").decode()
    assert index.authorizations == [expected, expected]  # the project page, then the download


def damage(repo: Path, how: str) -> None:
    """Damage a release repository as a full disk, a stray command or a bad sector might."""
    if how == "garbage HEAD":
        (repo / "HEAD").write_text("garbage\n")
    elif how == "a regular file":
        shutil.rmtree(repo)
        repo.write_text("not a repository\n")
    else:  # the deflated data of every object of a pack, past each entry's header, scrambled
        git(repo, "repack", "-a", "-d", "-q")
        (pack,) = (repo / "objects" / "pack").glob("*.pack")
        (index,) = (repo / "objects" / "pack").glob("*.idx")
        offsets = [
            int(line.split()[4])
            for line in git(repo, "verify-pack", "-v", str(index)).splitlines()
            if line.count(" ") >= 4 and len(line.split()[0]) == 40
        ]
        data = bytearray(pack.read_bytes())
        for offset in offsets:
            for at in range(offset + 6, offset + 12):
                data[at] ^= 0x5A
        pack.chmod(0o644)
        pack.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["garbage HEAD", "a regular file", "a corrupt pack"])
def test_a_damaged_release_repository_is_one_line_naming_it_and_the_remedy(
    serve,
    isolated_cache: Path,
    how: str,  # type: ignore[no-untyped-def]
) -> None:
    """Whatever git says of the cached release repository (a CalledProcessError, a raw `fatal:` line, an
    inflate error naming nothing, once), the error names the repository and how to be rid of it."""
    serve()
    release_commit("9.9.0")
    repo = isolated_cache / "extractor" / "releases" / "vllm.git"
    damage(repo, how)
    result = cli("--release", "9.9.0", "--output", "-", "--no-cache")
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert result.stderr.startswith("extractor: error: ") and result.stderr.count("\n") == 1, result.stderr
    assert str(repo) in result.stderr and "remove it, or run `extractor cache clear releases`" in result.stderr
    assert "a bug" not in result.stderr


def crafted_sdist(version: str, names: list[str]) -> bytes:
    """An sdist whose `vllm/` package holds files of the given names (each holding its own name)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name in ["vllm/_version.py", *names]:
            data = name.encode()
            info = tarfile.TarInfo(f"vllm-{version}/{name}")
            info.size, info.mtime = len(data), 1_700_000_000
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


# A name that, written as it is into fast-import's stream, ends the release's commit and starts one that moves
# the tag of an earlier release forward (a fast-forward: fast-import does so unforced), to a tree of its own.
INJECTION = (
    "vllm/evil.py\ncommit refs/tags/v9.8.0\ncommitter x <x@x> 0 +0000\ndata 0\nfrom refs/tags/v9.8.0^0\n"
    "M 100644 :1 vllm/pwned.py"
)
ODD_NAMES = [
    "vllm/new\nline.py",
    'vllm/"quoted".py',
    "vllm/back\\slash.py",
    "vllm/tab\t.py",
    "vllm/é\x7f.py",
]


@pytest.mark.parametrize("names", [ODD_NAMES, [INJECTION]], ids=["odd names", "commands in a name"])
def test_sdist_file_names_are_quoted_into_fast_import_and_no_tag_moves(
    names: list[str], isolated_cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every name is stored as the sdist holds it (a newline, a quote, a backslash, a tab, DEL, UTF-8), and a
    crafted name is a file's name, never commands that re-point an existing release's tag."""
    index = Index({"vllm-9.8.0.tar.gz": make_sdist("9.8.0"), "vllm-9.9.0.tar.gz": crafted_sdist("9.9.0", names)})
    monkeypatch.setenv("PIP_INDEX_URL", index.url)
    target = tmp_path / "r.git"
    try:
        release_repo(["9.8.0"], repo=target)
        before = git(target, "rev-parse", "v9.8.0")
        release_repo(["9.9.0"], repo=target)
    finally:
        index.server.shutdown()
    assert git(target, "rev-parse", "v9.8.0") == before
    listed = subprocess.run(["git", "ls-tree", "-r", "-z", "--name-only", "v9.9.0"], cwd=target, capture_output=True)
    assert sorted(listed.stdout.decode().split("\0")[:-1]) == sorted(["vllm/_version.py", *names])
    for name in names:  # each file holds its own name: the names are those of its blobs too
        assert git(target, "cat-file", "blob", f"v9.9.0:{name}") == name


@pytest.mark.parametrize("name", ["vllm/../escape.py", "vllm//twice.py", "vllm/./here.py"])
def test_an_sdist_name_git_cannot_store_is_refused(
    name: str, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A path with an empty, `.` or `..` part would make a tree git itself calls broken (fsck: hasDotdot)."""
    index = Index({"vllm-9.9.0.tar.gz": crafted_sdist("9.9.0", [name])})
    monkeypatch.setenv("PIP_INDEX_URL", index.url)
    try:
        with pytest.raises(ReleaseError, match=r"holds a file git cannot store: 'vllm-9\.9\.0/vllm/"):
            release_repo(["9.9.0"], repo=tmp_path / "r.git")
    finally:
        index.server.shutdown()
    assert not git(tmp_path / "r.git", "tag")


def test_a_version_with_a_trailing_newline_is_no_release_version(serve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`$` matches before a final newline: versions are fullmatched, wherever one is checked."""
    from extractor.repo.release import release_versions

    index = serve()
    with pytest.raises(ReleaseError, match=r"not a release version: '9\.9\.0\\n'"):
        fetch_sdist("9.9.0\n")
    with pytest.raises(ReleaseError, match=r"not a release version: '9\.9\.0\\n'"):
        release_repo(["9.9.0\n"], repo=tmp_path / "r.git")
    index.files = {"vllm-9.8.0\n.tar.gz": b"x", "vllm-9.9.0.tar.gz": b"x"}
    assert release_versions() == ["9.9.0"]
    result = cli("--release", "9.9.0\n", "--output", "-")
    assert (result.returncode, result.stderr) == (2, "extractor: error: not a release version: '9.9.0\\n'\n")
    # Nor do other scripts' digits make one (`\\d` takes a fullwidth nine): ASCII digits alone.
    result = cli("--release", "\uff19.9.0", "--output", "-")
    assert (result.returncode, result.stderr) == (2, "extractor: error: not a release version: '\uff19.9.0'\n")


def test_a_release_written_as_its_tag_or_bare_is_the_release_with_one_sha(serve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`v9.9.0` wherever a release is taken; a bare version that is no revision of the repository (a remote one
    is not asked) is read as the release; a release's messages name it, never the SHA of the commit that holds
    its sdist (the catalog names the SHA its records point at)."""
    serve()
    tagged = cli("--release", "v9.9.0", "--output", "-", "--quiet")
    assert tagged.returncode == 0, tagged.stderr
    assert json.loads(tagged.stdout)["record"]["analyzedSha"] == "abcdef1234"
    listed = cli("list", "--catalog", "release:v9.9.0", "--format", "json")
    assert listed.returncode == 0 and '"from the sdist"' in listed.stdout, listed.stderr
    history = cli("history", "release:v9.9.0", "--output", str(tmp_path / "history"), "--quiet")
    assert history.returncode == 0, history.stderr
    assert json.loads((tmp_path / "history" / "history.json").read_text())["revisions"][0]["revision"] == "9.9.0"
    bare = cli("diff", "9.9.0", "release:9.9.0", "--format", "markdown")
    assert bare.returncode == 0, bare.stderr
    assert "reading 9.9.0 as release:9.9.0" in bare.stderr and "| unchanged | 1 |" in bare.stdout
    mistyped = cli("--release", "9.9.0", "--path", "vllm/confg", "--output", "-")
    assert mistyped.returncode == 2
    assert mistyped.stderr == (
        "extractor: error: no Python file under vllm/confg at release:9.9.0; did you mean --path vllm/config?\n"
    )
