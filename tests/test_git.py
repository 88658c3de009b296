"""The git stage: revisions resolve once to a full SHA; files come from objects; repos stay untouched."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from extractor.errors import RepositoryError, RevisionError
from extractor.repo.git.blobs import Blob, list_blobs, read_blobs, with_sizes
from extractor.repo.git.commit import resolve
from tests.conftest import GitRepo, git, run_cli


@pytest.fixture
def tagged(git_repo: GitRepo) -> tuple[GitRepo, str]:
    sha = git_repo.commit({"pkg/a.py": 'raise ValueError("a")\n', "pkg/b.txt": "x", "other/c.py": "x = 1\n"}, tag="v1")
    git(git_repo.path, "branch", "release")
    return git_repo, sha


@pytest.mark.parametrize("revision", ["v1", "release", "main", "HEAD"])
def test_any_revision_resolves_to_the_full_sha(tagged: tuple[GitRepo, str], revision: str) -> None:
    repo, sha = tagged
    assert resolve(str(repo.path), revision).sha == sha


def test_short_sha_resolves(tagged: tuple[GitRepo, str]) -> None:
    repo, sha = tagged
    assert resolve(str(repo.path), sha[:10]).sha == sha


@pytest.mark.parametrize("revision", ["nope", "-h", ""])
def test_unknown_revision_is_an_error(tagged: tuple[GitRepo, str], revision: str) -> None:
    repo, _ = tagged
    with pytest.raises(RevisionError, match="unknown revision"):
        resolve(str(repo.path), revision)


@pytest.mark.parametrize(("revision", "kind"), [("v1:pkg/a.py", "blob"), ("v1^{tree}", "tree"), ("v1:pkg", "tree")])
def test_an_object_that_is_not_a_commit_says_so(tagged: tuple[GitRepo, str], revision: str, kind: str) -> None:
    repo, _ = tagged
    oid = git(repo.path, "rev-parse", revision)
    for name in (revision, oid):
        with pytest.raises(RevisionError, match=rf"'{re.escape(name)}' in .* is a {kind}, not a commit"):
            resolve(str(repo.path), name)


def test_a_commit_named_by_its_message_resolves(git_repo: GitRepo) -> None:
    """`:/text` names the newest commit whose message holds text; it takes `^{commit}` as more text, so a
    commit it names used to be refused as "a commit, not a commit"."""
    git_repo.commit({"pkg/a.py": "x = 1\n"}, message="the first one")
    git_repo.commit({"pkg/a.py": "x = 2\n"}, message="the second one")
    first = git(git_repo.path, "rev-parse", "HEAD~1")
    assert resolve(str(git_repo.path), ":/first").sha == first
    with pytest.raises(RevisionError, match="unknown revision"):
        resolve(str(git_repo.path), ":/no such message")


def test_missing_and_non_repositories_are_errors(tmp_path: Path) -> None:
    with pytest.raises(RepositoryError, match="does not exist"):
        resolve(str(tmp_path / "missing"), "HEAD")
    with pytest.raises(RepositoryError, match="not a git repository"):
        resolve(str(tmp_path), "HEAD")


def test_blobs_are_listed_under_prefixes_sorted_and_read_from_objects(tagged: tuple[GitRepo, str]) -> None:
    repo, _ = tagged
    (repo.path / "pkg" / "a.py").write_text("uncommitted\n")
    commit = resolve(str(repo.path), "v1")
    blobs = list_blobs(commit, ["pkg", "other/"])
    assert [b.path for b in blobs] == ["other/c.py", "pkg/a.py"]
    contents = dict((blob.path, data) for blob, data in read_blobs(commit, blobs))
    assert contents["pkg/a.py"] == b'raise ValueError("a")\n'


def test_sizes_are_asked_of_git_for_the_blobs_about_to_be_read(tagged: tuple[GitRepo, str]) -> None:
    """A listing does not read sizes (git would look up every object); `with_sizes` asks for them in one
    go, and a size git cannot tell (an object not in the repository) stays unknown."""
    repo, _ = tagged
    commit = resolve(str(repo.path), "v1")
    blobs = list_blobs(commit, ["pkg", "other/"])
    assert {blob.size for blob in blobs} == {None}
    ghost = Blob(path="pkg/ghost.py", oid="0" * 40, mode="100644")
    sized = with_sizes(commit, [*blobs, ghost])
    contents = dict((blob.path, len(data)) for blob, data in read_blobs(commit, blobs))
    assert [(blob.path, blob.size) for blob in sized] == [*sorted(contents.items()), ("pkg/ghost.py", None)]


def test_prefix_is_a_path_not_a_string_prefix(git_repo: GitRepo) -> None:
    git_repo.commit({"vllm/config/a.py": "", "vllm/configuration.py": "", "vllm/config.py": ""})
    commit = resolve(str(git_repo.path), "HEAD")
    assert [b.path for b in list_blobs(commit, ["vllm/config"])] == ["vllm/config/a.py"]


def test_bare_repository_is_read_in_place(tagged: tuple[GitRepo, str], tmp_path: Path) -> None:
    repo, sha = tagged
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "--quiet", "--bare", str(repo.path), str(bare))
    assert resolve(str(bare), "v1").sha == sha


def test_repo_name_comes_from_a_github_remote(tagged: tuple[GitRepo, str]) -> None:
    repo, _ = tagged
    assert resolve(str(repo.path), "v1").repo_name == "vllm-project/vllm"
    git(repo.path, "remote", "add", "origin", "git@github.com:someone/project.git")
    assert resolve(str(repo.path), "v1").repo_name == "someone/project"


def test_url_is_cloned_bare_and_blob_filtered_then_fetched_when_the_revision_is_missing(
    git_repo: GitRepo, isolated_cache: Path
) -> None:
    git(git_repo.path, "config", "uploadpack.allowFilter", "true")
    git(git_repo.path, "config", "uploadpack.allowAnySHA1InWant", "true")
    first = git_repo.commit({"pkg/a.py": 'raise ValueError("a")\n'}, tag="v1")
    url = f"file://{git_repo.path}"
    commit = resolve(url, "v1")
    assert commit.sha == first
    clones = list((isolated_cache / "extractor" / "repos").iterdir())
    assert len(clones) == 1 and (clones[0] / "HEAD").exists() and not (clones[0] / ".git").exists()
    assert git(clones[0], "config", "remote.origin.partialclonefilter") == "blob:none"
    listing = git(clones[0], "rev-list", "--objects", "--no-walk", "--missing=print", first)
    assert any(line.startswith("?") for line in listing.splitlines())  # blobs really are left out
    data = dict((b.path, d) for b, d in read_blobs(commit, list_blobs(commit, ["pkg"])))
    assert data == {"pkg/a.py": b'raise ValueError("a")\n'}

    second = git_repo.commit({"pkg/a.py": 'raise ValueError("b")\n'}, tag="v2")
    commit = resolve(url, second[:10])
    assert commit.sha == second
    data = dict((b.path, d) for b, d in read_blobs(commit, list_blobs(commit, ["pkg"])))
    assert data == {"pkg/a.py": b'raise ValueError("b")\n'}


def test_unreachable_url_is_an_error(isolated_cache: Path, tmp_path: Path) -> None:
    with pytest.raises(RepositoryError, match="cannot clone"):
        resolve(f"file://{tmp_path}/nothing-here", "HEAD")


def test_a_url_whose_bytes_are_not_utf8_is_an_error_about_the_url(isolated_cache: Path, tmp_path: Path) -> None:
    """A URL given in bytes that are not UTF-8 (a shell's $'\\xff') names its clone's folder by its bytes."""
    with pytest.raises(RepositoryError, match="cannot clone"):
        resolve(f"file://{tmp_path}/" + os.fsdecode(b"\xff"), "HEAD")


def test_a_reader_that_met_a_missing_object_is_never_used_again(git_repo: GitRepo) -> None:
    """cat-file answers every request: after one it could not serve, the answers still in the pipe must
    not pass for the next request's."""
    from extractor.repo.git.blobs import reader

    files = {f"pkg/m{i}.py": f"x = {i}\n" for i in range(4)}
    git_repo.commit(files, tag="v1")
    oids = [git(git_repo.path, "rev-parse", f"v1:pkg/m{i}.py") for i in range(4)]
    (git_repo.path / ".git" / "objects" / oids[1][:2] / oids[1][2:]).unlink()
    git_dir = (git_repo.path / ".git").resolve()
    first = reader(git_dir)
    with pytest.raises(RepositoryError, match=oids[1]):
        first.read(oids[:3])  # m0 is read, m1 is missing, m2's answer is left in the pipe
    second = reader(git_dir)
    assert second is not first
    assert second.read([oids[3]]) == [b"x = 3\n"]
    second.close()


def test_odd_file_names_are_read_exactly_as_the_tree_holds_them(git_repo: GitRepo) -> None:
    """git's output is read as bytes (-z): a carriage return stays one, a byte that is not UTF-8 is kept."""
    git_repo.commit({"pkg/a\rb.py": "x = 1\n", "pkg/caf\udce9.py": "y = 2\n", "pkg/new\nline.py": "z = 3\n"})
    commit = resolve(str(git_repo.path), "HEAD")
    blobs = list_blobs(commit, ["pkg"])
    assert [b.path for b in blobs] == ["pkg/a\rb.py", "pkg/caf\udce9.py", "pkg/new\nline.py"]
    assert [data for _, data in read_blobs(commit, blobs)] == [b"x = 1\n", b"y = 2\n", b"z = 3\n"]


def test_names_that_are_not_utf8_never_fail_a_run(git_repo: GitRepo, tmp_path: Path) -> None:
    """Out of scope or not Python, such a name is ignored; a Python file in scope is a named skip."""
    git_repo.commit(
        {
            "vllm/config/a\rb.py": "raise ValueError('carriage return')\n",
            "vllm/config/notes-\udce9.txt": "not python\n",
            "vllm/config/caf\udce9.py": "raise ValueError('latin-1 name')\n",
            "vllm/config/ok.py": "raise ValueError('fine')\n",
        },
        tag="v1",
    )
    result = run_cli("--repo", str(git_repo.path), "--sha", "v1", "--output", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "extractor: warning: 1 file(s) in scope could not be parsed" in result.stderr
    (directory,) = (tmp_path / "out").rglob("manifest.json")
    manifest = json.loads(directory.read_text())
    assert manifest["skippedFiles"] == [
        {"path": "vllm/config/caf\\xe9.py", "reason": "the file name is not UTF-8 (shown with \\x escapes)"}
    ]
    records = [json.loads(line)["record"] for line in (directory.parent / "records.jsonl").read_text().splitlines()]
    assert [(r["filePath"], r["errorMessage"]) for r in records] == [
        ("vllm/config/a\rb.py", "carriage return"),
        ("vllm/config/ok.py", "fine"),
    ]


def test_scratch_folders_of_killed_clones_are_removed(git_repo: GitRepo, isolated_cache: Path) -> None:
    """A clone killed midway leaves .clone-<pid>-*; the next clone removes those whose process is gone."""
    git_repo.commit({"pkg/a.py": "x = 1\n"}, tag="v1")
    gone = subprocess.Popen(["true"])
    gone.wait()
    repos = isolated_cache / "extractor" / "repos"
    dead, alive = repos / f".clone-{gone.pid}-abc", repos / f".clone-{os.getpid()}-def"
    for scratch in (dead, alive):
        (scratch / "repo.git").mkdir(parents=True)
    resolve(f"file://{git_repo.path}", "v1")
    assert not dead.exists() and alive.exists()


def scramble(repo: Path, oid: str) -> None:
    """Scramble the deflated data of one object of a repository's pack, its entry's header (type, size) kept:
    git still says what type the object is, and cannot read it."""
    git(repo, "repack", "-a", "-d", "-q")
    (index,) = (repo / ".git" / "objects" / "pack").glob("*.idx")
    rows = [line.split() for line in git(repo, "verify-pack", "-v", str(index)).splitlines()]
    (offset,) = [int(row[4]) for row in rows if row and row[0] == oid]
    pack = index.with_suffix(".pack")
    data = bytearray(pack.read_bytes())
    for at in range(offset + 6, offset + 12):
        data[at] ^= 0x5A
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))


