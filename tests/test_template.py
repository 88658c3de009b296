"""Message templates: every message shape becomes `{placeholder}` notation and a pattern that matches."""

from __future__ import annotations

import ast
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import assume, example, given, settings

from extractor.model.records import MessageKind
from extractor.scanning.template.message import message_template


@pytest.mark.parametrize(
    ("args", "message", "kind"),
    [
        pytest.param(['"plain text."'], "plain text.", MessageKind.LITERAL, id="literal"),
        pytest.param(
            ['("a "\n  "b"  # why\n  "c")'], "a bc", MessageKind.LITERAL, id="implicit concat in extra parens"
        ),
        pytest.param(
            ['"VllmConfig lacks slots." f" Got {max_num_batched_tokens=} and {scheduled_token_delta=}."'],
            "VllmConfig lacks slots. Got {max_num_batched_tokens=} and {scheduled_token_delta=}.",
            MessageKind.FSTRING,
            id="debug placeholders kept verbatim",
        ),
        pytest.param(['f"{x = }"'], "{x = }", MessageKind.FSTRING, id="debug placeholder keeps its spacing"),
        pytest.param(
            ['f"{a!r} {b:>5} {c!s:{w}}"'], "{a!r} {b:>5} {c!s:{w}}", MessageKind.FSTRING, id="conversion and spec"
        ),
        pytest.param(['f"{{literal}} {x}"'], "{literal} {x}", MessageKind.FSTRING, id="doubled braces render single"),
        pytest.param(
            ['"tab\\there \\N{EM DASH} \\x41"'], "tab\there \u2014 A", MessageKind.LITERAL, id="escapes as printed"
        ),
        pytest.param(['r"raw\\d+"'], "raw\\d+", MessageKind.LITERAL, id="raw string"),
        pytest.param(['rf"\\d{n}"'], "\\d{n}", MessageKind.FSTRING, id="raw f-string"),
        pytest.param(['"a " + str(n) + " b"'], "a {str(n)} b", MessageKind.CONCAT, id="plus concatenation"),
        pytest.param(
            ['"%s is %r, %d%% %.2f" % (a, b.c, n, f)'],
            "{a} is {b.c!r}, {n:d}% {f:.2f}",
            MessageKind.PERCENT,
            id="percent tuple",
        ),
        pytest.param(['"only %s" % name'], "only {name}", MessageKind.PERCENT, id="percent single"),
        pytest.param(['"%(k)s!" % {"k": v}'], "{v}!", MessageKind.PERCENT, id="percent mapping"),
        pytest.param(
            ['"{} and {name!r:>3} {0.x}".format(a, name=b)'],
            "{a} and {b!r:>3} {a.x}",
            MessageKind.FORMAT,
            id="str.format",
        ),
        pytest.param(
            ['"expecting {0} but got {1.name}".format(*args)'],
            "expecting {args[0]} but got {args[1].name}",
            MessageKind.FORMAT,
            id="str.format of an unpacked iterable",
        ),
        pytest.param(['"{} in {}".format(a, *(b, c))'], "{a} in {(b, c)[0]}", MessageKind.FORMAT, id="after others"),
        pytest.param(['"{0} {1}".format(*a, b)'], "{0} {1}", MessageKind.FORMAT, id="unpacked, then more: unknown"),
        pytest.param(
            ['"{name} of {kind}".format(kind=k, **dict(opts, x=1))'],
            "{dict(opts, x=1)['name']} of {k}",
            MessageKind.FORMAT,
            id="str.format of an unpacked mapping",
        ),
        pytest.param(['"{name}".format(**a, **b)'], "{name}", MessageKind.FORMAT, id="two mappings: unknown"),
        pytest.param(["compute_message(x)"], "{compute_message(x)}", MessageKind.DYNAMIC, id="call is one placeholder"),
        pytest.param([], "", MessageKind.EMPTY, id="no argument"),
    ],
)
def test_message_shapes(args: list[str], message: str, kind: MessageKind) -> None:
    """Each way of writing a message becomes the same template notation."""
    template = message_template(args)
    assert (template.message, template.kind) == (message, kind)


def test_placeholders_record_expression_conversion_spec_debug_and_offsets() -> None:
    template = message_template(['f"Got {x=} and {y!r:>5}."'])
    assert [dataclasses.asdict(p) for p in template.placeholders] == [
        {"expression": "x", "conversion": None, "formatSpec": None, "debug": True, "start": 4, "end": 8, "group": "p0"},
        {
            "expression": "y",
            "conversion": "r",
            "formatSpec": ">5",
            "debug": False,
            "start": 13,
            "end": 21,
            "group": "p1",
        },
    ]
    assert template.message[4:8] == "{x=}" and template.message[13:21] == "{y!r:>5}"


