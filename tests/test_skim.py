"""Skimming a file (its defs that raise nothing stood in for by `pass`) gives exactly what a full parse gives."""

from __future__ import annotations

import ast
import textwrap

import hypothesis.strategies as st
import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from extractor.scanning import pieces
from extractor.scanning.scan import _scan_text
from extractor.scanning.source import ScanOptions, split_lines

EVERY = ScanOptions(exceptions=("*",), context=2)
VALUE_ERRORS = ScanOptions(context=2)

BASE = '''\
import os

LIMIT = 3


@decorator(
    "argument",
)
def helper(value):
    """Help.

    At some length.
    """
    return value * 2


def check(n):
    if n > LIMIT:
        raise ValueError(f"n ({n}) is above {LIMIT}")


class Config:
    size: int = 1
    """The size."""

    def __init__(
        self,
        size: int,
    ) -> None:
        self.size = size
        self.other = [
            1,
            2,
        ]

    def verify(self):
        if self.size < 0:
            raise ValueError(f"size ({self.size}) must be >= 0")

    @property
    def double(self):
        value = self.size
        # a comment
        return value * 2


async def later():
    await something()
    other = 2
    return other
    # trailing comment
'''


def both(source: str, options: ScanOptions = EVERY, *, facts: bool = False) -> tuple[bytes, bytes, bool]:
    """The whole parse's result and the skim's, serialized, and whether the skim stood in for anything
    (`facts`: a config or CLI file's, its classes and flags read too)."""
    text = textwrap.dedent(source)
    lines = split_lines(text)
    whole = orjson.dumps(_scan_text(text, lines, options, facts=facts, whole=True))
    skimmed = orjson.dumps(_scan_text(text, lines, options, facts=facts))
    return whole, skimmed, pieces.skim(lines, options, facts=facts) is not None


CONFIG = '''\
from dataclasses import dataclass, field


@dataclass
class CacheConfig(Base):
    block_size: int = field(default=16, metadata={"doc": 1})
    """Size of a cache block."""
    swap_space: float = 4
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)

    def __post_init__(self) -> None:
        self.swap_bytes = int(
            self.swap_space * 2**30
        )
        self.ready = True

    def compute_hash(self) -> str:
        factors = [self.block_size]
        hashed = str(factors)
        return hashed

    def verify(self) -> None:
        if self.gpu_memory_utilization > 1:
            raise ValueError(f"gpu_memory_utilization ({self.gpu_memory_utilization}) is above 1")


def helper(value):
    total = value
    total += 1
    return total
'''