@pytest.mark.parametrize("revision", ["v1", "main", "full id"])
def test_a_damaged_commit_is_said_damaged_naming_the_repository(tagged: tuple[GitRepo, str], revision: str) -> None:
    """A commit git cannot inflate is "missing or damaged", not "a commit, not a commit" (its pack entry's
    header still says commit)."""
    repo, sha = tagged
    scramble(repo.path, sha)
    assert git(repo.path, "cat-file", "-t", sha) == "commit"
    name = sha if revision == "full id" else revision
    with pytest.raises(RepositoryError) as raised:
        resolve(str(repo.path), name)
    assert str(raised.value).startswith(
        f"cannot read {name!r} in {repo.path}: an object it needs is missing or damaged"
    )
    assert "not a commit" not in str(raised.value)


def test_a_full_id_of_no_object_is_an_unknown_revision(tagged: tuple[GitRepo, str]) -> None:
    """git takes a full id as it is, without looking it up: one of nothing here is unknown, not damaged."""
    repo, _ = tagged
    with pytest.raises(RevisionError, match="unknown revision '1234567890"):
        resolve(str(repo.path), "1234567890" * 4)


def test_a_repository_path_that_is_a_symlink_loop_or_dangles_says_so(tmp_path: Path) -> None:
    """Path.exists() is False for both: neither is "the path does not exist"."""
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(RepositoryError, match="it cannot be read: Too many levels of symbolic links"):
        resolve(str(tmp_path / "a"), "HEAD")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    with pytest.raises(RepositoryError, match=f"it is a symlink to {tmp_path / 'gone'}, which does not exist"):
        resolve(str(tmp_path / "dangling"), "HEAD")


