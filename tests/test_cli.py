"""The command line: files written atomically, stdout mode, errors as one line with exit code 2.

Most tests run it in this process (`cli`, which returns what the process would); those about the process
itself, its exit status and its streams, start `python -m extractor` (`process`)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from extractor.cli.main import main
from extractor.cli.options import commands
from tests.conftest import GitRepo, git
from tests.conftest import cli as run
from tests.conftest import run_cli as process
from tests.test_release import Index, make_sdist

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
    # A scope other than the default one says which in the folder's name (issue 16, point 5).
    records = (tmp_path / "output" / "vllm-project" / "vllm" / f"{sha}-vllm-ValueError" / "records.jsonl").read_bytes()
    assert len(records.splitlines()) == 2


def test_output_dash_writes_jsonl_to_stdout_only(repo: GitRepo, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    result = process("--repo", str(repo.path), "--sha", "v1", "--exception", "*", "--output", "-", cwd=cwd)
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
    result = process("--repo", str(repo.path), *args, "--output", str(tmp_path / "o"))
    assert result.returncode == 2
    assert result.stderr.startswith(message.format(repo=repo.path))
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["--sha", "v1", "--output", ""],
        ["site", "--catalog", "v1", "--output", ""],
        ["history", "v1", "--output", " "],
        ["diff", "v1", ""],
        ["--sha", "v1", "--config-from", ""],
        ["nightly", "--output", "n", "--site", ""],
    ],
    ids=["extraction", "site", "history", "diff", "config-from", "nightly site"],
)
def test_an_empty_value_is_a_usage_error_not_a_default(repo: GitRepo, tmp_path: Path, args: list[str]) -> None:
    """`--output ''` is no folder: taken for the default, it wrote where the user did not say."""
    work = tmp_path / "work"
    work.mkdir()
    result = run(*args, "--repo", str(repo.path), cwd=work)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("extractor: error: ") and ": an empty value (see extractor" in result.stderr
    assert list(work.iterdir()) == []


def test_a_dotted_exception_takes_its_class_name_and_says_so(git_repo: GitRepo, tmp_path: Path) -> None:
    """A raise is matched by its class's name (`raise errors.ConfigError(...)` is a ConfigError): a dotted
    --exception was never matched and wrote an empty catalog."""
    git_repo.commit({"pkg/a.py": "import errors\n\ndef f():\n    raise errors.ConfigError('bad')\n"}, tag="v1")
    common = ["--repo", str(git_repo.path), "--sha", "v1", "--path", "pkg", "--output", "-"]
    env = {"SOURCE_DATE_EPOCH": "1767225600"}
    dotted = run(*common, "--exception", "errors.ConfigError", env=env)
    assert dotted.returncode == 0 and dotted.stdout == run(*common, "--exception", "ConfigError", env=env).stdout
    assert dotted.stdout.count("\n") == 1
    assert (
        dotted.stderr
        == "extractor: warning: --exception errors.ConfigError takes the raises of every class named ConfigError\n"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--sha", "v1", "--sha", "v2"],
        ["--sha", "v1", "--repo", "a", "--repo", "b"],
        ["--sha", "v1", "--output", "-", "--output", "o"],
        ["diff", "v1", "v2", "--format", "json", "--format", "markdown"],
        ["history", "v1", "--output", "a", "--output", "b"],
    ],
    ids=["sha", "repo", "output", "diff format", "history output"],
)
def test_an_option_given_twice_is_a_usage_error_not_the_last_kept(tmp_path: Path, args: list[str]) -> None:
    result = run(*args, cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1
    assert "takes one value, given twice" in result.stderr and list(tmp_path.iterdir()) == []


def test_missing_repository_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = process("--repo", str(tmp_path / "none"), "--sha", "HEAD", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        2,
        f"extractor: error: no repository at {tmp_path / 'none'}: the path does not exist\n",
    )
    assert list(tmp_path.iterdir()) == []


# Each command that takes --repo, as a user runs it on releases and folders, which need no repository.
WITH_REPO = {
    "": ["--release", "0.28.0"],
    "diff": ["diff", "v0.27.0", "v0.28.0"],
    "explain": ["explain", "--catalog", "release:0.28.0", "max-num-batched-tokens-is-smaller"],
    "history": ["history", "release:0.27.0..0.28.0"],
    "list": ["list", "--catalog", "release:0.28.0"],
    "match": ["match", "--catalog", "release:0.28.0", "x"],
    "nightly": ["nightly", "--branch", "main", "--output", "published"],
    "reproduce": ["reproduce", "--catalog", "release:0.28.0"],
    "site": ["site", "--catalog", "release:0.28.0", "--output", "site"],
}


def test_every_command_taking_repo_is_checked_below() -> None:
    import importlib

    from extractor.cli import extract

    taking = {"": extract.parser()} | {
        name: importlib.import_module(f"extractor.cli.commands.{name}").parser() for name in commands()
    }
    assert sorted(name for name, parser in taking.items() if "--repo" in parser._option_string_actions) == sorted(
        WITH_REPO
    )


@pytest.mark.parametrize("command", sorted(WITH_REPO), ids=lambda name: name or "extract")
@pytest.mark.parametrize("missing", ["none", "file"])
def test_a_repo_that_is_not_there_is_refused_by_every_command(
    command: str, missing: str, tmp_path: Path, isolated_cache: Path
) -> None:
    """`diff v0.27.0 v0.28.0 --repo PATH` with nothing at PATH diffed the release sdists without a word
    (issue 56, 12): a --repo named is checked first, in every command, whether its catalogs need it or not."""
    (tmp_path / "file").write_text("")
    where = tmp_path / missing
    said = "the path does not exist" if missing == "none" else None
    result = run(*WITH_REPO[command], "--repo", str(where), cwd=tmp_path)
    expected = f"no repository at {where}: {said}" if said else f"{where} is not a git repository"
    assert (result.returncode, result.stderr, result.stdout) == (2, f"extractor: error: {expected}\n", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"] and not isolated_cache.exists()


def test_quiet_lasts_for_its_run_only(repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run with --quiet, called as a function, leaves its caller's warnings as they were."""
    from extractor.util.progress import warn

    assert main(["--repo", str(repo.path), "--sha", "v1", "--output", str(tmp_path / "out"), "--quiet"]) == 0
    capsys.readouterr()
    warn("still said")
    assert capsys.readouterr().err == "extractor: warning: still said\n"


