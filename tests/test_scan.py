"""Scanning one file: which raises are sites, their conditions, function, cause and message."""

from __future__ import annotations

import textwrap

import hypothesis.strategies as st
import orjson
import pytest
from hypothesis import given

from extractor.model.records import Site
from extractor.scanning.scan import Scanned, ScanOptions, Skipped, could_hold, scan


def sites(source: str, **options: object) -> list[Site]:
    result = scan(textwrap.dedent(source).encode(), options=ScanOptions(**options))  # type: ignore[arg-type]
    assert isinstance(result, Scanned)
    return list(result.sites)


def conditions(site: Site) -> list[tuple[str, str, bool]]:
    return [(c.kind.value, c.test, c.negated) for c in site.extraction.conditions]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            """
            if a:
                raise ValueError("x")
            """,
            [("if", "a", False)],
            id="if",
        ),
        pytest.param(
            """
            if a:
                pass
            elif b and (c or
                        d):  # comment
                raise ValueError("x")
            """,
            [("if", "a", True), ("elif", "b and (c or d)", False)],
            id="elif negates if, test on one line",
        ),
        pytest.param(
            """
            if a:
                pass
            elif b:
                pass
            else:
                raise ValueError("x")
            """,
            [("if", "a", True), ("elif", "b", True), ("else", "", False)],
            id="else negates every earlier branch",
        ),
        pytest.param(
            """
            if a:
                pass
            else:
                if b:
                    raise ValueError("x")
            """,
            [("if", "a", True), ("else", "", False), ("if", "b", False)],
            id="if nested in else is not elif",
        ),
        pytest.param(
            """
            for name, value in items.items():
                while value > 0:
                    with lock, open(p) as f:
                        raise ValueError("x")
            """,
            [
                ("for", "name, value in items.items()", False),
                ("while", "value > 0", False),
                ("with", "lock, open(p) as f", False),
            ],
            id="for while with",
        ),
        pytest.param(
            """
            try:
                pass
            except (KeyError, IndexError) as e:
                raise ValueError("x") from e
            """,
            [("except", "(KeyError, IndexError)", False)],
            id="except",
        ),
        pytest.param(
            """
            try:
                raise ValueError("x")
            finally:
                pass
            """,
            [("try", "", False)],
            id="try body",
        ),
        pytest.param(
            """
            try:
                pass
            finally:
                raise ValueError("x")
            """,
            [("finally", "", False)],
            id="finally",
        ),
        pytest.param(
            """
            match cmd:
                case "a":
                    pass
                case Point(x=0) if y:
                    raise ValueError("x")
            """,
            [("match-case", 'cmd case "a"', True), ("match-case", "cmd case Point(x=0) if y", False)],
            id="match-case negates earlier cases",
        ),
    ],
)
def test_condition_chain(source: str, expected: list[tuple[str, str, bool]]) -> None:
    """The enclosing conditions are listed outermost first, with earlier branches negated."""
    (site,) = sites(source)
    assert conditions(site) == expected


def test_condition_lines_point_at_their_keywords() -> None:
    (site,) = sites(
        """
        if a:
            pass
        elif b:
            pass
        else:
            raise ValueError("x")
        """
    )
    assert [c.line for c in site.extraction.conditions] == [2, 4, 6]


@pytest.mark.parametrize(
    ("source", "function"),
    [
        pytest.param('raise ValueError("x")\n', "<module>", id="module"),
        pytest.param(
            """
            class SchedulerConfig:
                def verify_max_model_len(self):
                    raise ValueError("x")
            """,
            "SchedulerConfig.verify_max_model_len",
            id="method",
        ),
        pytest.param(
            """
            class Outer:
                def method(self):
                    async def inner():
                        raise ValueError("x")
            """,
            "Outer.method.<locals>.inner",
            id="nested function",
        ),
    ],
)
def test_enclosing_function_is_the_qualified_name(source: str, function: str) -> None:
    (site,) = sites(source)
    assert site.extraction.function == function


def test_conditions_stop_at_the_function_boundary() -> None:
    (site,) = sites(
        """
        if TYPE_CHECKING:
            def f():
                raise ValueError("x")
        """
    )
    assert conditions(site) == []