def test_a_damaged_cached_clone_names_itself_and_the_remedy(git_repo: GitRepo, isolated_cache: Path) -> None:
    """A clone in the cache that git cannot read says which, and that clearing the clones mends it."""
    git_repo.commit({"pkg/a.py": "x = 1\n"}, tag="v1")
    url = f"file://{git_repo.path}"
    resolve(url, "v1")
    (clone,) = (isolated_cache / "extractor" / "repos").iterdir()
    for path in (clone / "objects").rglob("*"):
        if path.is_file() and path.parent.name != "info":
            path.chmod(0o644)
            path.write_bytes(b"garbage")
    with pytest.raises(RepositoryError) as raised:
        resolve(url, "v1")
    assert str(clone) in str(raised.value)
    assert str(raised.value).endswith("remove it, or run `extractor cache clear clones`; it is made again)")


def test_credentials_in_a_repository_url_are_never_shown_nor_named_in_the_cache(isolated_cache: Path) -> None:
    """As pip shows an index's: `user:****@`, in the message and nowhere in the clone's folder name."""
    with pytest.raises(RepositoryError, match=r"cannot clone http://user:\*\*\*\*@127\.0\.0\.1:9/x\.git") as raised:
        resolve("http://user:s3cret@127.0.0.1:9/x.git", "HEAD")
    assert "s3cret" not in str(raised.value)
    from extractor.repo.git.clone import _clone_dir

    assert "s3cret" not in str(_clone_dir("http://user:s3cret@127.0.0.1:9/x.git"))
