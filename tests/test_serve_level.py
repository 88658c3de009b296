"""Reproductions where users stand: a class-level reproduction lifted to a `vllm serve` line and run through the
package's own parser and config path; the fixes run as lines; the record's second half filled from those runs;
the user's own values solved for. A small package of our own stands in for vLLM: its `serve` path has the shape of
vLLM's (a parser whose argument groups are titled by config class, a JSON flag for a sub-config, a switch that
must be on for a config to be built at all)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from extractor.model.records import ServeLine
from extractor.reproduce.filled import serve_arguments, serve_command
from extractor.reproduce.lifting import change_words, class_level
from extractor.reproduce.serving import flag_groups
from tests.test_reproduce import raise_line

LORA = """\
from dataclasses import dataclass


@dataclass
class LoRAConfig:
    max_loras: int = 1
    \"\"\"Max number of LoRAs in a single batch.\"\"\"
    max_cpu_loras: int | None = None
    \"\"\"Maximum number of LoRAs to store in CPU memory.\"\"\"
    internal: int = 0  # (no flag sets it)

    def __post_init__(self):
        if self.internal > 5:
            raise ValueError(f"Internal limit {self.internal} passed.")
        if self.max_cpu_loras is None:
            self.max_cpu_loras = self.max_loras
        elif self.max_cpu_loras < self.max_loras:
            raise ValueError(
                f"max_cpu_loras ({self.max_cpu_loras}) must be >= max_loras ({self.max_loras})."
            )
"""

COMPILATION = """\
from dataclasses import dataclass


@dataclass
class CompilationConfig:
    level: int = 0
    \"\"\"How much to compile.\"\"\"
    secret: int = 0

    def __post_init__(self):
        if self.level > 3:
            raise ValueError(f"Unknown compilation level {self.level}.")
        if self.secret == 7:
            raise ValueError("The secret is out.")
"""

CONFIG_INIT = """\
from dataclasses import dataclass, field

from vllm.config.compilation import CompilationConfig
from vllm.config.lora import LoRAConfig


@dataclass
class VllmConfig:
    compilation_config: CompilationConfig = field(default_factory=CompilationConfig)
    lora_config: LoRAConfig | None = None
"""

ARG_UTILS = """\
import argparse
import json
from dataclasses import dataclass, fields

from vllm.config import CompilationConfig, LoRAConfig, VllmConfig


def get_kwargs(cls):
    out = {}
    for f in fields(cls):
        kind = str(f.type)
        if "bool" in kind:
            out[f.name] = {"action": argparse.BooleanOptionalAction, "default": f.default}
        elif "Config" in kind:
            out[f.name] = {"type": json.loads, "default": None}
        else:
            out[f.name] = {"type": int, "default": f.default}
    return out


@dataclass
class EngineArgs:
    enable_lora: bool = False
    max_loras: int = 1
    max_cpu_loras: int | None = None
    compilation_config: dict | None = None

    @staticmethod
    def add_cli_args(parser):
        lora_kwargs = get_kwargs(LoRAConfig)
        lora_group = parser.add_argument_group(title="LoRAConfig")
        lora_group.add_argument("--enable-lora", action=argparse.BooleanOptionalAction, default=False)
        lora_group.add_argument("--max-loras", **lora_kwargs["max_loras"])
        lora_group.add_argument("--max-cpu-loras", **lora_kwargs["max_cpu_loras"])
        vllm_kwargs = get_kwargs(VllmConfig)
        vllm_group = parser.add_argument_group(title="VllmConfig")
        vllm_group.add_argument("--compilation-config", **vllm_kwargs["compilation_config"])
        return parser

    @classmethod
    def from_cli_args(cls, args):
        return cls(**{f.name: getattr(args, f.name) for f in fields(cls)})

    def create_engine_config(self, usage_context=None):
        lora = LoRAConfig(max_loras=self.max_loras, max_cpu_loras=self.max_cpu_loras) if self.enable_lora else None
        return VllmConfig(compilation_config=CompilationConfig(**(self.compilation_config or {})), lora_config=lora)


