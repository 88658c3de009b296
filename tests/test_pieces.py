"""Rescanning a new version of a file from its old pieces gives exactly what a full parse gives."""

from __future__ import annotations

import textwrap
import typing

import orjson
import pytest
from pydantic import BaseModel

from extractor.model import records as models
from extractor.model.records import FileResult
from extractor.scanning.scan import ScanOptions, _scan_text, scan_blob
from extractor.scanning.source import decode, split_lines

OPTIONS = ScanOptions(exceptions=("*",), context=2)

OLD = '''\
import os

LIMIT = 3


def check(n):
    if n > LIMIT:
        raise ValueError(f"n ({n}) is above {LIMIT}")


class Config:
    size: int = 1
    """The size."""

    def verify(self):
        if self.size < 0:
            raise ValueError(f"size ({self.size}) must be >= 0")

    @property
    def double(self):
        raise NotImplementedError
'''


def outcome(result: FileResult) -> tuple[object, ...]:
    return (result.kind, result.reason, result.sites, result.skippedSites)


def parsed_whole(data: bytes) -> FileResult:
    """What a full parse gives (neither rescanned nor skimmed), as scan_blob gives it."""
    text = decode(data)
    return FileResult.model_validate_json(orjson.dumps(_scan_text(text, split_lines(text), OPTIONS, whole=True)))


def rescanned(old: str, new: str) -> tuple[FileResult, FileResult]:
    previous = scan_blob(textwrap.dedent(old).encode(), options=OPTIONS)
    assert previous.pieces
    data = textwrap.dedent(new).encode()
    return parsed_whole(data), scan_blob(data, options=OPTIONS, previous=previous)


@pytest.mark.parametrize(
    "new",
    [
        pytest.param("# a new header\n\n" + OLD, id="everything shifts down"),
        pytest.param(OLD.replace("size: int = 1", "size: int = 2\n    extra: int = 0"), id="class body changes"),
        pytest.param(OLD.replace("is above", "exceeds"), id="a function's message changes"),
        pytest.param(OLD.replace("class Config:", "class Settings:"), id="the class is renamed: qualnames follow"),
        pytest.param(OLD + "\n\ndef later():\n    raise KeyError('k')\n", id="a function is added"),
        pytest.param(
            OLD.replace("import os\n", 'import os\nDOC = """\n') + '"""\n', id="old pieces now inside a string"
        ),
        pytest.param(OLD.replace("LIMIT = 3", "msg = 'module'\nraise ValueError(msg)"), id="module-level raise"),
        pytest.param(OLD.replace("    @property\n", "    @property\n    @cached\n"), id="decorators change"),
        pytest.param(OLD.replace("import os", "import os; import sys"), id="statements sharing a line"),
        pytest.param(OLD.replace("def check(n):", "def check(n):  # \\"), id="comment ending in a backslash"),
        pytest.param("def check(:\n" + OLD, id="the new version does not parse"),
    ],
)
def test_rescan_equals_full_parse(new: str) -> None:
    full, incremental = rescanned(OLD, new)
    assert outcome(incremental) == outcome(full)


LOOKUP = """\
from errors import Missing


def lookup(table, key):
    if key not in table:
        raise Missing(f"no {key}")
    return table[key]
"""


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(
            LOOKUP, LOOKUP.replace("from errors import Missing", "class Missing(KeyError):\n    pass"), id="added"
        ),
        pytest.param(
            LOOKUP.replace("from errors import Missing", "class Missing(KeyError):\n    pass"),
            LOOKUP.replace("from errors import Missing", "class Missing(LookupError):\n    pass"),
            id="its base changes",
        ),
        pytest.param(
            LOOKUP.replace(
                "from errors import Missing", "class Missing(KeyError):\n    def __str__(self):\n        return 'x'"
            ),
            LOOKUP.replace("from errors import Missing", "class Missing(KeyError):\n    pass"),
            id="its __str__ goes",
        ),
    ],
)
def test_a_class_of_the_module_changing_rescans_the_raises_of_unchanged_defs(old: str, new: str) -> None:
    """How a raise prints may follow a class statement elsewhere in the module (a KeyError of its own prints
    its repr): when that class changes, the unchanged def that raises it is not reused as it was."""
    previous = scan_blob(old.encode(), options=OPTIONS)
    full = parsed_whole(new.encode())
    assert outcome(scan_blob(new.encode(), options=OPTIONS, previous=previous)) == outcome(full)
    assert [site.errorMessage for site in full.sites] != [site.errorMessage for site in previous.sites]
    # A version whose class prints as KeyError keeps no pieces: its next version is parsed whole.
    assert bool(previous.pieces) == ("Missing(KeyError):\n    pass" not in old)


