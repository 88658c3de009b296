"""Property tests: patterns match what Python really prints, and the visitor survives any program."""

from __future__ import annotations

import ast
import re
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, assume, given, settings

from extractor.scanning.scan import Scanned, ScanOptions, scan
from extractor.scanning.template.message import message_template

# Values are digits and literal text has none: a capture group can only end where its value ends.
NAMES = ["a", "b", "value", "obj.attr"]
VALUES: dict[str, Any] = {"a": 7, "b": 123456, "value": 42, "obj": type("Obj", (), {"attr": 9001})()}
LITERAL = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Nd", "No", "Nl"), blacklist_characters="\x00*"),
    max_size=12,
)
SPECS = st.sampled_from([None, "*>8", "*<6", "*^7"])
CONVERSIONS = st.sampled_from([None, "r", "s", "a"])


def escape(text: str, quote: str, *, fstring: bool) -> str:
    out = text.replace("\\", "\\\\").replace(quote, "\\" + quote).replace("\n", "\\n").replace("\r", "\\r")
    return out.replace("{", "{{").replace("}", "}}") if fstring else out


@st.composite
def fstring(draw: st.DrawFn) -> str:
    quote = draw(st.sampled_from(['"', "'"]))
    body = []
    for _ in range(draw(st.integers(0, 4))):
        body.append(escape(draw(LITERAL), quote, fstring=True))
        name = draw(st.sampled_from(NAMES))
        debug = draw(st.booleans())
        space = draw(st.sampled_from(["", " "])) if debug else ""
        conversion, spec = draw(CONVERSIONS), draw(SPECS)
        body.append(
            "{"
            + name
            + (f"{space}={space}" if debug else "")
            + (f"!{conversion}" if conversion else "")
            + (f":{spec}" if spec else "")
            + "}"
        )
    body.append(escape(draw(LITERAL), quote, fstring=True))
    return "f" + quote + "".join(body) + quote


@st.composite
def literal(draw: st.DrawFn) -> str:
    quote = draw(st.sampled_from(['"', "'"]))
    return quote + escape(draw(LITERAL), quote, fstring=False) + quote


@st.composite
def message(draw: st.DrawFn) -> str:
    shape = draw(st.sampled_from(["fstring", "implicit", "plus", "percent", "format"]))
    if shape == "fstring":
        return draw(fstring())
    if shape == "implicit":
        return " ".join(draw(st.lists(st.one_of(fstring(), literal()), min_size=1, max_size=4)))
    if shape == "plus":
        parts = draw(
            st.lists(
                st.one_of(fstring(), literal(), st.sampled_from(NAMES).map(lambda n: f"str({n})")),
                min_size=2,
                max_size=4,
            )
        )
        return " + ".join(parts if any(p[0] in "f'\"" for p in parts) else ['""', *parts])
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3))
    pieces = [draw(LITERAL).replace("%", "%%").replace("{", "{{").replace("}", "}}") for _ in range(len(names) + 1)]
    if shape == "percent":
        codes = [draw(st.sampled_from(["%s", "%r", "%d", "%a"])) for _ in names]
        template = "".join(p + c for p, c in zip(pieces, codes, strict=False)) + pieces[-1]
        return f"{template!r} % ({', '.join(names)},)"
    codes = [draw(st.sampled_from(["{}", "{!r}", "{:*>6}"])) for _ in names]
    template = "".join(p.replace("%%", "%") + c for p, c in zip(pieces, codes, strict=False)) + pieces[-1].replace(
        "%%", "%"
    )
    return f"{template!r}.format({', '.join(names)})"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message())
def test_pattern_fullmatches_the_real_rendering_and_groups_give_back_the_values(source: str) -> None:
    rendered = str(eval(source, {"str": str}, dict(VALUES)))
    template = message_template([source])
    match = re.fullmatch(template.pattern, rendered, re.S)
    assert match is not None, (source, template.message, template.pattern, rendered)
    bounds = [(p.start, p.end) for p in template.placeholders]
    for index, placeholder in enumerate(template.placeholders):
        # Two placeholders with no literal text between them can split their values either way.
        if (index and bounds[index - 1][1] == placeholder.start) or (
            index + 1 < len(bounds) and bounds[index + 1][0] == placeholder.end
        ):
            continue
        text = template.message[placeholder.start : placeholder.end]
        rendered = str(eval("f" + repr(text), {}, dict(VALUES)))
        if placeholder.debug:  # Python prints the text up to `=` and the spaces after it, then the value
            inner = text[1:-1]
            cut = inner.index("=") + 1
            cut += len(inner[cut:]) - len(inner[cut:].lstrip(" "))
            rendered = rendered[cut:]
        assert match.group(placeholder.group) == rendered, (source, text)