AsyncEngineArgs = EngineArgs
"""

SERVE = """\
from vllm.engine.arg_utils import EngineArgs


class ServeSubcommand:
    name = "serve"

    @staticmethod
    def cmd(args):
        pass

    def validate(self, args):
        pass

    def subparser_init(self, subparsers):
        parser = subparsers.add_parser("serve")
        parser.add_argument("model_tag", nargs="?")
        parser.add_argument("--model", default=None)
        return EngineArgs.add_cli_args(parser)
"""

PACKAGE = {
    "vllm/__init__.py": '__version__ = "0.1"\n',
    "vllm/config/__init__.py": CONFIG_INIT,
    "vllm/config/lora.py": LORA,
    "vllm/config/compilation.py": COMPILATION,
    "vllm/engine/__init__.py": "",
    "vllm/engine/arg_utils.py": ARG_UTILS,
    "vllm/entrypoints/__init__.py": "",
    "vllm/entrypoints/cli/__init__.py": "",
    "vllm/entrypoints/cli/serve.py": SERVE,
    "vllm/utils/__init__.py": "",
    "vllm/utils/argparse_utils.py": "import argparse\n\nFlexibleArgumentParser = argparse.ArgumentParser\n",
    "vllm/usage/__init__.py": "",
    "vllm/usage/usage_lib.py": "import enum\n\n\nclass UsageContext(enum.Enum):\n    OPENAI_API_SERVER = 1\n",
}


@pytest.fixture
def reproduced(git_repo: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """`reproduce --output` of the package, in this interpreter as its runtime: each record line by its slug."""
    from tests.conftest import cli

    git_repo.commit(PACKAGE, tag="v1")
    monkeypatch.setenv("PYTHONPATH", str(git_repo.path))
    output = tmp_path / "filled"
    result = cli(
        "reproduce", "--catalog", "v1", "--repo", str(git_repo.path), "--runtime", sys.executable,
        "--output", str(output),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [json.loads(raw) for raw in (output / "records.jsonl").read_text().splitlines()]
    return {
        "result": result,
        "output": output,
        "by_slug": {line["record"]["slug"]: line for line in lines},
    }


def test_a_check_a_config_is_built_for_only_behind_a_switch_is_reproduced_by_a_serve_line_with_the_switch(
    reproduced: dict[str, Any],
) -> None:
    lora = reproduced["by_slug"]["max-cpu-loras-must-be-max-loras"]
    made = lora["extraction"]["reproduction"]
    assert made["level"] == "serve"
    assert made["serve"]["argv"] == ["--max-loras", "8", "--max-cpu-loras", "7", "--enable-lora"]
    assert "must be >= max_loras" in made["message"]
    # The class's own fix, lifted, ran and passed; and each flag of the trigger taken away (but the switch).
    assert made["fix"]["serve"]["argv"] == ["--max-loras", "8", "--max-cpu-loras", "8", "--enable-lora"]
    changes = [s["change"] for s in made["solutions"]]
    assert changes == ["set --max-cpu-loras 8 (was 7)", "remove --max-loras", "remove --max-cpu-loras"]
    record = lora["record"]
    assert record["exampleFix"].startswith("# before\nvllm serve ./model \\\n")
    assert "  --enable-lora" in record["exampleFix"] and "\n\n# after\n" in record["exampleFix"]
    assert record["handlingStrategy"] == "validation" and "LoRAConfig" in record["tags"]
    assert "Max number of LoRAs" in record["documentation"]
    assert record["commonSituations"] is None and record["preventionTips"] is None and record["typeGuard"] is None


def test_validation_code_is_the_condition_over_the_lines_arguments_and_holds_on_both_lines(
    reproduced: dict[str, Any],
) -> None:
    lora = reproduced["by_slug"]["max-cpu-loras-must-be-max-loras"]
    code = lora["record"]["validationCode"]
    assert code.startswith("def check(args: dict) -> str | None:")
    scope: dict[str, Any] = {}
    exec(compile(code, "<check>", "exec"), scope)  # (our own output, in a test)
    made = lora["extraction"]["reproduction"]
    trigger = serve_arguments(ServeLine.model_validate(made["serve"]))
    fixed = serve_arguments(ServeLine.model_validate(made["fix"]["serve"]))
    assert (
        scope["check"](trigger)
        == f"max_cpu_loras ({trigger['max_cpu_loras']}) must be >= max_loras ({trigger['max_loras']})."
    )
    assert scope["check"](fixed) is None
    catch = lora["record"]["tryCatchPattern"]
    assert "except ValueError as error:" in catch and "PATTERN.search(str(error))" in catch


def test_a_sub_config_is_set_through_its_json_flag(reproduced: dict[str, Any]) -> None:
    level = reproduced["by_slug"]["unknown-compilation-level"]["extraction"]["reproduction"]
    assert level["level"] == "serve"
    assert level["serve"]["argv"] == ["--compilation-config", '{"level": 4}']


def test_a_record_no_flag_reaches_stays_at_the_config_level_and_says_why(reproduced: dict[str, Any]) -> None:
    internal = reproduced["by_slug"]["internal-limit-passed"]
    made = internal["extraction"]["reproduction"]
    assert made["level"] == "config" and made["serve"] is None
    assert "no flag sets internal" in made["serveDetail"]
    # Its second half says so: the Python program, no serve line, and no validationCode.
    record = internal["record"]
    assert "no `vllm serve` line was found" in record["triggerScenarios"]
    assert record["exampleFix"].startswith("# before\nfrom vllm.config.lora import LoRAConfig")
    assert record["validationCode"] is None
    assert record["solutions"] == [
        "set internal=5 (so that `self.internal > 5` is false) (run in Python against vllm==0.1; no `vllm serve` flag "
        "was run for it)."
    ]
    # (`secret`, a field of a class a JSON flag takes, is reached through that flag)
    secret = reproduced["by_slug"]["the-secret-is-out"]["extraction"]["reproduction"]
    assert secret["level"] == "serve" and secret["serve"]["argv"] == ["--compilation-config", '{"secret": 7}']
    stderr = reproduced["result"].stderr
    assert "4 of 4 reproduced" in stderr and "3 at the vllm serve level" in stderr and "wrote 4 records" in stderr


def test_explain_of_a_paste_solves_the_check_for_its_values_and_runs_the_fix(
    reproduced: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import cli

    paste = "ValueError: max_cpu_loras (3) must be >= max_loras (40)."
    ran = cli("explain", "--catalog", str(reproduced["output"]), "--runtime", sys.executable, paste)
    assert ran.returncode == 0, ran.stderr
    assert "Your fix" in ran.stdout
    assert "set --max-cpu-loras 40 (was 3) (run against vllm==0.1: the check passes)" in ran.stdout
    assert "--max-cpu-loras 40" in ran.stdout and "--max-loras 40" in ran.stdout
    # Without a runtime at hand: the same fix, said to be derived and not run.
    monkeypatch.setenv("XDG_CACHE_HOME", str(reproduced["output"] / "no-cache"))
    derived = cli("explain", "--catalog", str(reproduced["output"]), paste)
    assert "set --max-cpu-loras 40 (was 3) (derived from the check's condition, not run)" in derived.stdout


def test_reproduce_record_runs_only_the_record_named(git_repo: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import cli

    git_repo.commit(PACKAGE, tag="v1")
    monkeypatch.setenv("PYTHONPATH", str(git_repo.path))
    result = cli(
        "reproduce", "--catalog", "v1", "--repo", str(git_repo.path), "--runtime", sys.executable,
        "--record", "The secret is out",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    reproduced = [(json.loads(raw)["filePath"], json.loads(raw)["lineNumber"]) for raw in result.stdout.splitlines()]
    assert reproduced == [("vllm/config/compilation.py", raise_line(COMPILATION, "The secret is out"))]


def test_a_class_level_program_is_read_back_and_a_change_said_in_flags() -> None:
    program = "import os\n\nos.environ['X'] = '1'\nfrom m import C, D\n\nconfig = C(a=1, b=D(c=2))\nconfig.verify()\n"
    level = class_level(program)
    assert level is not None and level.cls == "C" and level.module == "m"
    assert level.arguments == {"a": "1", "b": "D(c=2)"} and level.environment == {"X": "'1'"}
    assert class_level("from m import f\n\nf(a=1)\n") is None  # (a function called directly)
    assert class_level("from m import C\n\nconfig = C()\nconfig.check(3)\n") is None
    assert flag_groups(["--a", "1", "2", "--b"]) == [["--a", "1", "2"], ["--b"]]
    assert change_words(["--a", "1", "--b"], ["--a", "2"]) == "set --a 2 (was 1); remove --b"
    line = ServeLine(argv=["--x", '{"k": 1}', "--no-y", "--z"], env={"E": "1"})
    assert serve_arguments(line) == {"x": {"k": 1}, "y": False, "z": True}
    assert serve_command(line) == "E=1 vllm serve ./model \\\n  --x '{\"k\": 1}' \\\n  --no-y \\\n  --z"


def test_match_as_text_shows_the_fix_of_the_pastes_values_said_not_run(reproduced: dict[str, Any]) -> None:
    from tests.conftest import cli

    paste = "ValueError: max_cpu_loras (3) must be >= max_loras (40)."
    ran = cli("match", "--catalog", str(reproduced["output"]), "--format", "text", paste)
    assert ran.returncode == 0, ran.stderr
    assert "your fix (derived from the check's condition, not run; explain runs it):" in ran.stdout
    assert "set --max-cpu-loras 40 (was 3):  vllm serve ./model --max-loras 40 --max-cpu-loras 40" in ran.stdout
    as_json = cli("match", "--catalog", str(reproduced["output"]), "--format", "json", paste)
    assert "your fix" not in as_json.stdout  # (JSON answers stay as they were)


_PROBE = """\
import functools, json, os, sys

