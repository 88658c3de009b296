"""Explain: a record found by id, slug, a unique prefix of either, or text; related errors cut cleanly."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import GitRepo, cli

LONG = "The value given for the speculative decoding method is not one that this build knows about; "
SOURCE = f'''\
def check(self, value):
    if value:
        raise ValueError(f"{LONG}got {{self.method_name_given_by_the_user}} instead.")
    if self.other:
        raise ValueError("Speculative decoding needs a draft model or a method that brings its own.")
    raise ValueError("Speculative decoding cannot run with pipeline parallelism yet.")
'''


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> str:
    repo = GitRepo(tmp_path_factory.mktemp("explain") / "repo")
    repo.commit({"vllm/config/spec.py": SOURCE}, tag="v1")
    out = tmp_path_factory.mktemp("out")
    assert cli("--repo", str(repo.path), "--sha", "v1", "--output", str(out)).returncode == 0
    (directory,) = out.iterdir()
    return str(directory)


def explain(catalog: str, *args: str) -> subprocess.CompletedProcess[str]:
    return cli("explain", "--catalog", catalog, *args)


def records(catalog: str) -> dict[int, dict[str, str]]:
    with open(f"{catalog}/records.jsonl") as lines:
        return {r["lineNumber"]: r for r in (json.loads(line)["record"] for line in lines)}


def test_a_unique_prefix_of_an_id_or_a_slug_is_enough(catalog: str) -> None:
    by_line = records(catalog)
    whole = explain(catalog, by_line[5]["id"])
    assert whole.returncode == 0 and "vllm/config/spec.py:5" in whole.stdout
    assert explain(catalog, by_line[5]["id"][:6]).stdout == whole.stdout
    assert explain(catalog, "speculative-decoding-needs").stdout == whole.stdout


def test_an_ambiguous_prefix_lists_what_it_could_mean(catalog: str) -> None:
    result = explain(catalog, "speculative-decoding")
    assert result.returncode == 2
    assert result.stderr.startswith("extractor: error: 'speculative-decoding' is the start of 2 records' ids or slugs")


def test_markdown_related_errors_are_never_cut_inside_a_placeholder(catalog: str) -> None:
    by_line = records(catalog)
    markdown = explain(catalog, by_line[5]["id"], "--format", "markdown").stdout
    related = [line for line in markdown.split("## Related errors\n\n")[1].splitlines() if ".py:3]" in line]
    # The 100th character falls inside `{self.method_name_given_by_the_user}`: the cut comes before it.
    assert len(LONG + "got ") < 100 < len(LONG + "got {self.method_name_given_by_the_user}")
    assert related[0] == f"- [vllm/config/spec.py:3]({by_line[3]['githubUrl']}) {LONG}got ..."