def test_which_raises_are_sites() -> None:
    """Calls, bare classes and dotted names are sites; re-raises and other classes are not."""
    found = sites(
        """
        raise ValueError("call")
        raise ValueError
        raise builtins.ValueError("dotted") from None
        raise TypeError("other class")
        try:
            pass
        except ValueError as err:
            raise
        except Exception as err:
            raise err
        """
    )
    assert [(s.lineNumber, s.errorMessage, s.extraction.cause) for s in found] == [
        (2, "call", None),
        (3, "", None),
        (4, "dotted", "None"),
    ]


def test_every_class_with_star_and_named_skips() -> None:
    result = scan(
        textwrap.dedent(
            """
            raise TypeError("a")
            raise NotImplementedError
            raise errors[0]("b")
            raise exc_value
            raise type(err)(f"Error in model execution: {err}")
            raise errors[0]
            """
        ).encode(),
        options=ScanOptions(exceptions=("*",)),
    )
    assert isinstance(result, Scanned)
    # (a class computed at run time is a record all the same, its class the expression: matched by its text)
    assert [(s.errorClass, s.errorMessage) for s in result.sites] == [
        ("TypeError", "a"),
        ("NotImplementedError", ""),
        ("errors[0]", "b"),
        ("type(err)", "Error in model execution: {err}"),
    ]
    assert [(s.line, s.reason) for s in result.skipped] == [
        (5, "raises the value of a variable, not a class: exc_value"),
        (7, "raises an expression, not a class: errors[0]"),
    ]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        pytest.param(
            """
            def f(x):
                msg = f"bad {x}."
                msg += " Try again."
                raise ValueError(msg)
            """,
            "bad {x}. Try again.",
            id="assigned then augmented before the raise",
        ),
        pytest.param(
            """
            def f(x):
                msg = "outer"
                if x:
                    raise ValueError(msg)
            """,
            "outer",
            id="assignment in an enclosing block",
        ),
        pytest.param(
            """
            def f(x):
                msg = "a"
                if x:
                    msg = "b"
                raise ValueError(msg)
            """,
            "{msg}",
            id="reassigned on one path only",
        ),
        pytest.param(
            """
            def f(msg):
                raise ValueError(msg)
            """,
            "{msg}",
            id="parameter",
        ),
        pytest.param(
            """
            def f(x):
                msg = "a"
                for i in x:
                    if i:
                        raise ValueError(msg)
                    msg = "b"
            """,
            "{msg}",
            id="loop may rebind before the raise",
        ),
        pytest.param(
            """
            def f(x):
                if x:
                    msg = "a"
                else:
                    msg = "b"
                    raise ValueError(msg)
            """,
            "b",
            id="the branch taken",
        ),
    ],
)
def test_variable_messages_resolve_only_when_certain(source: str, message: str) -> None:
    (site,) = sites(source)
    assert site.errorMessage == message
    assert site.extraction.messageKind.value == "variable"


def test_positions_window_and_column() -> None:
    source = "".join(f"x{i} = {i}\n" for i in range(1, 30)) + "if a:\n    raise ValueError('é')\n"
    (site,) = sites(source, context=3)
    assert (site.lineNumber, site.extraction.column, site.extraction.endLineNumber) == (31, 4, 31)
    assert (site.sourceCodeStart, site.sourceCodeEnd) == (28, 31)
    assert site.sourceCode == "x28 = 28\nx29 = 29\nif a:\n    raise ValueError('é')"


def test_column_counts_characters_not_bytes() -> None:
    (site,) = sites("é = 1; raise ValueError('x')\n")
    assert site.extraction.column == 7


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(
            b"def f(:\n    raise ValueError('x')\n", "syntax error: invalid syntax (line 1)", id="syntax error"
        ),
        pytest.param(b"print 'x'\nraise ValueError, 'x'\n", "syntax error:", id="python 2"),
        pytest.param(b"raise ValueError('\xff')\n", "cannot decode:", id="not utf-8"),
    ],
)
def test_unparseable_files_are_skipped_with_a_reason(data: bytes, reason: str) -> None:
    result = scan(data, options=ScanOptions())
    assert isinstance(result, Skipped) and result.reason.startswith(reason)


def test_pep263_coding_line_is_honoured() -> None:
    data = "# -*- coding: latin-1 -*-\nraise ValueError('caf\xe9')\n".encode("latin-1")
    result = scan(data, options=ScanOptions())
    assert isinstance(result, Scanned) and result.sites[0].errorMessage == "café"


