"""What `str(exc)` really prints: generated raises of every shape are executed and compared with their records,
and the same independent checker (tests/rendering.py) runs over real codebases from the package index."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from collections.abc import Sequence
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, assume, given, settings

from extractor.model.records import Site
from extractor.scanning.scan import Scanned, ScanOptions, scan
from tests.conftest import release_store
from tests.rendering import Tally, check_file, check_tree, own_classes

# Values that hold what breaks naive rendering: quotes of both kinds, a newline, braces, `%`, a backslash.
VALUES = st.sampled_from(["v", "it's", 'say "hi"', "both ' and \"", "line\nbreak", "{x}", "50%", "back\\slash", 7])
TEXT = st.text(alphabet="ab '\"{}%\\\n.:", max_size=8)


def quoted(text: str) -> str:
    return repr(text)


def braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


@st.composite
def message(draw: st.DrawFn) -> str:
    """One message expression over the names a and b, in one of the shapes the extractor reads."""
    a_text, b_text = draw(TEXT), draw(TEXT)
    shape = draw(st.sampled_from(["literal", "fstring", "adjacent", "concat", "percent", "width", "format", "name"]))
    if shape == "literal":
        return quoted(a_text)
    if shape == "fstring":
        return "f" + repr(braces(a_text) + "{a}" + braces(b_text))
    if shape == "adjacent":
        return "f" + repr("{a}{b}" + braces(a_text))
    if shape == "concat":
        return f"{quoted(a_text)} + str(a) + {quoted(b_text)}"
    if shape == "percent":
        return f"{quoted(a_text.replace('%', '%%') + '%s')} % (a,)"
    if shape == "width":
        code = draw(st.sampled_from(["%12s", "%-9s", "%.3s", "%5r"]))
        return f"{quoted(a_text.replace('%', '%%') + code + '|')} % (a,)"
    if shape == "format":
        return f"{quoted(a_text.replace('{', '{{').replace('}', '}}') + '{}:{!r}')}.format(a, b)"
    return "a"


@st.composite
def raise_statement(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A raise of one of the shapes Python prints its own way, with the statements that build its message."""
    shape = draw(
        st.sampled_from(["one", "several", "keyerror", "oserror", "variable", "joined", "twostep", "branches"])
    )
    first, second = draw(message()), draw(message())
    if shape == "one":
        return f"raise ValueError({first})", []
    if shape == "several":
        return f"raise ValueError({first}, {second})", []
    if shape == "keyerror":
        return f"raise KeyError({first})", []
    if shape == "oserror":
        three = draw(st.booleans())
        return f"raise FileNotFoundError(2, {first}{', b' if three else ''})", []
    if shape == "variable":
        return "raise ValueError(msg)", [f"msg = {first}", f"msg += {second}"]
    if shape == "joined":
        when = draw(st.booleans())
        return 'raise ValueError(" | ".join(errors))', [
            "errors = []",
            f"errors.append({first})",
            f"if {when}:",
            f"    errors.append({second})",
        ]
    if shape == "branches":
        return "raise ValueError(msg)", ["if a == b:", f"    msg = {first}", "else:", f"    msg = {second}"]
    return "raise RuntimeError(msg)", ["msg = '{} and {}'", "msg = msg.format(a, b)"]


def site_of(source: str) -> Site:
    result = scan(source.encode(), options=ScanOptions(exceptions=("*",)))
    assert isinstance(result, Scanned)
    (site,) = result.sites
    return site


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(raise_statement(), VALUES, VALUES)
def test_generated_raises_print_what_their_records_say(raise_: tuple[str, list[str]], a: object, b: object) -> None:
    """Execute each generated raise for real: its record's pattern fullmatches `str(exc)`, and every
    placeholder that no other placeholder touches gives back the value it printed."""
    statement, before = raise_
    body = "\n".join(["def f(a, b):", *("    " + line for line in [*before, statement])]) + "\n"
    namespace: dict[str, object] = {}
    exec(body, namespace)
    with pytest.raises(Exception) as caught:
        namespace["f"](a, b)  # type: ignore[operator]
    # A program that fails before its raise (`msg += a` or `" | ".join(errors)` with a number) prints no
    # message of the raise's: nothing to compare.
    assume(f"raise {type(caught.value).__name__}(" in statement)
    rendered = str(caught.value)
    site = site_of(body)
    found = re.fullmatch(site.messagePattern, rendered, re.S)
    assert found is not None, (body, site.errorMessage, site.messagePattern, rendered)
    tally = check_file(body, [site], [], set())
    assert tally.evaluable == tally.fullmatch and tally.values_checked == tally.values_right, tally.failures