import vllm
from extractor.reproduce import child, explore, probing, serving

roots = [os.path.abspath(path) for path in vllm.__path__]
task = json.loads(sys.argv[1])
target, pattern = task["target"], task["pattern"]
report = functools.partial(child._report, roots=roots)
found = probing.sweep(task, explore.TINY_MODELS, report, lambda r: serving.at_target(r, target, pattern))
print(json.dumps(found))
"""


def _probed(git_repo: Any, task: dict[str, Any]) -> dict[str, Any]:
    """The serve path's probe run in a fresh interpreter where the package stands for vLLM."""
    import os
    import subprocess

    if not getattr(git_repo, "probed", False):  # (the package committed once, for every probe of a test)
        git_repo.commit(PACKAGE, tag="v1")
        git_repo.probed = True
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(git_repo.path), str(Path(__file__).parents[1])])}
    ran = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(task)], capture_output=True, text=True, env=env, timeout=120,
        check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return dict(json.loads(ran.stdout.splitlines()[-1]))


def test_the_probe_reaches_a_check_through_a_json_key_with_a_value_its_condition_names(git_repo: Any) -> None:
    task = {
        "module": "vllm.config.compilation",
        "fields": [{"class": "CompilationConfig", "field": "level", "flag": None, "via": "--compilation-config",
                    "key": "level", "sources": ["3", "4", "2"]}],
        "classes": ["CompilationConfig"],
        "target": ["vllm/config/compilation.py", raise_line(COMPILATION, "Unknown compilation level")],
        "pattern": r"Unknown compilation level (?P<p0>.*?)\.",
    }  # fmt: skip
    found = _probed(git_repo, task)
    assert found["outcome"] == "lifted", found
    assert found["trigger"]["argv"] == ["--compilation-config", '{"level": 4}'] and found["tries"] == 2


