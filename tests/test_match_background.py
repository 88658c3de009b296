"""Who else prints a text (extractor/query/match/background.py): the interpreter's and argparse's messages,
measured by running them; the libraries' raises, shipped as data and chosen where they copy the catalog's; and
what `match`, `explain` and a pasted traceback make of them."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from extractor.query.match.background import Printed, background, libraries
from extractor.query.match.matcher import Matcher
from tests.conftest import GitRepo, matcher_of

SOURCE = """\
def check(self, name, rope_scaling, key):
    if name is None:
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
    if not isinstance(rope_scaling, dict):
        raise ValueError(
            "`rope_scaling` must be a dictionary with two fields, `type` and `factor`, " f"got {rope_scaling}"
        )
    raise ValueError(f"No plugin named {name!r} for key {key}")
"""


@pytest.fixture(scope="module")
def matcher(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    return matcher_of(tmp_path_factory.mktemp("background") / "repo", {"pkg/a.py": SOURCE})


def test_the_interpreters_messages_are_measured_not_typed() -> None:
    """Each of Python's templates, its placeholders filled with what a fresh interpreter is made to print,
    fullmatches that interpreter's own message (run in a child: what this process measured, another prints)."""
    said = {held.elsewhere.errorMessage: held.pattern for held in background() if held.elsewhere.library == "python"}
    code = textwrap.dedent(
        """
        import json
        out = []
        for code in ["object().zq", "import zq_missing", "[][1]", "1 // 0", "int('zq')", "max([])", "zq_name"]:
            try:
                exec(code, {})
            except Exception as error:
                out.append(str(error))
        print(json.dumps(out))
        """
    )
    import json

    printed = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout)
    for message in printed:
        assert any(re.fullmatch(pattern, message) for pattern in said.values()), message
    assert "'{type}' object has no attribute '{name}'" in said


def test_a_printed_message_becomes_a_template() -> None:
    printed = Printed("X", "zq_prog: error: argument --zq: invalid choice: 'zq_c' (choose from 'a', 'b')", (
        ("zq_prog", "prog"), ("--zq", "argument"), ("zq_c", "value"), ("'a', 'b'", "choices"),
    ))  # fmt: skip
    template, pattern, groups = printed.template()
    assert template == "{prog}: error: argument {argument}: invalid choice: '{value}' (choose from {choices})"
    assert [name for _, name in groups] == ["prog", "argument", "value", "choices"]
    assert re.fullmatch(pattern, "vllm serve: error: argument --dtype: invalid choice: 'fp9' (choose from 'x')")


def test_the_libraries_data_names_each_raise_site() -> None:
    rows = libraries()
    assert {held.elsewhere.library for held in rows} >= {"transformers", "torch", "pydantic"}
    for elsewhere, pattern, _, _ in rows[:500]:
        assert elsewhere.filePath and elsewhere.filePath.startswith(elsewhere.library.replace("-", "_") + "/")
        assert elsewhere.lineNumber and elsewhere.version and re.compile(pattern)


def test_a_copy_of_a_librarys_check_is_weak_and_said_to_be_theirs(matcher: Matcher) -> None:
    text = "ValueError: `rope_scaling` must be a dictionary with two fields, `type` and `factor`, got {'type': 'x'}"
    result = matcher.match(text)
    assert result.matches == ()
    assert [m.site.lineNumber for m in result.weak][:1] == [5]
    assert {said.elsewhere.library for said in result.elsewhere} == {"transformers"}
    (said, *_) = result.to_json()["elsewhere"]
    assert said["filePath"].startswith("transformers/") and said["lineNumber"] > 0


def test_pythons_own_text_is_weak_and_the_catalogs_own_stays_confident(matcher: Matcher) -> None:
    result = matcher.match("AttributeError: 'Qwen2ForCausalLM' object has no attribute 'embed_tokens'")
    assert (result.matches, [s.elsewhere.library for s in result.elsewhere][:1]) == ((), ["python"])
    assert [m.site.lineNumber for m in matcher.match("ValueError: No plugin named 'x' for key 3").matches] == [8]


def test_a_tracebacks_innermost_frame_names_the_raiser(matcher: Matcher) -> None:
    message = "ValueError: No plugin named 'x' for key 3"
    ours = f'Traceback (most recent call last):\n  File "/x/site-packages/pkg/a.py", line 8, in check\n{message}'
    theirs = ours.replace("site-packages/pkg/a.py", "site-packages/transformers/models/x.py")
    assert [m.site.lineNumber for m in matcher.match(ours).matches] == [8]
    assert matcher.match(theirs).matches == ()
    assert [m.site.lineNumber for m in matcher.match(theirs).weak] == [8]


def test_explain_says_who_prints_a_text_no_record_answers(tmp_path, git_repo: GitRepo) -> None:  # type: ignore[no-untyped-def]
    git_repo.commit({"pkg/a.py": SOURCE}, tag="v1")
    command = [sys.executable, "-m", "extractor", "explain", "--repo", str(git_repo.path), "--catalog", "v1"]
    command += ["--path", "pkg", "--exception", "*", "AttributeError: 'Foo' object has no attribute 'bar'"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    assert "with confidence: raised by Python itself (AttributeError" in result.stderr


def test_a_frame_in_the_catalogs_own_package_makes_a_copy_the_catalogs(matcher: Matcher) -> None:
    """The copy of transformers' check, raised where the traceback's innermost frame is the catalog's own file:
    the catalog raised it, and transformers is not named; a frame of the same package name elsewhere in the
    path (an environment called `pkg`) says nothing."""
    message = "ValueError: `rope_scaling` must be a dictionary with two fields, `type` and `factor`, got {'type': 'x'}"
    ours = f'Traceback (most recent call last):\n  File "/x/site-packages/pkg/a.py", line 5, in check\n{message}'
    result = matcher.match(ours)
    assert [m.site.lineNumber for m in result.matches] == [5]
    assert result.elsewhere == ()
    environment = ours.replace("/x/site-packages/pkg/a.py", "/envs/pkg/lib/site-packages/other/b.py")
    assert matcher.match(environment).matches == ()
    checkout = ours.replace("/x/site-packages/pkg/a.py", "/home/me/src/pkg/pkg/a.py")  # (a source checkout)
    assert [m.site.lineNumber for m in matcher.match(checkout).matches] == [5]


def test_a_message_a_wrapper_raised_again_is_not_ruled_out_by_the_wrappers_class(matcher: Matcher) -> None:
    """`raise RuntimeError(error)` around a ValueError's text (another library catching and raising it again):
    the class in front of the message is the wrapper's, so the record of the ValueError still answers it."""
    message = "RuntimeError: No plugin named 'x' for key 3"
    wrapped = f'  File "/x/site-packages/other/run.py", line 9, in load\n    raise RuntimeError(error)\n{message}'
    assert [m.site.lineNumber for m in matcher.match(wrapped).matches] == [8]
    assert matcher.match(message).matches == ()  # (without the wrapper's raise, the class rules it out)
    written = wrapped.replace("raise RuntimeError(error)", 'raise RuntimeError(f"failed: {error}")')
    assert matcher.match(written).matches == ()  # (a raise that writes the text itself: its class stands)