@pytest.mark.parametrize(
    ("source", "message", "warnings"),
    [
        pytest.param(
            "raise ValueError('E1', f\"can't parse {x}\")",
            "('E1', \"can't parse {x}\")",
            ["args-not-formatted"],
            id="class 1: an element with an apostrophe takes double quotes",
        ),
        pytest.param(
            "raise KeyError(f'missing key {k}')", "'missing key {k}'", [], id="class 2: KeyError prints a repr"
        ),
        pytest.param("raise KeyError(k)", "{k!r}", [], id="class 2: KeyError of a value"),
        pytest.param(
            "raise FileNotFoundError(errno.ENOENT, 'No such file', path)",
            "[Errno {errno.ENOENT}] No such file: {path!r}",
            [],
            id="class 2: errno, strerror and filename",
        ),
        pytest.param("raise OSError(2, 'gone')", "[Errno 2] gone", [], id="class 2: errno and strerror"),
        pytest.param(
            "raise SyntaxError('bad indent', ('/src/x.py', 1, 2, 'text'))",
            "bad indent (x.py, line 1)",
            [],
            id="class 2: SyntaxError with its details",
        ),
        pytest.param(
            "raise UnicodeDecodeError(enc, data, i, j, 'invalid start byte')",
            "'{enc}' codec can't decode bytes in position {i}-{j - 1}: invalid start byte",
            [],
            id="class 2: UnicodeDecodeError, one byte or several",
        ),
        pytest.param(
            "raise HTTPException(status_code=404, detail='Item not found')",
            "{status_code=404, detail='Item not found'}",
            ["keyword-arguments"],
            id="class 4: keywords to an unknown class are not the message",
        ),
        pytest.param("raise ValueError(f'{a}{b} failed')", "{a}{b} failed", ["adjacent-placeholders"], id="class 7"),
        pytest.param("raise ValueError('%200s has no version' % (x,))", "{x:>200} has no version", [], id="class 8"),
        pytest.param("raise ValueError('%-8s|' % (x,))", "{x:<8}|", [], id="class 8: left-aligned"),
        pytest.param(
            "raise Rejected(_('No token given'))", "No token given", ["translated-message"], id="class 9: _()"
        ),
        pytest.param("raise ValueError(gettext('%s is bad') % x)", "{x} is bad", [], id="class 9: gettext() then %"),
    ],
)
def test_each_class_of_issue_14_prints_as_python_does(source: str, message: str, warnings: list[str]) -> None:
    site = site_of(source + "\n")
    assert (site.errorMessage, site.extraction.warnings) == (message, warnings)


@pytest.mark.parametrize(
    ("body", "values"),
    [
        pytest.param("raise OSError(None, a)", ["boom"], id="OSError: errno None"),
        pytest.param("raise OSError(errno.ESRCH, None)", [None], id="OSError: strerror None"),
        pytest.param("raise OSError(None, None, a)", ["f.txt", None], id="OSError: filename, or None"),
        pytest.param("raise BlockingIOError(11, 'busy', a)", [5], id="BlockingIOError: characters written"),
        pytest.param("raise SyntaxError()", [None], id="SyntaxError without arguments"),
        pytest.param("raise IndentationError", [None], id="IndentationError, the class alone"),
        pytest.param("raise SyntaxError('a', 'b', a)", ["c"], id="SyntaxError: three arguments"),
        pytest.param("raise SyntaxError('bad', a)", [("f.py", 3, 1, "x"), (None, None, None, None)], id="details"),
        pytest.param("raise SyntaxError('bad', ['/src/f.py', 3, 1, 'x'])", [None], id="details as a list"),
        pytest.param("raise SyntaxError('bad', (a, 3, 1, 'x'))", ["d/f.py", None, 7], id="details: a file, or not"),
        pytest.param("raise SyntaxError('bad', ('f.py', a, 1, 'x'))", [3, None, "4"], id="details: a line, or not"),
        pytest.param("raise SyntaxError('bad', (a, a, 1, 'x'))", ["f.py", 3, None], id="details: either, or neither"),
        pytest.param("raise ExceptionGroup('m', a)", [[ValueError()], [ValueError(), KeyError()]], id="group"),
        pytest.param("key = len(a)\n    raise KeyError(key)", ["abc"], id="KeyError of a number"),
        pytest.param("key = a.upper()\n    raise KeyError(key)", ["abc"], id="KeyError of a text, unknown"),
        pytest.param("key = f'no {a}'\n    raise KeyError(key)", ["abc"], id="KeyError of an f-string"),
        pytest.param(
            "e = ['head']\n    if a:\n        e.append('k')\n    raise KeyError('\\n'.join(e))",
            [True, False],
            id="KeyError of a list with optional items, joined",
        ),
        pytest.param(
            "e = [\"it's\"]\n    if a:\n        e.append(f'k: {a}')\n    raise ValueError('\\t'.join(e), 5)",
            [True, "q'z", False],
            id="several arguments, one a list with optional items, joined",
        ),
        pytest.param('raise KeyError("it\'s\\n" if a else "b\\n\'s")', [True, False], id="KeyError of either text"),
        pytest.param("raise ValueError('x\\ty' if a else 'a\\nb', 1)", [True, False], id="several, one of either text"),
    ],
)
def test_builtins_that_print_their_own_way_print_what_their_records_say(body: str, values: list[object]) -> None:
    """Run for real, with each value: the pattern fullmatches what Python prints."""
    assert_prints_what_its_record_says(f"import errno\ndef f(a):\n    {body}\n", values)