def test_literal_without_metacharacters_is_its_own_pattern() -> None:
    text = "Currently, async scheduling is only supported with EAGLE/MTP kind of decoding"
    assert message_template([repr(text)]).pattern == text


@pytest.mark.parametrize(
    ("source", "values", "groups"),
    [
        pytest.param('f"Got {a=} and {b=}."', {"a": 256, "b": 512}, ["256", "512"], id="debug"),
        pytest.param('f"x ({self_x}) < y ({y}). Fix (a|b)?"', {"self_x": 1, "y": 2}, ["1", "2"], id="metachars"),
        pytest.param('"%s has %d items" % (name, n)', {"name": "cfg", "n": 3}, ["cfg", "3"], id="percent"),
        pytest.param('"{}: {!r}".format(k, v)', {"k": "key", "v": "va\nl"}, ["key", "'va\\nl'"], id="format"),
        pytest.param('"pre " + str(v) + " post"', {"v": [1, 2]}, ["[1, 2]"], id="concat"),
        pytest.param('f"{x = }"', {"x": "s"}, ["'s'"], id="spaced debug"),
    ],
)
def test_pattern_fullmatches_the_rendering_and_captures_values(
    source: str, values: dict[str, object], groups: list[str]
) -> None:
    """The pattern accepts what Python really prints, and its groups give back the values."""
    rendered = str(eval(source, {"str": str}, dict(values)))
    template = message_template([source])
    match = re.fullmatch(template.pattern, rendered, re.S)
    assert match is not None, (template.pattern, rendered)
    assert list(match.groups()) == groups


def test_several_arguments_render_as_the_tuple_python_prints() -> None:
    template = message_template(['"method %s is deprecated"', "self.quantization"])
    assert template.message == "('method %s is deprecated', {self.quantization!r})"
    assert template.warnings == ("args-not-formatted",)
    rendered = str(ValueError("method %s is deprecated", "fp8"))
    match = re.fullmatch(template.pattern, rendered, re.S)
    assert match is not None and match.group(1) == "'fp8'"


def test_variable_template_joins_assignment_and_augmented_pieces() -> None:
    template = message_template(variable="msg", pieces=['f"bad {x}."', '" Try again."'])
    assert (template.message, template.kind) == ("bad {x}. Try again.", MessageKind.VARIABLE)


def test_unresolved_variable_is_one_placeholder() -> None:
    template = message_template(variable="msg")
    assert (template.message, template.pattern, template.kind) == ("{msg}", "(?P<p0>.*?)", MessageKind.VARIABLE)


@pytest.mark.parametrize(
    "source",
    [
        '"plain text."',
        '""',
        "'single quotes, \"inner\" ones'",
        'r"raw without escapes"',
        'u"old unicode prefix"',
        'R"upper raw" U"upper unicode"',
        '"""triple\nquoted\n  across lines"""',
        '("a "\n  "b"  # why\n  "c")',
        '"braces {{kept}} {x} and {} as written"',
        '"regex specials .*+?()[]|^$ stay literal"',
        '"non-ASCII: größer als ≥ 1 → 🙂"',
        '"""carriage\r\nreturns\rend lines too"""',  # (lines are split there: Python reads a newline)
        # Escapes are read by libcst as before (the quick reading leaves them).
        '"tab\\there, newline\\n, \\u00e9, \\N{BULLET}, \\x41, \\101, and \\d kept"',
        'r"raw \\d+ keeps its backslash"',
    ],
)
@pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")  # `\d`, parsed as written
def test_a_plain_literal_message_is_the_template_libcst_would_read(source: str) -> None:
    """The commonest message, one plain string literal, is mostly read without libcst: the template
    (message, pattern, kind, no placeholder) is the one libcst's reading gives, whatever the quotes,
    prefixes, lines, braces or characters (escapes, triple quotes and comments still go to libcst)."""
    from extractor.scanning.scan import scan
    from extractor.scanning.source import ScanOptions

    read = source.replace("\r\n", "\n").replace("\r", "\n")  # as the scanner's lines give it
    expected = message_template([read], error_class="ValueError")
    found = scan(f"def f():\n    raise ValueError({source})\n".encode(), options=ScanOptions())
    (site,) = found.sites  # type: ignore[union-attr]
    got = (site.errorMessage, site.messagePattern, site.extraction.messageKind, site.extraction.placeholders)
    assert got == (expected.message, expected.pattern, MessageKind.LITERAL, [])
    assert re.fullmatch(expected.pattern, ast.literal_eval(read))  # the literal's own value, rendered