def test_the_probe_combines_an_enabling_switch_with_values_the_fields_types_hold(git_repo: Any) -> None:
    """No condition names a value (`max_cpu_loras < max_loras` compares two fields): the ints the type holds are
    tried, two fields at once, with the class's enabling switch, which no field of the check reads."""
    task = {
        "module": "vllm.config.lora",
        "fields": [
            {"class": "LoRAConfig", "field": "max_cpu_loras", "flag": "--max-cpu-loras", "sources": ["self.max_loras"]},
            {"class": "LoRAConfig", "field": "max_loras", "flag": "--max-loras", "sources": ["self.max_cpu_loras"]},
        ],
        "classes": ["LoRAConfig"],
        "target": ["vllm/config/lora.py", raise_line(LORA, "must be >= max_loras")],
        "pattern": r"max_cpu_loras \((?P<p0>.*?)\) must be >= max_loras \((?P<p1>.*?)\)\.",
    }
    found = _probed(git_repo, task)
    assert found["outcome"] == "lifted", found
    # (0, an int the type holds, is below --max-loras's default, 1: that flag is not needed)
    assert found["trigger"]["argv"] == ["--max-cpu-loras", "0", "--enable-lora"]
    assert found["switches"] == ["--enable-lora"]


def test_the_probe_of_a_field_no_flag_sets_says_how_far_it_got(git_repo: Any) -> None:
    task = {
        "module": "vllm.config.lora",
        "fields": [{"class": "LoRAConfig", "field": "max_loras", "flag": "--max-loras", "sources": []}],
        "classes": [],
        "target": ["vllm/config/lora.py", raise_line(LORA, "Internal limit")],
        "pattern": r"Internal limit (?P<p0>.*?) passed\.",
    }
    found = _probed(git_repo, task)
    assert found["outcome"] == "not reached" and found["tries"] == 6  # (an int field: 0, 1, 2, 3, -1 and 4096)