def test_a_config_file_is_skimmed_with_its_facts_read_as_a_full_parse_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its classes' fields, defaults, constraints and docs, and what `__post_init__` sets, come out the same
    from the skim, which stands in for the defs that raise nothing but `__post_init__`."""
    lines = split_lines(CONFIG)
    spans = pieces._raise_free_defs(lines)
    assert [first for first, _, _ in spans] == [11, 17, 27]  # __post_init__, compute_hash, helper
    for options in (EVERY, VALUE_ERRORS):
        whole, skimmed, used = both(CONFIG, options, facts=True)
        assert used and skimmed == whole
    result = orjson.loads(whole)
    (config,) = result["classes"]
    assert [f["name"] for f in config["fields"]] == ["block_size", "swap_space", "gpu_memory_utilization"]
    assert config["fields"][0]["doc"] == "Size of a cache block." and config["postInit"] == ["ready", "swap_bytes"]
    # The skim parsed neither compute_hash nor helper: their bodies are not in what it parsed.
    parsed: list[str] = []
    real = pieces.visit
    monkeypatch.setattr(pieces, "visit", lambda source, *args: parsed.append(source) or real(source, *args))
    pieces.skim(lines, EVERY, facts=True)
    monkeypatch.undo()
    assert len(parsed) == 1 and "swap_bytes" in parsed[0]
    assert "hashed" not in parsed[0] and "total += 1" not in parsed[0]


def test_a_file_that_may_define_cli_flags_is_parsed_whole_for_its_facts() -> None:
    """Flags are read from `add_argument` calls in any def: such a file is not skimmed for its facts."""
    source = CONFIG + textwrap.dedent("""
        def add_cli_args(parser):
            kwargs = get_kwargs(CacheConfig)
            parser.add_argument("--block-size", **kwargs["block_size"])
            return parser
    """)
    lines = split_lines(source)
    assert pieces.skim(lines, EVERY) is not None and pieces.skim(lines, EVERY, facts=True) is None
    whole = orjson.loads(orjson.dumps(_scan_text(source, lines, EVERY, facts=True)))
    assert whole["flags"]["flags"] == [["CacheConfig", "block_size", ["--block-size"], False]]


def test_the_defs_that_raise_nothing_are_skimmed_and_the_result_is_the_same() -> None:
    text = textwrap.dedent(BASE)
    spans = pieces._raise_free_defs(split_lines(text))
    # helper (decorated over three lines), Config.__init__ (its head over lines), double, later.
    assert [(first, last, member) for first, last, member in spans] == [
        (6, 14, False),
        (26, 34, True),
        (40, 44, True),
        (47, 50, False),
    ]
    for options in (EVERY, VALUE_ERRORS):
        whole, skimmed, used = both(BASE, options)
        assert used and skimmed == whole
    assert b'"pieces":[]' not in whole


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            BASE.replace('    """Help.', '    """Help.\ndef inside_a_docstring():\n    x = 1\n    y = 2'),
            id="a def at column 0 inside a docstring",
        ),
        pytest.param(
            BASE.replace("LIMIT = 3", 'TEXT = """\ndef fake():\n    a = 1\n    b = 2\n    c = 3\n"""'),
            id="a def inside a module string",
        ),
        pytest.param(
            BASE.replace("    return value * 2", '    text = """\nat column 0\n"""\n    return text'),
            id="a string's line at column 0 inside a def",
        ),
        pytest.param(
            BASE.replace("    return value * 2", "    return foo(\n1, 2)"),
            id="a bracket's line at column 0 inside a def",
        ),
        pytest.param(
            BASE.replace("    return value * 2", "    return foo(\n1, 2)(\n3)"), id="brackets reopened at column 0"
        ),
        pytest.param(
            BASE.replace("    return value * 2", "    return value * \\\n2"), id="a backslash continued at column 0"
        ),
        pytest.param(
            BASE.replace("    return value * 2", "    return 'a\\\nb'"), id="a string continued with a backslash"
        ),
        pytest.param(BASE.replace("    return value * 2", "    return 1  # \\"), id="a comment ending in a backslash"),
        pytest.param(
            BASE.replace("    value = self.size", "    value = self.size\n# column 0 comment\n"),
            id="a comment at column 0 inside a method",
        ),
        pytest.param(
            BASE.replace(
                "class Config:", "if TYPE_CHECKING:\n    def hidden():\n        a = 1\n        b = 2\n\n\nclass Config:"
            ),
            id="defs at column 4 in an if block",
        ),
        pytest.param(
            BASE.replace(
                "def check(n):",
                "def outer():\n    def inner():\n        a = 1\n        return a\n    return inner\n\n\ndef check(n):",
            ),
            id="a def nested in a def at column 4",
        ),
        pytest.param(
            BASE.replace("    size: int = 1", "  size: int = 1").replace('    """The size."""', '  """The size."""'),
            id="a class body not at column 4",
        ),
        pytest.param(BASE.replace("LIMIT = 3", "msg = 'module'\nraise ValueError(msg)"), id="a module-level raise"),
        pytest.param(
            BASE.replace('raise ValueError(f"n ({n}) is above {LIMIT}")', "raise ValueError(MESSAGE)")
            + "\nMESSAGE = 'constant'\n",
            id="a module constant as the message",
        ),
        pytest.param(
            "class Missing(KeyError):\n    def __init__(self):\n        super().__init__()\n        self.a = 1\n\n"
            "\ndef f():\n    raise Missing('key')\n",
            id="a class of the module, its init stood in for",
        ),
        pytest.param("@dataclass\nclass Data:\n    a: int\n    b: int\n    c: int\n\n" + BASE, id="a decorated class"),
        pytest.param(
            BASE.replace("    @property\n", "    @property\n    # between\n    @cached(\n        1,\n    )\n"),
            id="decorators over lines with a comment",
        ),
        pytest.param(BASE.rstrip("\n"), id="no newline at the end"),
        pytest.param(BASE.replace("    return value * 2", "    return value * 2\n\n\n\n"), id="blank lines at the end"),
        pytest.param(
            BASE.replace("def check(n):", "def msg():\n    a = 1\n    b = 2\n    return a\n\n\ndef check(n):"),
            id="a def named like nothing the raises read",
        ),
        pytest.param(
            BASE.replace("    return value * 2", "    return '''a\n\"\"\" not the end '''"),
            id="one kind of triple quote inside the other",
        ),
        pytest.param(
            BASE.replace("    return value * 2", "    return r'\\'' + \"\\\"\" + '#'  # '"),
            id="escaped quotes and a hash in strings",
        ),
        pytest.param(BASE.replace("    return value * 2", "    return f'{value!r:>{width}}'"), id="an f-string"),
        pytest.param(BASE.replace("LIMIT = 3", "LIMIT = 3; OTHER = 4"), id="statements sharing a line"),
        pytest.param(
            BASE.replace(
                "    return value * 2",
                "".join(f"    # comment {n}\n    x{n} = {n}\n" for n in range(40))
                + '    return f"""\nat column 0\n"""',
            ),
            id="many comments, then a string whose lines stand at column 0 (read once, not every way)",
        ),
        pytest.param(
            BASE.replace("def helper(value):", "def helper(value): return (\n    value)\ndef more():"),
            id="a one-line def before another",
        ),
        pytest.param(BASE.replace("    return value * 2", "\treturn value * 2"), id="a tab in an indentation"),
        pytest.param(BASE.replace("\n", "\r\n"), id="CRLF line ends"),
        pytest.param(BASE.replace("class Config:", "class Config(\n    Base,\n):"), id="a class head over lines"),
        pytest.param(BASE + "\n\ndef last():\n    x = (\n", id="the file does not parse at its end"),
        pytest.param(BASE.replace("def check(n):", "def check(:"), id="a syntax error in a def that raises"),
    ],
)
def test_skimming_gives_what_a_full_parse_gives(source: str) -> None:
    whole, skimmed, _ = both(source)
    assert skimmed == whole


def test_the_misleading_texts_are_caught_not_skimmed_past() -> None:
    """The cases above whose text could mislead: each is either not read as a def or sends the file to a
    full parse (else the results above could agree by chance)."""
    in_string = BASE.replace("LIMIT = 3", 'TEXT = """\ndef fake():\n    a = 1\n    b = 2\n    c = 3\n"""')
    text = textwrap.dedent(in_string)
    assert any(first == 4 for first, _, _ in pieces._raise_free_defs(split_lines(text)))
    assert pieces.skim(split_lines(text), EVERY) is None  # its `pass` is inside a string
    column_0 = BASE.replace("    return value * 2", '    text = """\nat column 0\n"""\n    return text')
    text = textwrap.dedent(column_0)
    assert all(first != 6 for first, _, _ in pieces._raise_free_defs(split_lines(text)))  # does not lex whole


def test_a_syntax_error_inside_a_def_that_raises_nothing_goes_unseen() -> None:
    """What skimming gives up, on purpose (pieces.py says so): the file's raises are listed all the same."""
    broken = BASE.replace("    return value * 2", "    return value *")
    text = textwrap.dedent(broken)
    lines = split_lines(text)
    whole = _scan_text(text, lines, EVERY, whole=True)
    skimmed = _scan_text(text, lines, EVERY)
    assert whole.kind == "skipped" and "syntax error" in (whole.reason or "")
    assert skimmed.kind == "scanned" and len(skimmed.sites) == 2