def test_bom_is_not_part_of_the_text() -> None:
    result = scan(b"\xef\xbb\xbfraise ValueError('x')\n", options=ScanOptions())
    assert isinstance(result, Scanned) and result.sites[0].extraction.column == 0


def test_prefilter_rules_out_only_files_without_a_possible_site() -> None:
    options = ScanOptions()
    assert could_hold(b"raise ValueError('x')", options)
    assert not could_hold(b"raise TypeError('x')", options)
    assert not could_hold(b"x = ValueError", options)
    assert could_hold(b"raise TypeError('x')", ScanOptions(exceptions=("*",)))


@given(st.lists(st.sampled_from(["", "x = 1", "raise E", "  raise E; raise F", "# raise", "\r", "raise"]), max_size=30))
def test_lines_with_raise_counts_lines_as_the_file_is_split(parts: list[str]) -> None:
    from extractor.scanning.source import lines_with_raise, split_lines

    for separator in ("\n", "\r\n", "\r"):
        source = separator.join(parts)
        lines = split_lines(source)
        expected = [number for number, line in enumerate(lines, start=1) if "raise" in line]
        assert lines_with_raise(source, lines) == expected


def test_a_message_no_utf8_can_carry_is_a_named_skip() -> None:
    result = scan(b'raise ValueError("\\ud800 is half a pair")\nraise ValueError("fine")\n', options=ScanOptions())
    assert isinstance(result, Scanned)
    assert [site.errorMessage for site in result.sites] == ["fine"]
    assert [(skip.line, "lone surrogate" in skip.reason) for skip in result.skipped] == [(1, True)]


def test_an_old_site_that_is_not_what_this_code_wrote_lends_no_template() -> None:
    from extractor.model.records import FileResult
    from extractor.scanning.scan import _scan, scan_blob

    data = b'class C:\n    size: int = 1\n\n    def f(self):\n        raise ValueError("bad")\n'
    options = ScanOptions()
    full = scan_blob(data, options=options, facts=True)
    previous = orjson.loads(full.model_dump_json())
    del previous["sites"][0]["errorMessage"]
    again = _scan(data, options, previous, facts=True)  # a typed result, as the cache will store it
    assert FileResult.model_validate_json(orjson.dumps(again)) == full


WIDE = "\uff2d\uff33\uff27"  # MSG in fullwidth letters


@pytest.mark.parametrize(
    ("module", "message"),
    [
        pytest.param('MSG = "from the module."\n', "from the module.", id="a module constant"),
        pytest.param('MSG: str = "annotated."\n', "annotated.", id="annotated"),
        pytest.param('MSG = "a."\nMSG = "b."\n', "{MSG}", id="bound twice"),
        pytest.param('MSG = "a."\nfor MSG in x:\n    pass\n', "{MSG}", id="rebound by a loop"),
        pytest.param('MSG = "a."\nfrom m import MSG\n', "{MSG}", id="rebound by an import"),
        pytest.param('MSG = "a."\n\ndef g():\n    global MSG\n    MSG = "b."\n', "{MSG}", id="declared global"),
        pytest.param('MSG = "a."\n\n@(MSG := d)\ndef g():\n    pass\n', "{MSG}", id="rebound in a decorator"),
        pytest.param(
            'MSG = "a."\n\nclass K:\n    def g(self):\n        try:\n            pass\n        except E:\n'
            "            with c:\n                while x:\n                    pass\n                else:\n"
            "                    global MSG\n",
            "{MSG}",
            id="declared global deep in a method",
        ),
        pytest.param(
            'MSG = "a."\n\ndef g(v):\n    match v:\n        case 1:\n            pass\n        case _:\n'
            "            try:\n                pass\n            finally:\n                global MSG\n",
            "{MSG}",
            id="declared global in a match case",
        ),
        pytest.param('MSG = "a."\n\ndef g(x=(MSG := 1)):\n    pass\n', "{MSG}", id="rebound in a default"),
        pytest.param('MSG = "a."\n\nclass C((MSG := B)):\n    pass\n', "{MSG}", id="rebound in a base"),
        pytest.param('MSG = "a."\ng = lambda x=(MSG := 1): x\n', "{MSG}", id="rebound in a lambda default"),
        pytest.param('MSG = "a."\n\ndef g():\n    MSG = "b."\n', "a.", id="a local of another function"),
        # Identifiers are read NFKC-normalized: the fullwidth letters spell MSG.
        pytest.param(f'{WIDE} = "fullwidth."\n', "fullwidth.", id="spelled in fullwidth"),
        pytest.param(f'MSG = "a."\n{WIDE} = "b."\n', "{MSG}", id="rebound in fullwidth"),
        pytest.param(f'MSG = "a."\n\ndef g():\n    global {WIDE}\n', "{MSG}", id="declared global in fullwidth"),
    ],
)
def test_a_global_message_resolves_to_the_module_constant_bound_once(module: str, message: str) -> None:
    """A message naming a global takes the string literal the module binds it to, once, and declares
    `global` nowhere; any other binding of the name, however spelled, leaves a placeholder."""
    found = scan((module + "\n\ndef f():\n    raise ValueError(MSG)\n").encode(), options=ScanOptions())
    (site,) = found.sites  # type: ignore[union-attr]
    assert (site.errorMessage, site.extraction.messageKind.value) == (message, "variable")