def test_the_probe_routes_a_name_the_catalog_did_not_resolve_to_its_class_s_json_key(git_repo: Any) -> None:
    """`level` read by a name (a local, a parameter) with no flag named: the runtime finds it a field of the
    function's class, which a JSON flag takes, and sets it there."""
    task = {
        "module": "vllm.config.compilation",
        "function": "CompilationConfig.__post_init__",
        "fields": [{"class": None, "field": "level", "flag": None, "via": None, "key": None, "name": True,
                    "sources": ["3", "4", "2"]}],
        "classes": ["CompilationConfig"],
        "target": ["vllm/config/compilation.py", raise_line(COMPILATION, "Unknown compilation level")],
        "pattern": r"Unknown compilation level (?P<p0>.*?)\.",
    }  # fmt: skip
    found = _probed(git_repo, task)
    assert found["outcome"] == "lifted", found
    assert found["trigger"]["argv"] == ["--compilation-config", '{"level": 4}']
    nowhere = {**task, "fields": [{**task["fields"][0], "field": "no_such_field"}]}
    assert _probed(git_repo, nowhere) == {"outcome": "not reached", "tries": 0,
                                          "said": "no flag sets what its conditions read"}  # fmt: skip


def test_a_value_read_by_a_name_is_named_for_the_probe_and_a_computed_one_is_not() -> None:
    from extractor.reproduce.lifting import _read_name

    assert _read_name("tensor_parallel_size") == "tensor_parallel_size"
    assert _read_name("parallel_config.tensor_parallel_size") == "tensor_parallel_size"
    assert _read_name("self.max_loras") == "max_loras"
    assert [_read_name(e) for e in ("HAS_TRITON", "CompilationMode.__members__", "len(x)", "a[0]", "a +")] == [None] * 5