# Modules made of the shapes skimming reads: defs at column 0 and 4, decorators, heads over lines, strings
# and brackets whose lines stand at column 0, classes indented otherwise, comments, raises here and there.
_BODY_LINES = [
    "    a = 1",
    "    return a",
    "    raise ValueError(f'bad {a}')",
    '    """Doc."""',
    '    text = """\nat column 0\n"""',
    "    call(\n1)",
    "# a comment at column 0",
    "",
    "    if a:\n        b = 2",
    "    x = '#' + \"'\"",
    "    y = \\\n        3",
]
_HEADS = [
    "def f{n}(a):",
    "async def g{n}():",
    "@decorator\ndef d{n}():",
    "@decorator(\n    1,\n)\ndef e{n}(\n    a,\n) -> int:",
    "def h{n}(a): return a",
    "def __post_init__(self):\n    self.ready{n} = True",
]


@st.composite
def module(draw: st.DrawFn) -> str:
    parts: list[str] = []
    for n in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["def", "def", "class", "statement", "string"]))
        if kind == "statement":
            parts.append(draw(st.sampled_from(["X = 1", "raise ValueError('top')", "import os", "X = (\n    1)"])))
            continue
        if kind == "string":
            parts.append('S = """\n' + draw(st.sampled_from(_HEADS)).format(n=n) + '\n    a = 1\n    b = 2\n"""')
            continue
        if kind == "class":
            indent = draw(st.sampled_from(["    ", "    ", "  "]))
            members = []
            for m in range(draw(st.integers(0, 3))):
                head = draw(st.sampled_from(_HEADS)).format(n=f"{n}_{m}")
                body = draw(st.lists(st.sampled_from(_BODY_LINES), min_size=1, max_size=4))
                member = "\n".join([head, *body, "    pass"])
                members.append(textwrap.indent(member, indent, lambda line: not line.startswith("1")))
            field = draw(st.sampled_from(["attribute = 1", "size: int = 1", "size: int = field(default=1, ge=0)"]))
            parts.append("\n".join([f"class C{n}(Base):", f"{indent}{field}", *members]))
            continue
        head = draw(st.sampled_from(_HEADS)).format(n=n)
        body = draw(st.lists(st.sampled_from(_BODY_LINES), min_size=1, max_size=5))
        parts.append("\n".join([head, *body, "    pass"]))
    return "\n\n".join(parts) + draw(st.sampled_from(["\n", "", "\n\n# end\n"]))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(module())