def assert_prints_what_its_record_says(source: str, values: Sequence[object]) -> None:
    """Run `f` of `source` with each value: the pattern of its one raise fullmatches what Python prints."""
    site = site_of(source)
    namespace: dict[str, object] = {}
    exec(source, namespace)
    for value in values:
        with pytest.raises(BaseException) as caught:
            namespace["f"](value)  # type: ignore[operator]
        assert re.fullmatch(site.messagePattern, str(caught.value), re.S), (site.errorMessage, str(caught.value))


@pytest.mark.parametrize(
    ("module", "raise_"),
    [
        pytest.param("class E(KeyError):\n    pass", "raise E(a)", id="KeyError"),
        pytest.param("class A(KeyError):\n    pass\nclass E(A):\n    'Doc.'", "raise E(f'no {a}')", id="chain"),
        pytest.param("class E(FileNotFoundError):\n    pass", "raise E(2, 'gone', a)", id="OSError"),
        pytest.param("class E(SyntaxError):\n    pass", "raise E('bad', (a, 3, 1, 'x'))", id="SyntaxError"),
        pytest.param("class E(ExceptionGroup):\n    pass", "raise E('m', [ValueError(a)])", id="ExceptionGroup"),
        pytest.param("class KeyError(Exception):\n    pass", "raise KeyError(a)", id="a builtin's name"),
        pytest.param("class TimeoutError(Exception):\n    pass", "raise TimeoutError(a, 'x')", id="an OSError's name"),
    ],
)
def test_a_class_of_the_module_prints_what_its_record_says(module: str, raise_: str) -> None:
    """Run for real: a module's own class prints as the builtin it derives from prints, or as its own."""
    assert_prints_what_its_record_says(f"{module}\n\n\ndef f(a):\n    {raise_}\n", ("k", "it's", "f.py"))


@pytest.mark.parametrize(
    "args",
    [("utf-8", b"\xff\xfe", 0, 1, "bad"), ("utf-8", b"\xff\xfe", 0, 2, "bad")],
    ids=["one byte", "a range"],
)
def test_unicode_errors_print_either_form(args: tuple[object, ...]) -> None:
    site = site_of("raise UnicodeDecodeError(enc, data, i, j, why)\n")
    assert re.fullmatch(site.messagePattern, str(UnicodeDecodeError(*args)), re.S)  # type: ignore[arg-type]
    encode = site_of("raise UnicodeEncodeError(enc, data, i, j, why)\n")
    for text in ("\xe9x", "\u1234", "\U0001f600"):
        assert re.fullmatch(encode.messagePattern, str(UnicodeEncodeError("ascii", text, 0, 1, "why")), re.S)


def test_reraises_are_named_skips() -> None:
    """Class 3 and 6: re-raising a caught name, a bare raise and `with_traceback` are each a named skip."""
    source = textwrap.dedent(
        """
        def f(tb):
            try:
                pass
            except OSError as err:
                raise err
            except ValueError as exc:
                raise exc.with_traceback(tb)
            except KeyError:
                raise
            raise TypeError("new").with_traceback(tb)
        """
    )
    result = scan(source.encode(), options=ScanOptions(exceptions=("*",)))
    assert isinstance(result, Scanned)
    assert [(s.lineNumber, s.errorClass, s.errorMessage) for s in result.sites] == [(11, "TypeError", "new")]
    assert [(s.line, s.reason) for s in result.skipped] == [
        (6, "re-raises the caught exception err"),
        (8, "re-raises an existing exception with another traceback (with_traceback)"),
        (10, "re-raises the exception being handled (a bare raise)"),
    ]