_PREFIXES = ["", "u", "f", "F", "r", "b", "rf", "Fr"]
_TEXTS = ["a", " ", "Got", "{{", "}}", "é", "🙂", "\\n", "%s", "'", '"', "#", "\\N{BULLET}", "\\x41", "\\\\", "\\'"]
_FIELDS = [
    "{x}", "{a.b}", "{x!r}", "{self.c!s}", "{x:>5}", "{f(x)}", "{x = }", "{x[0]}", "{ x }", "{x!a}", "{x=}",
    "{x=!r}", "{x=:>4}", "{f(x, y=1)}", "{d['k']}", "{sorted({1, y})}", "{ {1: 2}[k] }", "{a if b else c}",
    "{x:{w}}", "{x!r:>{w}}", "{x==y}", "{x!=y}", "{x < y}", "{(x)}", "{x:%Y-%m}", "{','.join(xs)}", "{x:}",
    "{f'{y}'}", "{x,}", "{(y:=1)}", "{g()[1:2]}", "{len(s)!r:^{w}.{p}}",
]  # fmt: skip
# Messages that are not literals: names, calls, displays, operations, ...
_SOURCES = [
    "x", "self.name", "a . b", "(x)", "None", "f(x)", "[x]", "x[1:]", "a < b", "a or 'b'", "not x", "-1", "0x1F",
    "b'x'", "(a, b)", "(a)", "{k: v}", "{x}", "[i for i in y]", "lambda: 1", "str(e)", "type(x).__name__",
    "_('a')", "gettext('a %s') % x", "', '.join(xs)", "'{}'.format(x)", "a * 2", "'a' * 2", "a + b", "x if y else z",
    "name.lower()", "(x)(y)", "f(\n    x,  # why\n)",
]  # fmt: skip


@st.composite
def _literals(draw: st.DrawFn) -> str:
    """Source of a message made of one or more string literals: plain, f, raw or bytes, either quote,
    text with braces, escapes, quotes and fields of many shapes, blanks (or nothing) between; or an
    expression that is no literal."""
    if draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(_SOURCES))
    tokens = []
    for _ in range(draw(st.integers(1, 3))):
        prefix, quote = draw(st.sampled_from(_PREFIXES)), draw(st.sampled_from(['"', "'"]))
        pieces = draw(st.lists(st.sampled_from(_TEXTS + (_FIELDS if "f" in prefix.lower() else [])), max_size=6))
        tokens.append(prefix + quote + "".join(pieces) + quote)
    gaps = draw(
        st.lists(st.sampled_from([" ", "", "\n    ", "  # why\n  "]), min_size=len(tokens), max_size=len(tokens))
    )
    return "".join(gap + token for gap, token in zip(["", *gaps], tokens, strict=False))


# The operands of the operations drawn below: literals the quick reading reads and expressions that are no
# text, and (drawn less often) shapes it leaves to libcst: `%`, `.format`, `.join`, a translation, a comment,
# a display whose parentheses are its own in Python's tree, a literal it does not read.
_OPERANDS = [
    '"a"', "'b c'", '"x" "y"', 'f"{x}"', 'f"v={v!r:>4}"', '"{braces}"', 'u"é 🙂"', 'r"\\d"', '"\\n"', '"%s"', "''",
    "f'{a}' 'b'", 'b"x"', "x", "self.name", "f(x)", "str(e)", "x[0]", "[x]", "lambda: 1", "{k: v}", "a < b",
    "not x", "-1", "None", "(x)", "(y := 1)", "x.y()", "(\n    x\n)", "x * 2", "'a' * 2",
]  # fmt: skip
_LEFT_TO_LIBCST = [
    'f"{x:{w}}"', '"""triple"""', "(a, b)", "(i for i in y)", "_('a')", "', '.join(xs)", "'{}'.format(x)",
    "'a %s' % x", "f(\n    x,  # why\n)",
]  # fmt: skip
_OPENING = ["(", "( ", "(\n    "]
_CLOSING = [")", " )", "\n)"]
_PLUS = ["+", " + ", "\n    + ", " +\n    "]
_TESTS = ["c", "x.y", "n > 1", "not xs"]


