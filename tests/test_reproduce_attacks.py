"""`reproduce` under attack (issue 56): a hostile catalog runs none of its text; a runtime that answers half a line,
garbage or nothing is a one-line error or a record's reason, never a hang or "a bug"; an attempt's helpers die
with it; finished records survive a kill; options and the runtime are checked before any work."""

from __future__ import annotations

import ast
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from extractor.reproduce import programs

SCHEDULER = """\
from dataclasses import dataclass, field

import pydantic

__version__ = "0.1"


@pydantic.dataclasses.dataclass
class SchedulerConfig:
    max_num_batched_tokens: int = 2048
    max_model_len: int = 1024
    enable_chunked_prefill: bool = True

    def __post_init__(self):
        if self.max_num_batched_tokens < self.max_model_len and not self.enable_chunked_prefill:
            raise ValueError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens}) is smaller than "
                f"max_model_len ({self.max_model_len})."
            )
        if self.max_model_len > 4096:
            raise ValueError(f"max_model_len ({self.max_model_len}) is too long.")


@dataclass
class PrefetchConfig:
    group_size: int = 4


@dataclass
class OffloadConfig:
    prefetch: PrefetchConfig = field(default_factory=PrefetchConfig)
    enabled: bool = False

    def __post_init__(self):
        if self.enabled and self.prefetch.group_size < 2:
            raise ValueError("Offloading needs groups of two layers at least.")
"""


def catalog(git_repo: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, source: str = SCHEDULER) -> Path:
    """A catalog folder of a package of our own (`vllm/config/scheduler.py`), its work tree importable as `vllm`."""
    from tests.conftest import cli

    git_repo.commit(
        {
            "vllm/__init__.py": '__version__ = "0.1"\n',
            "vllm/config/__init__.py": "",
            "vllm/config/scheduler.py": source,
        },
        tag="v1",
    )
    monkeypatch.setenv("PYTHONPATH", str(git_repo.path))
    out = tmp_path / "catalog"
    made = cli("--repo", str(git_repo.path), "--sha", "v1", "--output", str(out))
    assert made.returncode == 0, made.stderr
    return next(out.glob("*/records.jsonl")).parent


def rewrite(folder: Path, change: Any) -> None:
    """Each record of a catalog folder changed by `change(line)` (a dict, in place), its checksum kept whole."""
    records = folder / "records.jsonl"
    lines = [json.loads(text) for text in records.read_text().splitlines()]
    for line in lines:
        change(line)
    records.write_text("".join(json.dumps(line) + "\n" for line in lines))
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["recordsSha256"] = hashlib.sha256(records.read_bytes()).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_a_hostile_catalog_runs_none_of_its_text(
    git_repo: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Conditions whose text calls `os.system` (read where the source has the same `if`, and where it has none),
    and a field whose name is code: none of it runs, and every program written parses as what it builds."""
    from tests.conftest import cli

    folder = catalog(git_repo, monkeypatch, tmp_path)
    marks = {name: tmp_path / name for name in ("compared", "elsewhere", "argument")}

    def hostile(line: dict[str, Any]) -> None:
        extraction = line["extraction"]
        condition = extraction["conditions"][0]
        if "is smaller" in line["record"]["errorMessage"]:  # the source has this `if` at that line
            condition["test"] = f"self.max_model_len > __import__('os').system('touch {marks['compared']}')"
        elif "too long" in line["record"]["errorMessage"]:  # no `if` at its line: only the catalog's text says it
            condition["line"] = line["record"]["lineNumber"]
            condition["test"] = f"self.max_model_len > __import__('os').system('touch {marks['elsewhere']}')"
        else:  # a field a program sets, named with code
            for ref in extraction["fields"]:
                if ref["field"] == "group_size":
                    ref["field"] = f"group_size=__import__('os').system('touch {marks['argument']}') or 1, x"

    rewrite(folder, hostile)
    result = cli("reproduce", "--catalog", str(folder), "--runtime", sys.executable, "--timeout", "5")
    assert result.returncode == 0, result.stderr
    assert [name for name, mark in marks.items() if mark.exists()] == []
    for answer in map(json.loads, result.stdout.splitlines()):
        for program in (answer["reproduction"].get("python"), answer["reproduction"].get("fix", {}).get("python")):
            if program:
                assert "__import__" not in program and "system" not in program, program
                ast.parse(program)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("__import__('os').system('x')", id="a call"),
        pytest.param("Mode.__class__", id="a dunder attribute"),
        pytest.param("__builtins__", id="a dunder name"),
        pytest.param("table['key']", id="a subscript"),
        pytest.param("(lambda: 1)", id="a lambda"),
        pytest.param("[x for x in y]", id="a comprehension"),
        pytest.param("'a' * 10**9", id="arithmetic"),
        pytest.param("x := 1", id="not an expression"),
        pytest.param("f'{x}'", id="an f-string"),
    ],
)
def test_a_catalogs_value_is_refused_unless_names_attributes_and_literals(text: str) -> None:
    with pytest.raises(programs.Refused):
        programs.evaluate(text, {"Mode": object(), "table": {}, "x": 1, "y": []})


def test_a_catalogs_allowed_value_is_evaluated_without_eval() -> None:
    import enum

    class Mode(enum.Enum):
        GRAPH = "graph"

    names = {"Mode": Mode, "size": 3}
    assert programs.evaluate("Mode.GRAPH", names) is Mode.GRAPH
    assert programs.evaluate("{'a': [1, (-2.5,)], 'b': set(), 'c': None}", names) == {
        "a": [1, (-2.5,)],
        "b": set(),
        "c": None,
    }
    assert programs.evaluate("size > 2 and not size in (1, 2)", names, tests=True) is True
    with pytest.raises(programs.Refused):
        programs.evaluate("size > 2", names)  # (a comparison is a test, not a value)
    with pytest.raises(programs.Refused, match="no 'other' here"):
        programs.evaluate("other", names)


def test_a_program_names_only_python_names() -> None:
    from extractor.reproduce.triggers import Attempt, Code

    attempt = Attempt("vllm.config.scheduler", "OffloadConfig", None, {"enabled": True, "prefetch.group_size": 1})
    attempt.held = {"prefetch": "PrefetchConfig"}
    assert attempt.program() == (
        "from vllm.config.scheduler import OffloadConfig, PrefetchConfig\n\n"
        "config = OffloadConfig(enabled=True, prefetch=PrefetchConfig(group_size=1))\n"
    )
    hostile = Attempt("vllm.config", "SchedulerConfig", None, {"x=print(1), z": 1})
    with pytest.raises(programs.Refused):
        hostile.program()
    with pytest.raises(programs.Refused):
        Attempt("vllm.config", "C", None, {"mode": Code("Mode.X(); import os")}).program()
    with pytest.raises(programs.Refused):
        Attempt("os; import sys", "C", None, {}).program()