def test_a_list_filled_before_the_raise_is_not_its_initial_value() -> None:
    """Class 5: `errors` is changed between its assignment and the raise, so it stays a placeholder."""
    source = "def f(items):\n    errors = []\n    for i in items:\n        errors.append(i)\n"
    source += "    raise ValueError(errors)\n"
    assert site_of(source).errorMessage == "{errors}"


def test_a_joined_list_is_resolved_from_its_appends() -> None:
    """Issue 13: the items appended on the way, some only on some paths, make the message."""
    source = textwrap.dedent(
        """
        def validate_legal(self, lora_config):
            error_msg = self._validate_features()
            if self.r > lora_config.max_lora_rank:
                error_msg.append(
                    f"LoRA rank {self.r} is greater than max_lora_rank"
                    f" {lora_config.max_lora_rank}."
                )
            if self.bias != "none":
                error_msg.append("Adapter bias is not supported.")
            if error_msg:
                raise ValueError(f"{' '.join(error_msg)}")
        """
    )
    site = site_of(source)
    assert site.errorMessage == (
        "{' '.join(self._validate_features())} LoRA rank {self.r} is greater than max_lora_rank "
        "{lora_config.max_lora_rank}. Adapter bias is not supported."
    )
    for rendered in [
        "LoRA rank 64 is greater than max_lora_rank 16.",
        "Adapter bias is not supported.",
        "a b LoRA rank 64 is greater than max_lora_rank 16. Adapter bias is not supported.",
    ]:
        assert re.fullmatch(site.messagePattern, rendered, re.S), rendered


@pytest.mark.parametrize(
    "between",
    [
        pytest.param("errors.extend(more)", id="extend"),
        pytest.param("for e in more:\n        errors.append(e)", id="append in a loop"),
        pytest.param("errors.append(compute())", id="an item that is not a string shape"),
        pytest.param("check(errors)", id="passed to a call"),
        pytest.param("errors += more", id="augmented"),
        pytest.param("errors, x = more", id="rebound by unpacking"),
    ],
)
def test_a_joined_list_changed_otherwise_stays_a_placeholder(between: str) -> None:
    """Anything on the way but an append of a string shape may change the list: it stays unresolved."""
    source = f"def f(more):\n    errors = ['a']\n    {between}\n    raise ValueError(', '.join(errors))\n"
    assert site_of(source).errorMessage == "{', '.join(errors)}"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        pytest.param("    with lock:\n        raise E(', '.join(errs))\n", "a", id="in a with block"),
        pytest.param(
            "    try:\n        g()\n    except OSError:\n        raise E(', '.join(errs))\n", "a", id="in a handler"
        ),
        pytest.param(
            "    try:\n        errs.append(g())\n    except OSError:\n        raise E(', '.join(errs))\n",
            "{', '.join(errs)}",
            id="the try body may have appended something else",
        ),
        pytest.param(
            "    for x in xs:\n        errs.append('b')\n        raise E(', '.join(errs))\n",
            "{', '.join(errs)}",
            id="an earlier turn of the loop may have appended",
        ),
    ],
)
def test_a_joined_list_inside_a_compound_statement(source: str, message: str) -> None:
    assert site_of("def f(xs, lock):\n    errs = ['a']\n" + source).errorMessage == message