@st.composite
def _operations(draw: st.DrawFn, depth: int = 0) -> str:
    """Source of a message built of `A + B` and `A if c else B` (nested, each side in parentheses or not,
    with blanks and lines around them) over _OPERANDS and _LEFT_TO_LIBCST."""
    shape = draw(st.integers(0, 2)) if depth < 2 else 0
    if shape == 0:
        return draw(st.sampled_from(_OPERANDS if draw(st.integers(0, 7)) else _LEFT_TO_LIBCST))

    def side() -> str:
        inner = draw(_operations(depth + 1))
        if draw(st.integers(0, 3)) == 0:
            return draw(st.sampled_from(_OPENING)) + inner + draw(st.sampled_from(_CLOSING))
        return inner

    if shape == 1:
        return side() + draw(st.sampled_from(_PLUS)) + side()
    return f"{side()} if {draw(st.sampled_from(_TESTS))} else {side()}"


@settings(max_examples=300, deadline=None)
@given(st.lists(_literals(), min_size=1, max_size=2), st.sampled_from(["ValueError", "KeyError", "OSError"]))
@example(['b""#"'], "ValueError")  # a comment ends the text: libcst's code for the expression leaves it out
@pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")
def test_messages_read_without_libcst_are_read_as_libcst_reads_them(sources: list[str], error_class: str) -> None:
    """The commonest messages (plain and f-string literals with fields that hold no nested field or
    backslash; names, calls, displays and other expressions that are not text) skip libcst; whatever the
    literals, the arguments and the class, the template is the one libcst's reading gives."""
    _read_as_libcst_reads(sources, error_class)


def _read_as_libcst_reads(sources: list[str], error_class: str) -> None:
    """The template of a raise of these arguments (each valid Python) is the one libcst alone reads."""
    from extractor.scanning.template import cst, quick

    try:
        for source in sources:
            ast.parse(f"({source}\n)", mode="eval")
    except SyntaxError:
        assume(False)
    read_quickly = message_template(sources, error_class=error_class)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(quick, "literals", lambda source, joins: None)
        patch.setattr(quick, "not_text", lambda source: None)
        patch.setattr(quick, "operation", lambda reading, source: None)
        patch.setattr(cst, "bare", lambda source: None)  # (`cst.flatten`'s shortcut)
        assert read_quickly == message_template(sources, error_class=error_class)


@settings(max_examples=150, deadline=None)
@given(st.lists(_operations(), min_size=1, max_size=2), st.sampled_from(["ValueError", "KeyError", "OSError"]))
@example(['"a" + (\n    f", b {c}"\n    if c\n    else ""\n)'], "ValueError")  # (vLLM 0.28.0's engine start)
@example(["(a, b) + 'c'"], "ValueError")  # a tuple's parentheses are its own in Python's tree, not libcst's
@example(["x + 'é' + (y if c else 'ü')"], "KeyError")  # (columns count UTF-8 bytes in Python's tree)
def test_operations_read_without_libcst_are_read_as_libcst_reads_them(sources: list[str], error_class: str) -> None:
    """`A + B` with text on either side and `A if c else B` are read from Python's tree, their operands
    as the quick reading or libcst would read them alone: whatever the nesting, parentheses, lines and
    operands, the template is the one libcst's reading gives (or libcst reads it, for the shapes left
    to it)."""
    _read_as_libcst_reads(sources, error_class)


def test_libcst_is_imported_only_for_a_message_the_quick_reading_leaves(tmp_path: Path) -> None:
    """The quick reading (literals, expressions that are no text, `+` and conditionals of them) spares a
    process libcst's import, and whatever libcst reads first, it is there."""
    script = """
import sys
import extractor.scanning.template as template
from extractor.scanning.template.message import message_template

message_template(['f"{x!r} is {sorted(y)}"'], error_class="ValueError")
message_template(['"no such key"', "name"], error_class="KeyError")
message_template(['"a: " + str(b) + (\\n    f", c {c}"\\n    if c\\n    else "."\\n)'], error_class="ValueError")
message_template(['"é" + b if c else "no " + d'], error_class="KeyError")
assert "libcst" not in sys.modules and not hasattr(template, "cst")
for first in (['"a %s" % x'], ['"{}".format(b)'], ['x.y()']):
    for name in [n for n in sys.modules if n == "libcst" or n.startswith("libcst.")]:
        del sys.modules[name]
    sys.modules.pop("extractor.scanning.template.cst", None)  # as in a fresh process
    template.__dict__.pop("cst", None)
    print(message_template(first, error_class="ValueError").message)
"""
    found = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert found.stdout.split("\n") == ["a {x}", "{b}", "{x.y()}", ""]
