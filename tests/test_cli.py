"""The command line: files written atomically, stdout mode, errors as one line with exit code 2."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from extractor.cli import main
from tests.conftest import GitRepo, git
from tests.conftest import run_cli as run

SOURCE = """
class Config:
    def check(self, n):
        if n > self.limit:
            raise ValueError(f"n ({n}) exceeds limit ({self.limit}).")
        raise TypeError("not in scope")
"""


@pytest.fixture
def repo(git_repo: GitRepo) -> GitRepo:
    git_repo.commit(
        {"vllm/config/a.py": SOURCE, "vllm/config/b.py": "x = 1\n", "vllm/other.py": 'raise ValueError("o")\n'},
        tag="v1",
    )
    return git_repo


def test_writes_records_and_manifest_under_the_full_sha(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sha = git(repo.path, "rev-parse", "HEAD")
    assert main(["--repo", str(repo.path), "--sha", "v1", "--output", str(tmp_path / "out")]) == 0
    directory = tmp_path / "out" / sha
    assert sorted(p.name for p in directory.iterdir()) == ["manifest.json", "records.jsonl"]
    lines = [orjson.loads(line) for line in (directory / "records.jsonl").read_bytes().splitlines()]
    assert [list(line) for line in lines] == [["record", "extraction", "datasetVersion"]]
    assert lines[0]["record"]["errorMessage"] == "n ({n}) exceeds limit ({self.limit})."
    manifest = orjson.loads((directory / "manifest.json").read_bytes())
    assert (manifest["sha"], manifest["revision"], manifest["counts"]["records"]) == (sha, "v1", 1)
    assert manifest["scope"] == {
        "paths": ["vllm/config"],
        "exceptions": ["ValueError"],
        "context": 18,
        "configFrom": ["vllm/config"],
        "flagsFrom": "vllm/engine/arg_utils.py",
    }
    assert "1 records" in capsys.readouterr().err


def test_default_output_is_output_owner_name(repo: GitRepo, tmp_path: Path) -> None:
    result = run("--repo", str(repo.path), "--sha", "v1", "--path", "vllm", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    sha = git(repo.path, "rev-parse", "HEAD")
    records = (tmp_path / "output" / "vllm-project" / "vllm" / sha / "records.jsonl").read_bytes()
    assert len(records.splitlines()) == 2


def test_output_dash_writes_jsonl_to_stdout_only(repo: GitRepo, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    result = run("--repo", str(repo.path), "--sha", "v1", "--exception", "*", "--output", "-", cwd=cwd)
    assert result.returncode == 0 and result.stderr == ""
    classes = [orjson.loads(line)["record"]["errorClass"] for line in result.stdout.splitlines()]
    assert classes == ["ValueError", "TypeError"]
    assert list(cwd.iterdir()) == []


def test_same_revision_by_tag_or_short_sha_gives_identical_bytes(repo: GitRepo, tmp_path: Path) -> None:
    sha = git(repo.path, "rev-parse", "HEAD")
    env = {"SOURCE_DATE_EPOCH": "1767225600"}
    by_tag = run("--repo", str(repo.path), "--sha", "v1", "--output", "-", env=env)
    by_sha = run("--repo", str(repo.path), "--sha", sha[:7], "--output", "-", env=env)
    assert by_tag.returncode == by_sha.returncode == 0
    assert by_tag.stdout == by_sha.stdout
    assert '"analyzedAt":"2026-01-01T00:00:00.000Z"' in by_tag.stdout


def test_local_repository_is_never_changed(repo: GitRepo, tmp_path: Path) -> None:
    first = git(repo.path, "rev-parse", "HEAD")
    repo.commit({"vllm/config/a.py": SOURCE.replace("exceeds", "is above")})
    (repo.path / "vllm" / "config" / "b.py").write_text("dirty = True\n")
    before = (
        git(repo.path, "status", "--porcelain"),
        git(repo.path, "rev-parse", "HEAD"),
        (repo.path / ".git" / "index").read_bytes(),
    )
    assert main(["--repo", str(repo.path), "--sha", first[:8], "--output", str(tmp_path / "o")]) == 0
    after = (
        git(repo.path, "status", "--porcelain"),
        git(repo.path, "rev-parse", "HEAD"),
        (repo.path / ".git" / "index").read_bytes(),
    )
    assert before == after
    record = orjson.loads((tmp_path / "o" / first / "records.jsonl").read_bytes().splitlines()[0])["record"]
    assert "exceeds" in record["errorMessage"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--sha", "nope"], "extractor: error: unknown revision 'nope' in {repo}", id="unknown revision"),
        pytest.param(
            ["--sha", "v1", "--path", "nowhere"],
            "extractor: error: no Python file under nowhere at v1",
            id="empty scope",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(repo: GitRepo, tmp_path: Path, args: list[str], message: str) -> None:
    result = run("--repo", str(repo.path), *args, "--output", str(tmp_path / "o"))
    assert result.returncode == 2
    assert result.stderr.startswith(message.format(repo=repo.path))
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "o").exists()


def test_missing_repository_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = run("--repo", str(tmp_path / "none"), "--sha", "HEAD", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        2,
        f"extractor: error: no repository at {tmp_path / 'none'}: the path does not exist\n",
    )
    assert list(tmp_path.iterdir()) == []


def test_unwritable_output_is_one_line_and_exit_2(repo: GitRepo, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run("--repo", str(repo.path), "--sha", "v1", "--output", str(blocker / "sub"))
    assert result.returncode == 2 and result.stderr.startswith("extractor: error: cannot write")
    assert len(result.stderr.splitlines()) == 1


def test_help_documents_every_option() -> None:
    result = run("--help")
    for option in ["--repo", "--sha", "--path", "--exception", "--context", "--repo-name", "--output"]:
        assert option in result.stdout
    assert result.returncode == 0