def test_any_module_of_these_shapes_skims_to_what_a_full_parse_gives(source: str) -> None:
    try:
        ast.parse(source)
    except SyntaxError:
        valid = False
    else:
        valid = True
    for facts in (False, True):  # (an invalid module is scanned too: it must not fail)
        whole, skimmed, _ = both(source, facts=facts)
        if valid:
            assert skimmed == whole


def test_a_rescan_skims_the_defs_it_did_not_find_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new version whose changed defs raise nothing: the rescan reuses what it finds again, stands in for
    the changed defs too, and still gives what a full parse gives, pieces included."""
    from extractor.model.records import FileResult
    from extractor.scanning.scan import scan_blob

    old = textwrap.dedent(BASE).encode()
    new = old.replace(b"return value * 2", b"return value * 3").replace(b"other = 2", b"other = 4")
    previous = scan_blob(old, options=EVERY)
    parsed: list[str] = []
    real = pieces.visit
    monkeypatch.setattr(pieces, "visit", lambda source, *args: parsed.append(source) or real(source, *args))
    rescanned = scan_blob(new, options=EVERY, previous=previous)
    monkeypatch.undo()
    assert len(parsed) == 1
    assert "value * 3" not in parsed[0] and "other = 4" not in parsed[0]  # stood in for, not parsed
    text = new.decode()
    whole = FileResult.model_validate_json(orjson.dumps(_scan_text(text, split_lines(text), EVERY, whole=True)))
    assert (rescanned.sites, rescanned.skippedSites) == (whole.sites, whole.skippedSites)
    assert sorted(rescanned.pieces) == sorted(whole.pieces) and whole.pieces