def test_unwritable_output_is_one_line_and_exit_2(repo: GitRepo, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = process("--repo", str(repo.path), "--sha", "v1", "--output", str(blocker / "sub"))
    assert result.returncode == 2 and result.stderr.startswith("extractor: error: cannot write")
    assert len(result.stderr.splitlines()) == 1


def test_help_documents_every_option() -> None:
    result = run("--help")
    for option in ["--repo", "--sha", "--path", "--exception", "--context", "--repo-name", "--output"]:
        assert option in result.stdout
    assert result.returncode == 0


# Issue 16: a newcomer's first hour. Each test runs the command as a user does, in a subprocess.

RAISES = """
class Config:
    def check(self, n):
        if not isinstance(n, str):
            raise ValueError(f"n ({n}) is not a string: {type(n)}.")
        if len(n) > self.limit:
            raise TypeError("too long")
"""


@pytest.fixture
def raises(git_repo: GitRepo) -> GitRepo:
    git_repo.commit({"vllm/config/a.py": RAISES, "vllm/config/b.py": "x = 1\n", "vllm/other.py": SOURCE}, tag="v1")
    return git_repo


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        pytest.param("difff", "unknown command 'difff'; did you mean 'diff'?", id="diff"),
        pytest.param("mtach", "unknown command 'mtach'; did you mean 'match'?", id="match"),
        pytest.param("lst", "unknown command 'lst'; did you mean 'list'?", id="list"),
        pytest.param("Explain", "unknown command 'Explain'; did you mean 'explain'?", id="case"),
        pytest.param("hist", "unknown command 'hist'; did you mean 'history'?", id="cut short"),
        pytest.param(
            "frobnicate",
            "unknown command 'frobnicate': the commands are cache, diff, explain, history, list, match, nightly, "
            "reproduce, site; an extraction takes options only (--sha REV or --release X.Y.Z; see --help)",
            id="nothing close",
        ),
    ],
)
def test_unknown_command_says_which_was_meant(word: str, expected: str, tmp_path: Path) -> None:
    result = run(word, "release:0.27.0", "release:0.28.0", cwd=tmp_path)
    assert (result.returncode, result.stderr, result.stdout) == (2, f"extractor: error: {expected}\n", "")


@pytest.mark.parametrize(
    "spec",
    ["{tmp}/nope", "./nope", "~/surely-no-such-catalog-16", "nope.jsonl", "out/records.jsonl", "../nope"],
)
def test_path_like_catalog_that_does_not_exist_is_never_cloned(spec: str, tmp_path: Path, isolated_cache: Path) -> None:
    spec = spec.format(tmp=tmp_path)
    for command in (["match", "--catalog", spec, "x"], ["list", "--catalog", spec], ["diff", spec, spec]):
        result = run(*command, cwd=tmp_path)
        assert (result.returncode, result.stderr) == (
            2,
            f"extractor: error: no catalog at {spec}: the path does not exist\n",
        ), command
    assert not isolated_cache.exists()  # nothing was cloned


def test_folder_without_records_names_the_catalogs_inside(raises: GitRepo, tmp_path: Path) -> None:
    assert run("--repo", str(raises.path), "--sha", "v1", cwd=tmp_path).returncode == 0
    sha = git(raises.path, "rev-parse", "HEAD")
    result = run("list", "--catalog", "output/vllm-project/vllm", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        2,
        f"extractor: error: no catalog at output/vllm-project/vllm: no records.jsonl in it, but in its folders {sha}\n",
    )