@pytest.mark.parametrize(
    "binding",
    [
        pytest.param("match x:\n        case str(msg):\n            pass", id="match capture"),
        pytest.param("match x:\n        case {**msg}:\n            pass", id="match rest"),
        pytest.param("def msg():\n        pass", id="def"),
        pytest.param("class msg:\n        pass", id="class"),
        pytest.param("import msg", id="import"),
        pytest.param("from m import msg", id="from import"),
        pytest.param("for msg in x:\n        pass", id="for"),
        pytest.param("with x as msg:\n        pass", id="with"),
        pytest.param("try:\n        pass\n    except E as msg:\n        pass", id="except"),
        pytest.param("if (msg := x):\n        pass", id="walrus"),
        pytest.param("global msg", id="global"),
        # The same forms, spelled otherwise or nested.
        pytest.param("match x:\n        case msg:\n            pass", id="match bare capture"),
        pytest.param("match x:\n        case [1, *msg]:\n            pass", id="match star"),
        pytest.param("match x:\n        case [1] as msg:\n            pass", id="match as"),
        pytest.param("async def msg():\n        pass", id="async def"),
        pytest.param("@cache\n    def msg():\n        pass", id="decorated def"),
        pytest.param("import a.b as msg", id="import as"),
        pytest.param("from m import y as msg", id="from import as"),
        pytest.param("for msg, y in x:\n        pass", id="for, unpacking"),
        pytest.param("with x as (msg, y):\n        pass", id="with, unpacking"),
        pytest.param("try:\n        pass\n    except* E as msg:\n        pass", id="except star"),
        pytest.param("y = [(msg := z) for z in x]", id="walrus in a comprehension"),
        pytest.param("msg, y = x", id="unpacking"),
        pytest.param("y, *msg = x", id="starred unpacking"),
        pytest.param("del msg", id="del"),
        pytest.param("if x:\n        class msg:\n            pass", id="class in a branch"),
        pytest.param("with x:\n        import msg", id="import in a with block"),
        # Parts of a nested def, class or lambda run here: a walrus there binds here.
        pytest.param("@(msg := d)\n    def g():\n        pass", id="walrus in a nested def's decorator"),
        pytest.param("def g(y=(msg := x)):\n        pass", id="walrus in a nested def's default"),
        pytest.param("class C((msg := x)):\n        pass", id="walrus in a nested class's base"),
        pytest.param("g = lambda y=(msg := x): y", id="walrus in a lambda's default"),
    ],
)
def test_any_other_binding_between_assignment_and_raise_keeps_the_name_unresolved(binding: str) -> None:
    """Issue 17: every binding form of the name between `msg = "a"` and the raise."""
    source = f"def f(x):\n    msg = 'a'\n    {binding}\n    raise ValueError(msg)\n"
    assert site_of(source).errorMessage == "{msg}"


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            "def f(x):\n    msg = 'a'\n    match x:\n        case str(msg):\n            raise ValueError(msg)\n",
            id="the case the raise is in",
        ),
        pytest.param(
            "def f(x):\n    msg = 'a'\n    if (msg := x):\n        raise ValueError(msg)\n", id="the if the raise is in"
        ),
    ],
)
def test_a_binding_in_the_header_above_the_raise_keeps_it_unresolved(source: str) -> None:
    assert site_of(source).errorMessage == "{msg}"


@pytest.mark.parametrize(
    ("source", "message", "pattern_accepts"),
    [
        pytest.param(
            "REASON = 'no token given'\ndef f():\n    raise Rejected(REASON)\n",
            "no token given",
            ["no token given"],
            id="a module-level string constant",
        ),
        pytest.param(
            "REASON = 'a'\nREASON = 'b'\ndef f():\n    raise Rejected(REASON)\n",
            "{REASON}",
            ["b"],
            id="a module name bound twice stays a placeholder",
        ),
        pytest.param(
            "REASON = 'a'\ndef f(REASON):\n    raise Rejected(REASON)\n",
            "{REASON}",
            ["x"],
            id="a parameter hides the module's constant",
        ),
        pytest.param(
            "def f(n):\n    msg = '{} parameters'\n    msg = msg.format(n)\n    raise ValueError(msg)\n",
            "{n} parameters",
            ["3 parameters"],
            id="a message built in two steps",
        ),
        pytest.param(
            "def f(code):\n    msg = f'{code} Client Error' if code < 500 else f'{code} Server Error'\n"
            "    raise HTTPError(msg)\n",
            "{code} Client Error",
            ["404 Client Error", "503 Server Error"],
            id="a conditional expression: either string",
        ),
        pytest.param(
            "def f(c):\n    if c:\n        msg = 'one'\n    elif c is None:\n        msg = 'two'\n    else:\n"
            "        msg = 'three %s' % c\n    raise ValueError(msg)\n",
            "one",
            ["one", "two", "three 0"],
            id="a string assigned on every branch",
        ),
    ],
)
def test_messages_worth_resolving_are_resolved(source: str, message: str, pattern_accepts: list[str]) -> None:
    """Class 9 of issue 14: module constants, messages built in two steps, a string chosen by a branch."""
    site = site_of(source)
    assert site.errorMessage == message
    for rendered in pattern_accepts:
        assert re.fullmatch(site.messagePattern, rendered, re.S), rendered


