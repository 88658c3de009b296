"""Rescanning a new version of a file from its old pieces gives exactly what a full parse gives."""

from __future__ import annotations

import textwrap

import orjson
import pytest

from extractor.models import FileResult
from extractor.scan import ScanOptions, scan_blob

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


def rescanned(old: str, new: str) -> tuple[FileResult, FileResult]:
    previous = scan_blob(textwrap.dedent(old).encode(), options=OPTIONS)
    assert previous.pieces
    data = textwrap.dedent(new).encode()
    return scan_blob(data, options=OPTIONS), scan_blob(data, options=OPTIONS, previous=previous)


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
    from extractor import pieces
    from extractor.source import decode, split_lines

    new = GROWING.replace(
        'raise ValueError("big")\n',
        'raise ValueError("big")\n        if n == 7:\n            raise ValueError("seven")\n',
    )
    previous = orjson.loads(scan_blob(GROWING.encode(), options=OPTIONS).model_dump_json())
    lines = split_lines(decode(new.encode()))
    data = pieces.rescan(lines, previous, OPTIONS)
    assert data is not None  # `keep` is reused; `grow` is parsed again, whole
    reused = FileResult.model_validate_json(orjson.dumps(data))
    assert outcome(reused) == outcome(scan_blob(new.encode(), options=OPTIONS))
    assert [site.errorMessage for site in reused.sites] == ["big", "seven", "small"]
    monkeypatch.setattr(pieces, "_ends_at", lambda *args: True)
    assert pieces.rescan(lines, previous, OPTIONS) is None  # without the check: a failed parse, then a full one


def test_messages_parsed_again_take_their_templates_from_the_old_sites(monkeypatch: pytest.MonkeyPatch) -> None:
    """A changed function's unchanged messages keep their old templates (libcst is not asked again);
    a message whose text changed gets a template of its own."""
    import extractor.template

    real = extractor.template.message_template
    previous = scan_blob(OLD.encode(), options=OPTIONS)
    for new, made in [
        (OLD.replace("    if n > LIMIT:\n", "    n = int(n)\n    if n > LIMIT:\n"), []),
        (OLD.replace("is above", "exceeds"), ['f"n ({n}) exceeds {LIMIT}"']),
    ]:
        full = scan_blob(new.encode(), options=OPTIONS)
        calls: list[str] = []

        def counting(args: list[str] = (), calls: list[str] = calls, **kwargs: object) -> object:  # type: ignore[assignment]
            calls.extend(args)
            return real(args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(extractor.template, "message_template", counting)
        incremental = scan_blob(new.encode(), options=OPTIONS, previous=previous)
        monkeypatch.undo()
        assert outcome(incremental) == outcome(full)
        assert calls == made


def test_a_file_parsed_whole_still_takes_the_old_templates(monkeypatch: pytest.MonkeyPatch) -> None:
    """A config file is parsed whole for its classes, never rescanned: its old sites still lend their
    templates to the messages that did not change."""
    import extractor.template

    previous = scan_blob(OLD.encode(), options=OPTIONS, facts=True)
    new = OLD.replace("import os\n", "import os\nimport sys\n")
    full = scan_blob(new.encode(), options=OPTIONS, facts=True)
    calls: list[object] = []
    real = extractor.template.message_template
    monkeypatch.setattr(extractor.template, "message_template", lambda *a, **k: calls.append(a) or real(*a, **k))
    again = scan_blob(new.encode(), options=OPTIONS, previous=previous, facts=True)
    assert again == full and again.classes
    assert [args for args in calls if args] == []  # only `raise NotImplementedError`, no message, was made again