def test_reused_sites_move_with_their_piece() -> None:
    full, incremental = rescanned(OLD, "# header\n" * 5 + OLD)
    lines = [site.lineNumber for site in incremental.sites]
    assert lines == [site.lineNumber + 0 for site in full.sites] and lines[0] == 13
    assert incremental.sites[0].sourceCode == full.sites[0].sourceCode


GROWING = """\
class C:
    def grow(self, n):
        a = 1
        b = 2
        if n > a + b:
            raise ValueError("big")

    def keep(self, n):
        x = 1
        y = 2
        if n < x - y:
            raise ValueError("small")
"""


def test_a_piece_that_is_only_the_head_of_a_longer_statement_now_is_not_reused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A method that grew at its end starts with the old method's exact lines: taking them for the old
    piece would cut the method in two (and cost a parse that fails); the rest of the file is reused."""
    from extractor.scanning import pieces
    from extractor.scanning.source import decode, split_lines

    new = GROWING.replace(
        'raise ValueError("big")\n',
        'raise ValueError("big")\n        if n == 7:\n            raise ValueError("seven")\n',
    )
    previous = orjson.loads(scan_blob(GROWING.encode(), options=OPTIONS).model_dump_json())
    lines = split_lines(decode(new.encode()))
    data = pieces.rescan(lines, previous, OPTIONS)
    assert data is not None  # `keep` is reused; `grow` is parsed again, whole
    reused = FileResult.model_validate_json(orjson.dumps(data))
    assert outcome(reused) == outcome(parsed_whole(new.encode()))
    assert [site.errorMessage for site in reused.sites] == ["big", "seven", "small"]
    monkeypatch.setattr(pieces, "_ends_at", lambda *args: True)
    assert pieces.rescan(lines, previous, OPTIONS) is None  # without the check: a failed parse, then a full one


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(
            OLD + GROWING, OLD + GROWING.replace("a = 1", "a = 10"), id="a class whose last def is found again"
        ),
        pytest.param(OLD + GROWING, OLD.replace("is above", "exceeds") + GROWING, id="a class found again whole"),
        pytest.param(OLD, "# a new header\n\n" + OLD, id="everything shifts down"),
    ],
)
def test_a_rescan_lists_the_pieces_a_full_parse_lists(old: str, new: str) -> None:
    """What a rescan keeps for the next version is what a full parse would: a class whose last def was found
    again ends where that def does, and the defs of a class found again whole are pieces still."""
    full, incremental = rescanned(old, new)
    assert outcome(incremental) == outcome(full)
    assert full.pieces and sorted(incremental.pieces) == sorted(full.pieces)


def test_a_class_found_again_whole_lends_its_defs_to_the_next_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three versions: the second changes a function outside class C (C is found again whole), the third
    changes one of C's methods; the third is rescanned from the second's result and parses only that
    method of C's, not the one that stayed the same."""
    from extractor.scanning import pieces

    first = OLD + GROWING
    second = OLD.replace("is above", "exceeds") + GROWING
    third = OLD.replace("is above", "exceeds") + GROWING.replace("a = 1", "a = 10")
    previous = scan_blob(second.encode(), options=OPTIONS, previous=scan_blob(first.encode(), options=OPTIONS))
    parsed: list[str] = []
    visit = pieces.visit
    monkeypatch.setattr(pieces, "visit", lambda source, *rest: parsed.append(source) or visit(source, *rest))
    result = scan_blob(third.encode(), options=OPTIONS, previous=previous)
    assert outcome(result) == outcome(parsed_whole(third.encode()))
    assert len(parsed) == 1 and "a = 10" in parsed[0] and '"small"' not in parsed[0]