def expected_sites(tree: ast.Module) -> int:
    """Count the raise statements: each is a record or a named skip (a re-raise is one too)."""
    return sum(isinstance(node, ast.Raise) for node in ast.walk(tree))


RAISES = st.sampled_from(
    [
        "raise",
        "raise ValueError",
        "raise ValueError('x')",
        "raise builtins.ValueError(f'{x!r} bad')",
        "raise errors.Custom('a', 'b') from None",
        "raise err",
        "raise exc",
        "raise make()('x')",
        "raise errors[0]",
        "raise TypeError('%s' % x)",
    ]
)


def followed_by_raises(programs: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """A generated program, then one to three raises at module level: generated programs almost never
    raise (none of 100 drawn from the grammar did), so without these the count compared is 0 == 0; after
    them it is what the visitor makes of a raise that follows whatever the program left it in."""
    return st.tuples(programs, st.lists(RAISES, min_size=1, max_size=3)).map(
        lambda drawn: drawn[0] + "\n" + "\n".join(drawn[1]) + "\n"
    )


def hypothesmith_strategy(name: str) -> st.SearchStrategy[str]:
    """hypothesmith's `from_grammar` or `from_node`, imported when first drawn: its import builds strategies
    from CPython's grammar (most of a second), which a session that runs no test of this module (a
    collection, a worker given other tests) need not pay."""
    import hypothesmith

    strategy: st.SearchStrategy[str] = getattr(hypothesmith, name)()
    return strategy


# Sized to what it proves, that no construct of the grammar breaks the visitor: a draw costs about 0.1 s
# (hypothesmith derives programs from CPython's grammar); the raises themselves are fuzzed below, by the
# hundred, in every compound statement.
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(followed_by_raises(st.deferred(lambda: hypothesmith_strategy("from_grammar"))))
def test_any_program_every_raise_is_a_record_or_a_named_skip(source: str) -> None:
    result = scan(source.encode(), options=ScanOptions(exceptions=("*",)))
    assert isinstance(result, Scanned)
    expected = expected_sites(ast.parse(source))
    assert expected >= 1 and len(result.sites) + len(result.skipped) == expected
    for skip in result.skipped:
        assert skip.reason


# No example database: replaying the saved examples of this strategy took minutes, not seconds.
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(followed_by_raises(st.deferred(lambda: hypothesmith_strategy("from_node"))))
def test_any_libcst_generated_program_scans_without_an_exception(source: str) -> None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):  # libcst accepts a few programs CPython refuses: draw another
        assume(False)
    result = scan(source.encode(), options=ScanOptions(exceptions=("*",)))
    assert isinstance(result, Scanned)
    expected = expected_sites(tree)
    assert expected >= 1 and len(result.sites) + len(result.skipped) == expected


@st.composite
def block(draw: st.DrawFn, depth: int = 0) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["raise", "pass", "assign"] + (["compound"] * 3 if depth < 4 else [])))
        if kind == "raise":
            lines.append(draw(RAISES))
        elif kind == "pass":
            lines.append("pass")
        elif kind == "assign":
            lines.append("msg = f'{x}'")
        else:
            header = draw(
                st.sampled_from(
                    [
                        "if x:",
                        "for i in y:",
                        "while x:",
                        "with a as b:",
                        "def f(x):",
                        "async def g():",
                        "class C:",
                        "try:",
                        "match x:",
                    ]
                )
            )
            inner = ["    " + line for line in draw(block(depth + 1))]
            if header == "try:":
                handler = ["except ValueError as err:"] + ["    " + line for line in draw(block(depth + 1))]
                lines += [header, *inner, *handler, "finally:", "    pass"]
            elif header == "match x:":
                lines += [header, "    case 1:", *["    " + line for line in inner], "    case _:", "        pass"]
            elif header == "if x:" and draw(st.booleans()):
                lines += [header, *inner, "elif y:", "    pass", "else:", *inner]
            else:
                lines += [header, *inner]
    return lines


@settings(max_examples=300, deadline=None)
@given(block())
def test_nested_raises_are_each_a_record_or_a_named_skip(lines: list[str]) -> None:
    source = "\n".join(lines) + "\n"
    tree = ast.parse(source)  # the generator writes only valid programs
    result = scan(source.encode(), options=ScanOptions(exceptions=("*",)))
    assert isinstance(result, Scanned)
    assert len(result.sites) + len(result.skipped) == expected_sites(tree)
    raised = {re.sub(r"\s+", "", ast.unparse(node.exc.func)) for node in ast.walk(tree)
              if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)}  # fmt: skip
    for site in result.sites:
        # a class's name; or, for a class computed at run time and called (`raise make()('x')`), that expression
        assert re.fullmatch(r"[A-Za-z_]\w*", site.errorClass) or re.sub(r"\s+", "", site.errorClass) in raised