def test_a_branch_with_a_slash_of_a_local_repository_is_still_a_revision(raises: GitRepo, tmp_path: Path) -> None:
    git(raises.path, "branch", "feature/x")
    result = run("list", "--catalog", "feature/x", "--repo", str(raises.path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "vllm/config/a.py:5" in result.stdout


def test_mistyped_exception_is_an_error_naming_the_raised_classes_nearest_first(
    raises: GitRepo, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert run("--repo", str(raises.path), "--sha", "v1", "--output", str(out)).returncode == 0
    (folder,) = out.iterdir()
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    sha = git(raises.path, "rev-parse", "HEAD")
    for wrong, nearest in [
        ("ValueErorr", "ValueError (1), TypeError (1)"),
        ("TypeErr", "TypeError (1), ValueError (1)"),
    ]:
        result = run("--repo", str(raises.path), "--sha", "v1", "--exception", wrong, "--output", str(out))
        guess = nearest.split(" ")[0]
        assert (result.returncode, result.stderr) == (
            2,
            f"extractor: error: no raise of {wrong} under vllm/config at v1 ({sha[:12]}), where the files raise "
            f"{nearest}; did you mean {guess}?\n",
        )
    assert list(out.iterdir()) == [folder]
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # nothing overwritten
    far = run("--repo", str(raises.path), "--sha", "v1", "--exception", "KeyboardInterrupt", "--output", str(out))
    assert far.returncode == 2 and far.stderr.endswith("; '*' takes every class\n")
    for command in (["diff", "v1", "v1"], ["list", "--catalog", "v1"]):
        result = run(*command, "--repo", str(raises.path), "--exception", "ValueErorr", cwd=tmp_path)
        assert result.returncode == 2 and "did you mean ValueError?" in result.stderr


def test_scope_whose_files_raise_nothing_is_an_empty_catalog(raises: GitRepo, tmp_path: Path) -> None:
    result = run("--repo", str(raises.path), "--sha", "v1", "--path", "vllm/config/b.py", "--output", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "extractor: 0 records from 1 of 1 files" in result.stderr


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        pytest.param("'*'", "; did you mean *? (its quotes reached the command)", id="quoted star"),
        pytest.param('"ValueError"', "; did you mean ValueError? (its quotes reached the command)", id="quoted name"),
        pytest.param("Value Error", "", id="space"),
    ],
)
def test_exception_that_is_no_class_name_is_refused(raises: GitRepo, tmp_path: Path, name: str, hint: str) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    result = run("--repo", str(raises.path), "--sha", "v1", "--exception", name, cwd=cwd)
    assert (result.returncode, result.stderr) == (
        2,
        f"extractor: error: --exception {name!r} is not a class name, nor '*' for every class{hint}\n",
    )
    assert list(cwd.iterdir()) == []


def test_nightly_sh_passes_its_documented_args_unquoted(raises: GitRepo, tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[1] / "scripts" / "nightly.sh"
    env = {
        "PYTHON": sys.executable,
        "EXTRACTOR_REPO": str(raises.path),
        "EXTRACTOR_OUTPUT": str(tmp_path / "pub"),
        "EXTRACTOR_ARGS": "--path vllm --exception '*' --context \"3\"",
    }
    result = subprocess.run(["bash", str(script)], capture_output=True, text=True, env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    sha = git(raises.path, "rev-parse", "HEAD")
    # Not the default scope: its paths and classes, and a digest of the rest (the context differs).
    (folder,) = (tmp_path / "pub").glob(f"{sha}-vllm-all-*")
    assert re.fullmatch(r"[0-9a-f]{8}", folder.name.rsplit("-", 1)[1])
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    assert (manifest["scope"]["exceptions"], manifest["scope"]["context"], manifest["counts"]["records"]) == (
        ["*"],
        3,
        4,
    )
    assert orjson.loads((tmp_path / "pub" / "index.json").read_bytes())["latest"] == sha
    bad = subprocess.run(
        ["bash", str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, **env, "EXTRACTOR_ARGS": "--path 'vllm"},
    )
    assert bad.returncode == 2 and "cannot split EXTRACTOR_ARGS" in bad.stderr and "Traceback" not in bad.stderr


def test_two_scopes_at_one_revision_live_side_by_side_and_are_found(raises: GitRepo, tmp_path: Path) -> None:
    sha = git(raises.path, "rev-parse", "HEAD")
    repo = str(raises.path)
    assert run("--repo", repo, "--sha", "v1", cwd=tmp_path).returncode == 0
    assert run("--repo", repo, "--sha", "v1", "--path", "vllm", "--exception", "*", cwd=tmp_path).returncode == 0
    assert run("--repo", repo, "--sha", "v1", "--exception", "TypeError", cwd=tmp_path).returncode == 0
    root = tmp_path / "output" / "vllm-project" / "vllm"
    folders = {p.name: orjson.loads((p / "manifest.json").read_bytes())["scope"] for p in root.iterdir()}
    assert {name: (scope["paths"], scope["exceptions"]) for name, scope in folders.items()} == {
        sha: (["vllm/config"], ["ValueError"]),
        f"{sha}-vllm-all": (["vllm"], ["*"]),
        f"{sha}-vllm.config-TypeError": (["vllm/config"], ["TypeError"]),
    }
    # A revision's catalog is looked up in the folder of its scope: a mark left there is what `list` shows.
    records = root / f"{sha}-vllm-all" / "records.jsonl"
    records.write_text(records.read_text().replace("too long", "too long MARKED"))
    manifest = orjson.loads((records.parent / "manifest.json").read_bytes())  # a whole catalog: its checksum
    manifest["recordsSha256"] = hashlib.sha256(records.read_bytes()).hexdigest()
    (records.parent / "manifest.json").write_bytes(orjson.dumps(manifest))
    found = run(
        "list",
        "--catalog",
        "v1",
        "--repo",
        repo,
        "--path",
        "vllm",
        "--exception",
        "*",
        "--grep",
        "marked",
        cwd=tmp_path,
    )
    assert found.returncode == 0 and "MARKED" in found.stdout
    plain = run("list", "--catalog", "v1", "--repo", repo, "--grep", "marked", cwd=tmp_path)
    assert plain.returncode == 1 and plain.stdout == ""


def run_on_terminal(*args: str, cwd: Path, env: dict[str, str], columns: int = 0) -> tuple[int, str]:
    """Run `python -m extractor ARGS` with a pseudo-terminal as stdout and stderr, of the given width (a fresh
    pseudo-terminal says 0: its width is unknown); return the exit status and what it showed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24 if columns else 0, columns, 0, 0))
    clean = {k: v for k, v in os.environ.items() if k not in ("CI", "COLUMNS", "LINES")}
    process = subprocess.Popen(
        [sys.executable, "-m", "extractor", *args], stdout=slave, stderr=slave, cwd=cwd, env={**clean, **env}
    )
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    return process.wait(), shown.decode(errors="replace")


@pytest.fixture
def index(isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Index]:
    """A package index on loopback serving vLLM 9.9.0's sdist (built from vllm/_version.py and one raise)."""
    served = Index({"vllm-9.9.0.tar.gz": make_sdist("9.9.0")})
    monkeypatch.setenv("PIP_INDEX_URL", served.url)
    yield served
    served.server.shutdown()


def test_release_folder_says_the_release_and_the_download_says_one_line(index: Index, tmp_path: Path) -> None:
    result = run("--release", "9.9.0", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    size = len(index.files["vllm-9.9.0.tar.gz"])
    assert result.stderr.splitlines() == [
        f"extractor: downloading vllm-9.9.0.tar.gz ({size} B) from 127.0.0.1",
        "extractor: 1 records from 1 of 1 files at abcdef1234 -> output/vllm-project/vllm/release-9.9.0",
    ]
    manifest = orjson.loads((tmp_path / "output/vllm-project/vllm/release-9.9.0/manifest.json").read_bytes())
    assert (manifest["sha"], manifest["revision"]) == ("abcdef1234", "release:9.9.0")
    again = run("--release", "9.9.0", "--exception", "*", "--path", "vllm", "--quiet", cwd=tmp_path)
    assert (again.returncode, again.stderr) == (0, "")  # cached: no download; quiet: no summary
    assert (tmp_path / "output/vllm-project/vllm/release-9.9.0-vllm-all/records.jsonl").is_file()


def test_download_shows_a_bar_on_a_terminal(index: Index, tmp_path: Path) -> None:
    code, shown = run_on_terminal("--release", "9.9.0", "--output", "-", cwd=tmp_path, env={}, columns=100)
    assert code == 0, shown
    assert re.search(r"\rvllm-9\.9\.0\.tar\.gz: +\d+%\|", shown) and "downloading" not in shown


def test_scan_progress_bar_shows_when_the_terminal_width_is_unknown(raises: GitRepo, tmp_path: Path) -> None:
    code, shown = run_on_terminal("--repo", str(raises.path), "--sha", "v1", "--no-cache", cwd=tmp_path, env={})
    assert code == 0, shown
    assert re.search(r"\rscanning: +\d+%\|", shown)
    for quiet in ("--quiet", "-q"):
        code, shown = run_on_terminal(
            "--repo", str(raises.path), "--sha", "v1", "--no-cache", quiet, cwd=tmp_path, env={}
        )
        assert (code, shown) == (0, "")


def test_clone_without_network_says_so_and_what_works_offline(tmp_path: Path, isolated_cache: Path) -> None:
    result = run("--repo", "http://no-such-host.invalid/vllm.git", "--sha", "main", cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("extractor: error: cannot clone http://no-such-host.invalid/vllm.git: ")
    assert result.stderr.endswith(
        " (no network to reach it: a release from the package index, release:X.Y.Z (--release X.Y.Z when "
        "extracting), or a local clone, --repo PATH, work without it)\n"
    )
    refused = run("--repo", str(tmp_path / "none.git"), "--sha", "main", cwd=tmp_path)
    assert "no network" not in refused.stderr  # a missing local path is not a network problem


SUBCOMMANDS = [[], *([name] for name in commands())]  # every module of cli/commands/ is a command


@pytest.mark.parametrize("command", SUBCOMMANDS, ids=lambda c: c[0] if c else "extract")
def test_help_groups_scope_apart_from_run_options_and_every_command_has_quiet(command: list[str]) -> None:
    result = run(*command, "--help")
    assert result.returncode == 0
    sections = re.split(r"\n(?=\S[^\n]*:\n)", result.stdout)
    by_title = {section.split(":", 1)[0]: section for section in sections}
    assert "--quiet" in by_title["run"]
    if command != ["cache"]:
        assert "--jobs" in by_title["run"] and "--no-cache" in by_title["run"]
        assert "--path" in by_title["scope"] and "--jobs" not in by_title["scope"]
    short = r"(?:-\w, )?"  # an option's short form, if it has one, comes first
    options = re.findall(rf"^  {short}(--[\w-]+)", result.stdout, re.M)
    assert "--quiet" in options and re.search(r"^  -q, --quiet ", result.stdout, re.M)
    for option in options:  # every option says what it does
        assert re.search(rf"^  {short}{option}(?: \S+)*  +\S", result.stdout, re.M) or re.search(
            rf"^  {short}{option}[^\n]*\n {{10,}}\S", result.stdout, re.M
        ), option


def test_explain_format_is_described() -> None:
    help_text = " ".join(run("explain", "--help").stdout.split())
    assert "--format {text,markdown,json} text for a terminal, markdown for a page" in help_text


def test_builtins_are_no_fields_and_explain_does_not_list_them(raises: GitRepo, tmp_path: Path) -> None:
    result = run("--repo", str(raises.path), "--sha", "v1", "--output", "-")
    (line,) = [orjson.loads(raw) for raw in result.stdout.splitlines()]
    assert [f["expression"] for f in line["extraction"]["fields"]] == ["n"]
    explained = run("explain", "--catalog", "v1", "--repo", str(raises.path), line["record"]["id"], cwd=tmp_path)
    assert explained.returncode == 0, explained.stderr
    also = explained.stdout.split("\nAlso read\n")[1]
    assert also == "  n: a value vLLM passes in or works out here, not a setting\n"


LISTED = """
class Config:
    def check(self, n):
        if n > 1:
            raise ValueError(f"n ({n}) exceeds the limit | of {self.limit}, which is the largest number we take.")
        raise TypeError("n must be a number")


def helper(x):
    raise KeyError(f"no such key {x}")
"""


@pytest.fixture
def listed(git_repo: GitRepo, tmp_path: Path) -> str:
    git_repo.commit({"vllm/config/a.py": LISTED, "vllm/other.py": 'raise ValueError("other limit")\n'}, tag="v1")
    out = tmp_path / "out"
    result = run(
        "--repo", str(git_repo.path), "--sha", "v1", "--path", "vllm", "--exception", "*", "--output", str(out)
    )
    assert result.returncode == 0, result.stderr
    (folder,) = out.iterdir()
    return str(folder)


def test_list_prints_a_table_of_every_record(listed: str) -> None:
    result = run("list", "--catalog", listed)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [
        "file:line            class       slug                                                message",
        "vllm/config/a.py:5   ValueError  n-exceeds-the-limit-of-which-is-the-largest-number  "
        "n ({n}) exceeds the limit | of {self.limit}, which is the ...",
        "vllm/config/a.py:6   TypeError   n-must-be-a-number                                  n must be a number",
        # KeyError prints the repr of its argument, quotes included (issue 14)
        "vllm/config/a.py:10  KeyError    no-such-key                                         'no such key {x}'",
        "vllm/other.py:1      ValueError  other-limit                                         other limit",
    ]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        pytest.param(
            ["--file", "vllm/config"], ["vllm/config/a.py:5", "vllm/config/a.py:6", "vllm/config/a.py:10"], id="dir"
        ),
        pytest.param(["--file", "vllm/other.py"], ["vllm/other.py:1"], id="file"),
        pytest.param(
            ["--file", "*/a.py"], ["vllm/config/a.py:5", "vllm/config/a.py:6", "vllm/config/a.py:10"], id="glob"
        ),
        pytest.param(["--class", "ValueError"], ["vllm/config/a.py:5", "vllm/other.py:1"], id="class"),
        pytest.param(
            ["--class", "KeyError", "--class", "TypeError"], ["vllm/config/a.py:6", "vllm/config/a.py:10"], id="classes"
        ),
        pytest.param(["--grep", "LIMIT"], ["vllm/config/a.py:5", "vllm/other.py:1"], id="grep any case"),
        pytest.param(["--grep", "limit", "--grep", "largest"], ["vllm/config/a.py:5"], id="grep both"),
        pytest.param(
            ["--grep", "limit", "--file", "vllm/other.py", "--class", "ValueError"], ["vllm/other.py:1"], id="all"
        ),
    ],
)
def test_list_filters(listed: str, filters: list[str], expected: list[str]) -> None:
    result = run("list", "--catalog", listed, *filters, "--format", "json")
    assert result.returncode == 0, result.stderr
    rows = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [f"{row['filePath']}:{row['lineNumber']}" for row in rows] == expected
    assert all(list(row) == ["id", "slug", "errorClass", "filePath", "lineNumber", "errorMessage"] for row in rows)


def test_list_markdown_escapes_table_cells(listed: str) -> None:
    result = run("list", "--catalog", listed, "--class", "ValueError", "--format", "markdown")
    assert result.stdout.splitlines() == [
        "| file:line | class | slug | message |",
        "| --- | --- | --- | --- |",
        "| `vllm/config/a.py:5` | ValueError | `n-exceeds-the-limit-of-which-is-the-largest-number` "
        "| n ({n}) exceeds the limit \\| of {self.limit}, which is the ... |",
        "| `vllm/other.py:1` | ValueError | `other-limit` | other limit |",
    ]


def test_list_summary_counts_by_file_and_class(listed: str) -> None:
    text = run("list", "--catalog", listed, "--summary")
    assert (text.returncode, text.stdout) == (
        0,
        "4 records in 2 files, 3 classes\n\nby file:\n       3  vllm/config/a.py\n       1  vllm/other.py\n\n"
        "by class:\n       2  ValueError\n       1  KeyError\n       1  TypeError\n",
    )
    document = orjson.loads(
        run("list", "--catalog", listed, "--summary", "--format", "json", "--file", "vllm/config").stdout
    )
    assert document == {
        "records": 3,
        "byFile": {"vllm/config/a.py": 3},
        "byClass": {"KeyError": 1, "TypeError": 1, "ValueError": 1},
    }
    markdown = run("list", "--catalog", listed, "--summary", "--format", "markdown").stdout
    assert "| file | records |\n| --- | ---: |\n| vllm/config/a.py | 3 |\n| vllm/other.py | 1 |\n" in markdown


def test_list_nothing_found_exits_1_and_says_what_was_meant(listed: str) -> None:
    result = run("list", "--catalog", listed, "--class", "ValueErorr", "--file", "vllm/confg")
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        "",
        "extractor: no record under vllm/confg; did you mean vllm/config?\n"
        "extractor: no record of class ValueErorr; did you mean ValueError?\n",
    )
    both = run("list", "--catalog", listed, "--class", "KeyError", "--file", "vllm/other.py")
    assert (both.returncode, both.stderr) == (1, "extractor: no record passes every filter at once\n")
    quiet = run("list", "--catalog", listed, "--grep", "zebra", "--quiet")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (1, "", "")


def cache_info(cwd: Path) -> dict[str, int]:
    result = run("cache", "info", "--format", "json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return {part["name"]: part["bytes"] for part in orjson.loads(result.stdout)["parts"]}


def test_cache_info_and_clear(raises: GitRepo, tmp_path: Path, isolated_cache: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    empty = {"scans": 0, "catalogs": 0, "matches": 0, "clones": 0, "releases": 0, "sdists": 0, "runtimes": 0}
    empty |= {"reproductions": 0, "tests": 0, "bench": 0}
    assert cache_info(cwd) == empty
    assert run("--repo", str(raises.path), "--sha", "v1", "--output", "-", cwd=cwd).returncode == 0
    document = orjson.loads(run("cache", "info", "--format", "json", cwd=cwd).stdout)
    assert document["directory"] == str(isolated_cache / "extractor")
    parts = {part["name"]: part for part in document["parts"]}
    assert parts["scans"]["entries"] >= 2 and parts["scans"]["bytes"] > 0
    assert parts["catalogs"]["catalogs"] == 1 and parts["catalogs"]["bytes"] > 0
    assert document["bytes"] == sum(part["bytes"] for part in document["parts"])
    text = run("cache", "info", cwd=cwd).stdout.splitlines()
    assert text[0].startswith(f"{isolated_cache / 'extractor'} (") and [row.split()[0] for row in text[1:]] == [
        "scans",
        "catalogs",
        "matches",
        "clones",
        "releases",
        "sdists",
        "runtimes",
        "reproductions",
        "tests",
        "bench",
    ]
    (isolated_cache / "extractor" / "match").mkdir()
    (isolated_cache / "extractor" / "match" / ("ab" * 32)).write_bytes(b"an index")  # as match keeps them
    assert cache_info(cwd)["matches"] == 8
    cleared = run("cache", "clear", "catalogs", cwd=cwd)
    assert cleared.returncode == 0 and cleared.stdout.startswith("removed ")
    sizes = cache_info(cwd)
    assert sizes["catalogs"] == 0 and sizes["scans"] > 0
    assert run("cache", "clear", "--quiet", cwd=cwd).returncode == 0
    assert cache_info(cwd) == empty
    again = run("--repo", str(raises.path), "--sha", "v1", "--output", "-", cwd=cwd)  # rebuilt when needed
    assert again.returncode == 0 and cache_info(cwd)["scans"] > 0
    wrong = run("cache", "clear", "scan", cwd=cwd)
    assert (wrong.returncode, wrong.stderr) == (
        2,
        "extractor: error: no cache part 'scan'; did you mean 'scans'? (parts: scans, catalogs, matches, clones, "
        "releases, sdists, runtimes, reproductions, tests, bench)\n",
    )


def test_a_class_raised_only_at_skipped_sites_is_no_typo(git_repo: GitRepo, tmp_path: Path) -> None:
    """The class asked for is raised, but its only site is a named skip: an empty catalog, not an error."""
    git_repo.commit({"vllm/config/a.py": 'raise ValueError("\\ud800")\nraise TypeError("other")\n'}, tag="v1")
    result = run("--repo", str(git_repo.path), "--sha", "v1", "--output", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    (folder,) = (tmp_path / "out").iterdir()
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    assert (manifest["counts"]["records"], manifest["counts"]["skippedSites"]) == (0, 1)


HOSTILE_MESSAGE = "first\r\nsecond ~~x~~ <img src=x onerror=alert(1)> &amp; {cls.__name__} `tick` | pipe"


def test_markdown_shows_a_message_as_written_in_every_command(git_repo: GitRepo, tmp_path: Path) -> None:
    """Emphasis, strikethrough, HTML, entities, pipes and line breaks in a message are text in every
    Markdown page: list's table, explain's page, diff's table (one row per record, escaped)."""
    source = f"def h(cls):\n    raise ValueError({HOSTILE_MESSAGE!r})\n"
    git_repo.commit({"vllm/config/x.py": "def h(cls):\n    raise ValueError('plain')\n"}, tag="v1")
    git_repo.commit({"vllm/config/x.py": source}, tag="v2")
    repo = ["--repo", str(git_repo.path)]
    listed = run("list", "--catalog", "v2", *repo, "--format", "markdown", cwd=tmp_path)
    diffed = run("diff", "v1", "v2", *repo, "--format", "markdown", cwd=tmp_path)
    explained = run("explain", "--catalog", "v2", *repo, "--format", "markdown", "first", cwd=tmp_path)
    whole = r"first second \~\~x\~\~ \<img src=x onerror=alert(1)\> \&amp; {cls.\_\_name\_\_} \`tick\` \| pipe"
    cut = r"first second \~\~x\~\~ \<img src=x onerror=alert(1)\> \&amp; ..."  # (list's table cuts a long message)
    for result, message in ((listed, cut), (diffed, whole)):
        (row,) = [line for line in result.stdout.splitlines() if "second" in line]
        assert row.endswith(f" | {message} |"), row
        assert "\r" not in result.stdout
    fenced = explained.stdout.split("```text\n", 1)[1].split("\n```\n", 1)
    assert fenced[0].startswith("first") and "<img" not in fenced[1]  # the message in a fence, as written


def test_output_dash_is_standard_output_or_refused(git_repo: GitRepo, tmp_path: Path) -> None:
    """diff writes one document: `--output -` is stdout. Commands that write a folder refuse it."""
    git_repo.commit({"vllm/config/x.py": "raise ValueError('a check of ours')\n"}, tag="v1")
    repo = ["--repo", str(git_repo.path)]
    diffed = run("diff", "v1", "v1", *repo, "--output", "-", cwd=tmp_path)
    assert diffed.returncode == 0 and orjson.loads(diffed.stdout)["summary"]["unchanged"] == 1
    for command in (["history", "v1"], ["nightly", "--branch", "main"], ["site", "--catalog", "v1"]):
        result = run(*command, *repo, "--output", "-", cwd=tmp_path)
        assert result.returncode == 2 and "--output - (standard output) cannot hold them" in result.stderr, command
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo"]


def test_list_reads_a_file_filter_as_a_path_prefix_is_read(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit({"vllm/config/x.py": "raise ValueError('a check of ours')\n"}, tag="v1")
    for spec in ("vllm/config/x.py", "./vllm/config/x.py", "/vllm/config/", "./vllm/config/*.py"):
        result = run("list", "--catalog", "v1", "--repo", str(git_repo.path), "--file", spec, cwd=tmp_path)
        assert result.returncode == 0 and "vllm/config/x.py:1" in result.stdout, spec


def test_the_same_scope_in_another_order_is_the_same_scope(git_repo: GitRepo, tmp_path: Path) -> None:
    """Paths and classes are sets: given in another order, one folder (the second run reuses the first's
    catalog), one scope in the manifest, and diff sees no difference of scopes."""
    git_repo.commit({"a/x.py": "raise ValueError('a')\n", "b/y.py": "raise TypeError('b')\n"}, tag="v1")
    common = ["--sha", "v1", "--repo", str(git_repo.path), "--output", "out", "--quiet"]
    one = ["--path", "a", "--path", "b", "--exception", "ValueError", "--exception", "TypeError"]
    other = ["--path", "b/", "--path", "./a", "--exception", "TypeError", "--exception", "ValueError"]
    assert run(*common, *one, cwd=tmp_path).returncode == 0
    assert run(*common, *other, cwd=tmp_path).returncode == 0
    (folder,) = (tmp_path / "out").iterdir()
    scope = orjson.loads((folder / "manifest.json").read_bytes())["scope"]
    assert (scope["paths"], scope["exceptions"]) == (["a", "b"], ["TypeError", "ValueError"])
    result = run("diff", str(folder), "v1", "--repo", str(git_repo.path), *other, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")


def test_diff_of_catalogs_of_two_scopes_says_so(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit({"vllm/config/x.py": "raise ValueError('a')\nraise TypeError('b')\n"}, tag="v1")
    repo = ["--repo", str(git_repo.path)]
    assert run("--sha", "v1", *repo, "--output", "out", "--quiet", cwd=tmp_path).returncode == 0
    assert run("--sha", "v1", *repo, "--exception", "*", "--output", "out", "--quiet", cwd=tmp_path).returncode == 0
    narrow, wide = sorted((tmp_path / "out").iterdir(), key=lambda p: len(p.name))
    result = run("diff", str(narrow), str(wide), cwd=tmp_path)
    assert result.returncode == 1 and orjson.loads(result.stdout)["summary"]["added"] == 1
    assert result.stderr.startswith("extractor: warning: the catalogs cover different scopes (vllm/config (ValueError")
    assert run("diff", str(narrow), str(wide), "--quiet", cwd=tmp_path).stderr == ""  # -q: errors alone


def test_a_one_catalog_option_given_twice_is_a_usage_error(tmp_path: Path) -> None:
    for command in ("list", "site"):
        result = run(command, "--catalog", "release:0.27.0", "--catalog", "release:0.28.0", cwd=tmp_path)
        assert result.returncode == 2 and "--catalog takes one value, given twice" in result.stderr, command


def test_a_cache_directory_that_cannot_be_used_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The machine's refusal (a file where the cache folder should be) is not reported as a bug. (An
    extraction of a local repository goes on without the cache: it is only a shortcut.)"""
    (tmp_path / "blocked").mkdir()
    (tmp_path / "blocked" / "extractor").write_text("a file, not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "blocked"))
    for command in (["cache", "clear"], ["cache", "clear", "scans"]):
        result = run(*command, cwd=tmp_path)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
        assert "a bug" not in result.stderr and "the user cache directory is" in result.stderr


def test_extractor_debug_shows_the_traceback_of_a_bug(tmp_path: Path) -> None:
    """The one-line report of a bug points at EXTRACTOR_DEBUG=1, which must then show the traceback."""
    code = (
        "import sys, extractor.cli.commands.list as command, extractor.cli.main as cli\n"
        "def broken(argv): raise RuntimeError('boom')\n"
        "command.run = broken\n"
        "sys.argv = ['extractor', 'list']\n"
        "cli.run_and_exit()\n"
    )
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert plain.returncode == 2 and "unexpected RuntimeError: boom (a bug" in plain.stderr
    env = {**os.environ, "EXTRACTOR_DEBUG": "1"}
    debug = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert debug.returncode == 2 and "Traceback (most recent call last)" in debug.stderr
    assert "RuntimeError: boom" in debug.stderr


def test_a_package_that_was_a_module_is_named_in_the_error(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit({"vllm/config.py": "raise ValueError('a check of ours')\n"}, tag="v1")
    result = run("--repo", str(git_repo.path), "--sha", "v1", cwd=tmp_path)
    hint = "; vllm/config.py is there (--path vllm/config --path vllm/config.py follows both)\n"
    assert result.returncode == 2 and result.stderr.endswith(hint)
    # Followed as the hint says, it is extracted; and a diff across the change follows it by itself.
    followed = run("--repo", str(git_repo.path), "--sha", "v1", "--path", "vllm/config", "--path", "vllm/config.py")
    assert followed.returncode == 0, followed.stderr
    git_repo.commit(
        {"vllm/config.py": None, "vllm/config/__init__.py": "raise ValueError('a check of ours!')\n"}, tag="v2"
    )
    diff = run("diff", "v1", "v2", "--repo", str(git_repo.path), cwd=tmp_path)
    assert diff.returncode == 1, diff.stderr
    assert json.loads(diff.stdout)["summary"] == {
        "added": 0, "removed": 0, "reworded": 1, "moved": 0, "modified": 0, "unchanged": 0
    }  # fmt: skip


def test_a_history_path_that_does_not_exist_is_named_not_cloned(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit({"vllm/config/x.py": "raise ValueError('a check of ours')\n"}, tag="v1")
    assert run("--repo", str(git_repo.path), "--sha", "v1", "--output", "out", "--quiet", cwd=tmp_path).returncode == 0
    (written,) = (tmp_path / "out").iterdir()
    text = "ValueError: a check of ours"
    for spec in ("nohist/history.jsonl", "./hist"):
        # With a repository URL, nothing is cloned to find out whether a path names revisions.
        url = ["--repo", "https://example.invalid/vllm.git"]
        remote = run("match", "--catalog", str(written), *url, "--history", spec, text, cwd=tmp_path)
        assert (remote.returncode, remote.stderr) == (
            2,
            f"extractor: error: no history at {spec}: the path does not exist\n",
        )
        local = run("match", "--catalog", "v1", "--repo", str(git_repo.path), "--history", spec, text, cwd=tmp_path)
        assert local.returncode == 2 and f"no history at {spec}, nor revisions of" in local.stderr


def test_one_catalogs_match_lists_every_place_that_raises_the_message(git_repo: GitRepo, tmp_path: Path) -> None:
    message = "raise ValueError('num_runs should be at least 1.')\n"
    git_repo.commit({"vllm/a.py": message, "vllm/b.py": "import os\n" + message}, tag="v1")
    result = run(
        "match",
        "--catalog",
        "v1",
        "--repo",
        str(git_repo.path),
        "--path",
        "vllm",
        "ValueError: num_runs should be at least 1.",
        cwd=tmp_path,
    )
    (match,) = orjson.loads(result.stdout)["matches"]
    assert [(s["filePath"], s["lineNumber"]) for s in match["sites"]] == [("vllm/a.py", 1), ("vllm/b.py", 2)]


def test_a_config_or_flags_source_that_is_not_there_is_a_warning(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit({"vllm/config/x.py": "raise ValueError('a check of ours')\n"}, tag="v1")
    repo = ["--repo", str(git_repo.path), "--sha", "v1", "--output", "-"]
    quiet = run(*repo, "--flags-from", "vllm/config/x.py", cwd=tmp_path)
    assert quiet.returncode == 0 and "flags-from" not in quiet.stderr
    result = run(*repo, "--flags-from", "nonexist.py", "--config-from", "nowhere", cwd=tmp_path)
    assert result.returncode == 0
    assert "warning: no file under --config-from nowhere at v1: no field is read from a config class" in result.stderr
    assert "warning: no file --flags-from nonexist.py at v1: no field gets its CLI flags" in result.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        pytest.param(["list"], "extractor: error: list: the following arguments are required: --catalog", id="missing"),
        pytest.param(
            ["diff", "a", "b", "--frmat", "json"],
            "extractor: error: diff: unrecognized option '--frmat'; did you mean --format?",
            id="unknown",
        ),
        pytest.param(
            ["--jobs", "0"], "extractor: error: argument --jobs: expected a number >= 1, got 0", id="bad value"
        ),
        pytest.param(["cache"], "extractor: error: cache: say what to do: info (where", id="no action"),
        pytest.param(
            ["match", "--catalog", "x", "--format", "xml"],
            "extractor: error: match: argument --format: invalid choice",
            id="choice",
        ),
    ],
)
def test_a_usage_error_is_one_line(tmp_path: Path, args: list[str], said: str) -> None:
    result = run(*args, cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1 and result.stderr.startswith(said)
    assert result.stderr.rstrip().endswith("--help)")


def test_a_path_in_a_markdown_link_cannot_break_its_row_and_only_web_addresses_are_linked(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    """A file path is link text, escaped as any text (a `|` would split a table row, a `]` end the link);
    an address is percent-encoded where it could end the link, and one that is not a web address (a
    doctored catalog's `javascript:`) is no link at all, in diff's, explain's and history's Markdown."""
    from extractor.util.markdown import link

    assert link("a|b]`c.py:3", "https://h/x (1)|y") == r"[a\|b\]\`c.py:3](https://h/x%20%281%29%7Cy)"
    assert link("a.py:1", "javascript:alert(1)") == "a.py:1"
    assert link("a.py:1", "https://github.com/o/r/blob/abc/a.py#L1-L9") == (
        "[a.py:1](https://github.com/o/r/blob/abc/a.py#L1-L9)"
    )
    git_repo.commit({"vllm/config/x.py": "raise ValueError('plain')\n"}, tag="v1")
    git_repo.commit({"vllm/config/p|q]r.py": "raise ValueError('plain')\n"}, tag="v2")
    diffed = run("diff", "v1", "v2", "--repo", str(git_repo.path), "--format", "markdown", cwd=tmp_path)
    (row,) = [line for line in diffed.stdout.splitlines() if "q" in line and line.startswith("|")]
    assert row.replace("\\|", "").count("|") == 4, row  # three cells: no pipe of the path splits the row
    assert "[vllm/config/p\\|q\\]r.py:1](https://" in row


def test_a_misspelled_option_is_said_with_the_one_meant_before_any_missing_one() -> None:
    """As the user typed them, in a process: not "one of --sha --release is required" for `--relase`."""
    typo = process("--relase", "0.28.0")
    assert (typo.returncode, typo.stdout) == (2, "")
    assert typo.stderr == (
        "extractor: error: unrecognized option '--relase'; did you mean --release? (see extractor --help)\n"
    )
    match = process("match", "--catlog", "x", "some error")
    assert match.returncode == 2 and "unrecognized option '--catlog'; did you mean --catalog?" in match.stderr
    listed = process("list", "--release", "0.28.0")  # (list reads a catalog: the release is one)
    assert listed.returncode == 2 and "did you mean --catalog release:X.Y.Z?" in listed.stderr
    bare = process()
    assert bare.returncode == 2 and bare.stderr.startswith("extractor: error: nothing to do: name a command (cache, ")
    assert "--release X.Y.Z" in bare.stderr


@pytest.mark.parametrize("command", ["", *commands()])
def test_every_option_of_every_command_gets_did_you_mean(command: str) -> None:
    """Each long option of each command, a letter left out, is named back; an option cut short that only one
    begins with is still that one (argparse's own abbreviation), and a value that looks like an option is a
    value."""
    import importlib

    from extractor.cli.extract import parser as extraction

    parser = extraction() if not command else importlib.import_module(f"extractor.cli.commands.{command}").parser()
    words = [command] if command else []
    options = [o for o in parser._option_string_actions if o.startswith("--") and len(o) > 5 and o != "--help"]
    assert options
    for option in options:
        typo = option[:3] + option[4:]  # (`--relase`)
        if any(other.startswith(typo) for other in options):
            continue
        result = run(*words, typo, "x")
        assert result.returncode == 2, (command, typo)
        assert f"unrecognized option {typo!r}; did you mean {option}?" in result.stderr, (command, typo, result.stderr)


def _in_read_only_folder(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m extractor ARGS` run in a folder on a read-only file system (a tmpfs mounted read-only in a
    mount namespace of its own: no privilege needed, nothing left mounted)."""
    import shutil

    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) to mount a read-only folder")
    script = 'mount -t tmpfs -o ro none "$1" && cd "$1" && shift && exec "$@"'
    command = ["unshare", "-rm", "sh", "-c", script, "sh", str(folder), sys.executable, "-m", "extractor", *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if "mount:" in result.stderr or "unshare:" in result.stderr:
        pytest.skip(f"cannot mount a read-only folder here: {result.stderr.strip()}")
    return result


@pytest.mark.parametrize(
    ("args", "written"),
    [
        (["--sha", "v1"], "output"),
        (["history", "v1"], "output"),
        (["site", "--catalog", "v1", "--output", "site"], "site"),
        (["diff", "v1", "v2", "--output", "changes.json"], "changes.json"),
    ],
)
def test_a_command_that_writes_where_it_cannot_says_so_before_any_work(
    args: list[str], written: str, tmp_path: Path, git_repo: GitRepo
) -> None:
    """In a read-only working folder, what would be written is refused first, naming --output: the repository
    named (an empty one: none of the revisions is there) is never read."""
    (tmp_path / "read-only").mkdir()
    result = _in_read_only_folder(tmp_path / "read-only", *args, "--repo", str(git_repo.path))
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        f"extractor: error: cannot write {written}: the current folder is on a read-only file system "
        "(name one that can be written with --output)\n"
    )


def test_a_download_bar_counts_in_the_units_every_other_size_is_said_in(index: Index, tmp_path: Path) -> None:
    import io
    import tarfile

    from tqdm import tqdm

    sdist = io.BytesIO()  # (an sdist of some 60 kB: the bar's total in kB)
    with (
        tarfile.open(fileobj=sdist, mode="w:gz") as archive,
        tarfile.open(fileobj=io.BytesIO(index.files["vllm-9.9.0.tar.gz"])) as small,
    ):
        for member in small.getmembers():
            archive.addfile(member, small.extractfile(member))
        padding = tarfile.TarInfo("vllm-9.9.0/padding.bin")
        padding.size = 60_000
        archive.addfile(padding, io.BytesIO(os.urandom(60_000)))
    index.files["vllm-9.9.0.tar.gz"] = sdist.getvalue()
    code, shown = run_on_terminal("--release", "9.9.0", "--output", "-", cwd=tmp_path, env={}, columns=100)
    assert code == 0, shown
    size = len(index.files["vllm-9.9.0.tar.gz"])
    assert f"/{tqdm.format_sizeof(size, '', 1000)} " in shown  # (k of 1000 bytes, not of 1024)


def test_list_fills_the_terminal_and_shows_where_grep_found_its_word(listed: str, tmp_path: Path) -> None:
    """The message column takes the width the terminal leaves (a fixed 60 characters in a pipe); a --grep
    word past what fits is shown, the message cut before it."""
    message = "n ({n}) exceeds the limit | of {self.limit}, which is the largest number we take."
    code, wide = run_on_terminal("list", "--catalog", listed, cwd=tmp_path, env={}, columns=220)
    assert code == 0 and message in wide
    code, narrow = run_on_terminal("list", "--catalog", listed, cwd=tmp_path, env={}, columns=120)
    assert code == 0 and message not in narrow and "n ({n}) exceeds the limit" in narrow
    piped = run("list", "--catalog", listed, "--grep", "we take")
    (row,) = [line for line in piped.stdout.splitlines() if line.startswith("vllm/config/a.py:5")]
    assert row.endswith("... the largest number we take."), row


def test_releases_are_listed_by_version_however_they_were_named(index: Index) -> None:
    index.files["vllm-9.10.0.tar.gz"] = make_sdist("9.10.0")
    newest_first = ["--catalog", "release:9.10.0", "--catalog", "release:v9.9.0"]
    result = run("match", *newest_first, "--format", "text", "ValueError: from the sdist")
    assert result.returncode == 0, result.stderr
    assert "in 2 releases: 9.9.0 .. 9.10.0" in result.stdout
    answer = run("match", *newest_first, "ValueError: from the sdist")
    assert orjson.loads(answer.stdout)["matches"][0]["releases"] == ["9.9.0", "9.10.0"]


def test_the_summary_counts_the_files_the_scan_bar_counted(git_repo: GitRepo, tmp_path: Path) -> None:
    """The scan reads the CLI's definition too (for the flags that set fields), out of scope: the summary
    says so, so that its count and the bar's agree."""
    from tests.test_fields import ARGS, CONFIG

    git_repo.commit({"vllm/config/all.py": CONFIG, "vllm/engine/arg_utils.py": ARGS}, tag="v1")
    result = run("--repo", str(git_repo.path), "--sha", "v1", "--no-cache", "--output", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert "records from 1 of 1 files (and 1 file read for fields and flags) at " in result.stderr
    code, shown = run_on_terminal(
        "--repo", str(git_repo.path), "--sha", "v1", "--no-cache", "--output", "-", cwd=tmp_path, env={}, columns=100
    )
    assert code == 0 and re.search(r"scanning: +\d+%\|[^|]*\| \d+/2 ", shown), shown


def test_match_quiet_says_nothing_of_the_catalogs_it_reads(raises: GitRepo, tmp_path: Path) -> None:
    both = ["--catalog", "v1", "--catalog", "v2", "--repo", str(raises.path)]
    git(raises.path, "tag", "v2", "v1")
    said = run("match", *both, "ValueError: anything", cwd=tmp_path)
    assert "catalog 1 of 2" in said.stderr
    quiet = run("match", *both, "-q", "ValueError: anything", cwd=tmp_path)
    assert quiet.stderr == ""


def test_a_line_break_in_a_file_name_never_forges_a_row_of_text_output(git_repo: GitRepo, tmp_path: Path) -> None:
    """list --summary and match's text show a file name's line break as `\\n`, as list's table and explain do."""
    git_repo.commit({"vllm/a\nforged.py": 'raise ValueError("the forged file raises")\n'}, tag="v1")
    out = tmp_path / "out"
    assert run("--repo", str(git_repo.path), "--sha", "v1", "--path", "vllm", "--output", str(out)).returncode == 0
    (catalog,) = out.iterdir()
    summary = run("list", "--catalog", str(catalog), "--summary")
    assert summary.returncode == 0, summary.stderr
    assert "  vllm/a\\nforged.py\n" in summary.stdout and "\nforged.py" not in summary.stdout
    answer = run("match", "--catalog", str(catalog), "--format", "text", "ValueError: the forged file raises")
    assert answer.returncode == 0, answer.stderr
    assert "-> vllm/a\\nforged.py:1  " in answer.stdout and "\nforged.py" not in answer.stdout


def test_matchs_kept_index_is_keyed_by_the_repository_name_its_permalinks_carry(index: Index) -> None:
    """A run with --repo-name answers with that name's permalinks; the next run without it, with the
    default's, never with what the first kept."""
    index.files["vllm-9.10.0.tar.gz"] = make_sdist("9.10.0")
    both = ["--catalog", "release:9.9.0", "--catalog", "release:9.10.0"]

    def address(*more: str) -> str:
        answer = run("match", *both, *more, "ValueError: from the sdist")
        assert answer.returncode == 0, answer.stderr
        return str(orjson.loads(answer.stdout)["matches"][0]["githubUrl"])

    assert address("--repo-name", "someone/fork").startswith("https://github.com/someone/fork/blob/")
    assert address().startswith("https://github.com/vllm-project/vllm/blob/")
    assert address("--repo-name", "someone/fork").startswith("https://github.com/someone/fork/blob/")