@pytest.mark.parametrize(
    ("module", "raised", "message"),
    [
        pytest.param("class E(KeyError):\n    pass\n", 'E("k")', "'k'", id="a KeyError prints its repr"),
        pytest.param(
            'class B(KeyError):\n    """Doc."""\n    code = 3\nclass C(B):\n    pass\n',
            'C("k")',
            "'k'",
            id="through a class of its own",
        ),
        pytest.param("class Gone(FileNotFoundError):\n    pass\n", 'Gone(2, "gone")', "[Errno 2] gone", id="OSError"),
        pytest.param(
            "class Many(ExceptionGroup):\n    pass\n",
            'Many("several", errors)',
            "several ({len(errors)} sub-exceptions)",
            id="ExceptionGroup",
        ),
        pytest.param("class KeyError(Exception):\n    pass\n", 'KeyError("k")', "k", id="a builtin's name taken"),
        pytest.param(
            "class E(KeyError):\n    def __str__(self):\n        return 'x'\n", 'E("k")', "k", id="own __str__"
        ),
        pytest.param(
            "class E(KeyError):\n    def __init__(self, key):\n        super().__init__(f'no {key}')\n",
            'E("k")',
            "k",
            id="own __init__",
        ),
        pytest.param("class E(KeyError):\n    __str__ = Exception.__str__\n", 'E("k")', "k", id="__str__ assigned"),
        pytest.param("class E(KeyError):\n    pass\nE = ValueError\n", 'E("k")', "k", id="the name bound again"),
        pytest.param("class E(Mixin, KeyError):\n    pass\n", 'E("k")', "k", id="two bases: not followed"),
        pytest.param("class E(errors.KeyError):\n    pass\n", 'E("k")', "k", id="a dotted base: unknown"),
        pytest.param("class E(F):\n    pass\nclass F(E):\n    pass\n", 'E("k")', "k", id="a cycle"),
    ],
)
def test_a_class_of_the_module_prints_as_the_builtin_it_derives_from(module: str, raised: str, message: str) -> None:
    """A module's own exception class prints what the builtin it derives from prints (KeyError's repr,
    OSError's errno) unless something could change that: its own `__str__` or `__init__`, another binding of
    its name, several or unknown bases. A class named like a builtin is the module's own."""
    found = scan(f"{module}\n\ndef f(errors):\n    raise {raised}\n".encode(), options=ScanOptions(("*",)))
    (site,) = found.sites  # type: ignore[union-attr]
    assert site.errorMessage == message


@pytest.mark.parametrize(
    "call",
    [
        pytest.param('", ".join(errors)', id="on one line"),
        pytest.param('(\n        ", "\n        .join(errors)\n    )', id="join on a later line of the raise"),
        pytest.param('", ".join(  # the items\n        errors)', id="with a comment inside"),
    ],
)
def test_a_known_list_joined_into_the_message_gives_its_items(call: str) -> None:
    source = f'def f():\n    errors = ["a", "b"]\n    raise ValueError({call})\n'
    (site,) = scan(source.encode(), options=ScanOptions()).sites  # type: ignore[union-attr]
    assert site.errorMessage == "a, b"