@pytest.mark.parametrize(
    ("old", "new", "function"),
    [
        pytest.param(GROWING, GROWING.replace("class C:", "class Renamed:"), "Renamed.keep", id="a class renamed"),
        pytest.param(
            GROWING,
            GROWING.replace("    def keep(self, n):", "\nclass D:\n    def keep(self, n):"),
            "D.keep",
            id="a method moved to another class",
        ),
    ],
)
def test_a_def_found_again_in_other_classes_is_reused_under_its_new_name(
    old: str, new: str, function: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same text in other classes gives the same sites but for their qualified names: they are reused
    with the new names, not parsed again (what changed around them is parsed again without them)."""
    from extractor.scanning import pieces
    from extractor.scanning.source import decode, split_lines

    parsed: list[str] = []
    visit = pieces.visit
    monkeypatch.setattr(pieces, "visit", lambda source, *rest: parsed.append(source) or visit(source, *rest))
    previous = orjson.loads(scan_blob(old.encode(), options=OPTIONS).model_dump_json())
    data = pieces.rescan(split_lines(decode(new.encode())), previous, OPTIONS)
    assert data is not None and len(parsed) == 1 and "raise" not in parsed[0]  # every def was found again
    reused = FileResult.model_validate_json(orjson.dumps(data))
    full = parsed_whole(new.encode())
    assert outcome(reused) == outcome(full) and sorted(reused.pieces) == sorted(full.pieces)
    assert function in [site.extraction.function for site in reused.sites]


def test_a_def_given_a_decorator_is_parsed_again_and_the_rest_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A def found again under a decorator it did not have leaves `@cached` over a `pass`, which does not
    parse: that def is parsed again with the rest, and the other pieces are still reused."""
    from extractor.scanning import pieces
    from extractor.scanning.source import decode, split_lines

    new = GROWING.replace("    def keep(self, n):", "    @cached\n    def keep(self, n):")
    parsed: list[str] = []
    visit = pieces.visit
    monkeypatch.setattr(pieces, "visit", lambda source, *rest: parsed.append(source) or visit(source, *rest))
    previous = orjson.loads(scan_blob(GROWING.encode(), options=OPTIONS).model_dump_json())
    data = pieces.rescan(split_lines(decode(new.encode())), previous, OPTIONS)
    assert data is not None and len(parsed) == 2  # the second parse without the piece under `@cached`
    assert '"small"' in parsed[1] and '"big"' not in parsed[1]  # `grow` is still reused
    reused = FileResult.model_validate_json(orjson.dumps(data))
    full = parsed_whole(new.encode())
    assert outcome(reused) == outcome(full) and sorted(reused.pieces) == sorted(full.pieces)


def test_messages_parsed_again_take_their_templates_from_the_old_sites(monkeypatch: pytest.MonkeyPatch) -> None:
    """A changed function's unchanged messages keep their old templates (libcst is not asked again);
    a message whose text changed gets a template of its own."""
    import extractor.scanning.walk

    real = extractor.scanning.walk.message_template
    previous = scan_blob(OLD.encode(), options=OPTIONS)
    for new, made in [
        (OLD.replace("    if n > LIMIT:\n", "    n = int(n)\n    if n > LIMIT:\n"), []),
        (OLD.replace("is above", "exceeds"), ['f"n ({n}) exceeds {LIMIT}"']),
    ]:
        full = parsed_whole(new.encode())
        calls: list[str] = []

        def counting(args: list[str] = (), calls: list[str] = calls, **kwargs: object) -> object:  # type: ignore[assignment]
            calls.extend(args)
            return real(args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(extractor.scanning.walk, "message_template", counting)
        incremental = scan_blob(new.encode(), options=OPTIONS, previous=previous)
        monkeypatch.undo()
        assert outcome(incremental) == outcome(full)
        assert calls == made


def test_a_file_parsed_whole_still_takes_the_old_templates(monkeypatch: pytest.MonkeyPatch) -> None:
    """A config file is parsed whole for its classes, never rescanned: its old sites still lend their
    templates to the messages that did not change."""
    import extractor.scanning.walk

    previous = scan_blob(OLD.encode(), options=OPTIONS, facts=True)
    new = OLD.replace("import os\n", "import os\nimport sys\n")
    full = scan_blob(new.encode(), options=OPTIONS, facts=True)
    calls: list[object] = []
    real = extractor.scanning.walk.message_template
    monkeypatch.setattr(extractor.scanning.walk, "message_template", lambda *a, **k: calls.append(a) or real(*a, **k))
    again = scan_blob(new.encode(), options=OPTIONS, previous=previous, facts=True)
    assert again == full and again.classes
    assert calls == [()]  # only `raise NotImplementedError`, no message, was made again


# What a rescan does to each field of a reused site (nested models walked, a list by its items) when its
# piece moves: a field that holds a line number is shifted, the source window is cut again, the rest
# is the piece's text alone. A new field of Site must be placed here, and a line-bearing one shifted
# by `pieces._shift` (or a reused site would point at its old line).
SHIFTED = {"lineNumber", "sourceCodeStart", "sourceCodeEnd", "extraction.endLineNumber", "extraction.conditions.line"}
REWINDOWED = {"sourceCode"}
LINE_FREE = {
    "extraction.reproduction",  # (set by `reproduce` on a record, never on a scanned site)
    "errorClass",
    "errorMessage",
    "messagePattern",
    "slugStem",
    "reads",
    "templateKey",
    *(f"extraction.{name}" for name in ("function", "cause", "messageKind", "messageSource", "warnings")),
    "extraction.column",  # within the raise's own line, which moves whole
    *(f"extraction.placeholders.{name}" for name in models.Placeholder.model_fields),  # offsets in the message
    *(f"extraction.conditions.{name}" for name in ("kind", "test", "negated")),
    *(f"extraction.fields.{name}" for name in models.FieldRef.model_fields),  # filled at catalog time
    "extraction.related",
}
# A skipped raise of a reused piece: its line is shifted where `rescan` copies it.
SKIPPED_SHIFTED = {"line"}
SKIPPED_LINE_FREE = {"path", "reason"}


def leaves(model: type[BaseModel], prefix: str = "") -> set[str]:
    """Every field of a model, a nested model's (or a list of them's) by its own fields."""
    found: set[str] = set()
    for name, info in model.model_fields.items():
        inner = info.annotation
        if typing.get_origin(inner) is list:
            (inner,) = typing.get_args(inner)
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            found |= leaves(inner, f"{prefix}{name}.")
        else:
            found.add(prefix + name)
    return found


def test_every_field_of_a_site_is_shifted_or_declared_line_free() -> None:
    for shifted, line_free in [(SHIFTED | REWINDOWED, LINE_FREE), (SKIPPED_SHIFTED, SKIPPED_LINE_FREE)]:
        assert not shifted & line_free
    assert leaves(models.Site) == SHIFTED | REWINDOWED | LINE_FREE
    assert leaves(models.SkippedSite) == SKIPPED_SHIFTED | SKIPPED_LINE_FREE


def value_at(data: object, path: str) -> object:
    head, _, rest = path.partition(".")
    assert isinstance(data, dict)
    value = data[head]
    if not rest:
        return value
    if isinstance(value, list):
        return [value_at(item, rest) for item in value]
    return value_at(value, rest)


def test_shift_moves_exactly_the_fields_that_hold_lines() -> None:
    """`_shift` on a real site: each SHIFTED field moves by the delta, each LINE_FREE one stays."""
    from extractor.scanning.pieces import _shift
    from extractor.scanning.source import split_lines, window

    source = (
        "def f(n, xs):\n    for x in xs:\n        if n > x:\n            raise ValueError(f'{n} > {x}')\n    pass\n"
    )
    site = scan_blob(source.encode(), options=OPTIONS).sites[0]
    assert site.extraction.conditions and site.extraction.placeholders  # every kind of field has a value
    old = orjson.loads(site.model_dump_json())
    delta = 3
    lines = [""] * delta + split_lines(source)
    new = _shift(old, delta, lines, OPTIONS.context)

    def moved(value: object) -> object:
        return [moved(item) for item in value] if isinstance(value, list) else value + delta  # type: ignore[operator]

    assert {path: value_at(new, path) for path in SHIFTED} == {path: moved(value_at(old, path)) for path in SHIFTED}
    assert {path: value_at(new, path) for path in LINE_FREE} == {path: value_at(old, path) for path in LINE_FREE}
    assert new["sourceCode"] == window(lines, site.lineNumber + delta, OPTIONS.context, site.extraction.column)[2]