def test_a_file_reading_a_module_constant_is_never_rescanned_in_pieces() -> None:
    """The constant may change while the function reading it stays the same: the new value is read."""
    from extractor.scanning.scan import scan_blob

    body = "def f():\n" + "".join(f"    x{i} = {i}\n" for i in range(12)) + "    raise Rejected(REASON)\n"
    options = ScanOptions(exceptions=("*",))
    old = scan_blob(f"REASON = 'old'\n{body}".encode(), options=options)
    new = scan_blob(f"REASON = 'new'\n{body}".encode(), options=options, previous=old)
    assert [site.errorMessage for site in new.sites] == ["new"]


@pytest.mark.parametrize("count", [500, 1000, 5000])
def test_one_implicit_concatenation_of_many_pieces_is_read(count: int) -> None:
    """Issue 15: a thousand adjacent literals used to be 'nesting too deep'."""
    source = "raise ValueError(" + " ".join(repr(f"p{i} ") for i in range(count)) + ")\n"
    site = site_of(source)
    assert site.errorMessage == "".join(f"p{i} " for i in range(count))


# Pure-Python codebases of several kinds (web frameworks, an HTTP client, a validation library, templating,
# a CLI library), pinned, from the package index pip is configured with.
CODEBASES = [
    "django==5.1.3",
    "flask==3.0.3",
    "werkzeug==3.0.4",
    "starlette==0.41.3",
    "fastapi==0.115.5",
    "requests==2.32.3",
    "httpx==0.27.2",
    "pydantic==2.9.2",
    "attrs==24.2.0",
    "jinja2==3.1.4",
    "click==8.1.7",
]


def _wheel_of(requirement: str, folder: Path) -> Path | None:
    name, version = requirement.split("==")
    for wheel in folder.glob("*.whl"):
        parts = wheel.name.split("-")
        if re.sub(r"[-_.]+", "_", parts[0]).lower() == re.sub(r"[-_.]+", "_", name).lower() and parts[1] == version:
            return wheel
    return None


@pytest.fixture(scope="session")
def codebase_wheels() -> list[Path]:
    """The wheels of CODEBASES, downloaded once and kept, like the release sdists, in the release store's
    test-wheels/ (see tests/conftest.py): pinned versions, so a kept wheel is the one pip would fetch."""
    from filelock import FileLock

    folder = release_store() / "test-wheels"
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder / ".lock")):
        missing = [requirement for requirement in CODEBASES if _wheel_of(requirement, folder) is None]
        if missing:
            with tempfile.TemporaryDirectory(dir=folder, prefix=".download-") as download:
                command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:"]
                subprocess.run([*command, "--dest", download, *missing], check=True, capture_output=True)
                for wheel in Path(download).glob("*.whl"):
                    os.replace(wheel, folder / wheel.name)  # whole files only: a download cut short is not kept
    return [wheel for requirement in CODEBASES if (wheel := _wheel_of(requirement, folder)) is not None]


@pytest.mark.codebases
def test_real_codebases_print_what_their_records_say(codebase_wheels: list[Path]) -> None:
    """Every raise statement is a record or a named skip, and at least 99.9% of the records the
    checker can evaluate fullmatch what Python prints (the figures are in docs/contributing/testing.md)."""
    total = Tally()
    wheels = codebase_wheels
    assert len(wheels) == len(CODEBASES)  # else the figures below would hold of fewer codebases, or none
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            files = {n: archive.read(n).decode("utf-8", "replace") for n in archive.namelist() if n.endswith(".py")}
        total.add(check_tree(files))
    print(
        f"\nraises {total.raises}, accounted {total.accounted}, records {total.records}, evaluable {total.evaluable},"
        f" fullmatch {total.fullmatch}, values {total.values_right}/{total.values_checked},"
        f" not evaluable {dict(total.not_evaluable)}"
    )
    assert total.raises > 3000 and total.accounted == total.raises
    assert total.evaluable > 0.7 * total.records  # the ratios below are of most records, not of a few
    assert total.fullmatch >= 0.999 * total.evaluable, total.failures[:20]
    assert total.values_right >= 0.99 * total.values_checked, total.failures[:20]


def test_the_checker_fails_a_wrong_record() -> None:
    """The checker itself can fail: a record whose pattern does not match what Python prints is counted."""
    source = "raise ValueError('a', 'b')\n"
    site = site_of(source)
    wrong = site.model_copy(update={"messagePattern": "a, b"})
    tally = check_file(source, [wrong], [], own_classes([]))
    assert (tally.evaluable, tally.fullmatch, len(tally.failures)) == (1, 0, 1)
