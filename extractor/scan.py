# Scan: one file's bytes -> its raise sites (ast finds sites and context; template.py reads messages).
from __future__ import annotations

import ast
import bisect
import codecs
import contextlib
import hashlib
import io
import re
import tokenize
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from extractor.fields import reads
from extractor.models import (
    ClassFacts,
    Condition,
    ConditionKind,
    Extraction,
    FileResult,
    FlagFacts,
    MessageKind,
    Placeholder,
    Site,
    SkippedSite,
    construct,
    replace,
)
from extractor.records import SiteData, slug_stem

if TYPE_CHECKING:
    from extractor.template import Template

__all__ = ["ScanOptions", "Scanned", "Skipped", "could_hold", "scan", "scan_blob", "scan_many"]

ANY_EXCEPTION = "*"
_NEWLINE = re.compile(r"\r\n|\r|\n")
_SKIP_TOKENS = frozenset(
    {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
)


@dataclass(frozen=True)
class ScanOptions:
    """The options that decide what a file's sites are (and so key a cache of them)."""

    exceptions: tuple[str, ...] = ("ValueError",)
    context: int = 18

    @property
    def any_exception(self) -> bool:
        return ANY_EXCEPTION in self.exceptions


@dataclass(frozen=True)
class Scanned:
    """A file that was parsed: its sites in file order, and the raises that cannot be records."""

    sites: tuple[Site, ...]
    skipped: tuple[SkippedSite, ...] = ()


@dataclass(frozen=True)
class Skipped:
    """A file that could hold a site but could not be parsed, and why."""

    reason: str


FileScan = Scanned | Skipped
_Located = ast.expr | ast.stmt | ast.pattern | ast.keyword


def could_hold(data: bytes, options: ScanOptions) -> bool:
    """Tell cheaply whether a file's bytes can hold a raise in scope (the text prefilter).

    A raise of class C needs the word `raise` and C's name in the text; an encoding other than UTF-8
    could hide them, so a file that declares one is always parsed.
    """
    if b"raise" not in data:
        return declares_encoding(data)
    if options.any_exception:
        return True
    return any(name.encode() in data for name in options.exceptions) or declares_encoding(data)


# PEP 263 as tokenize applies it: a comment on line 1, or on line 2 after a blank or comment line 1,
# whatever their length; lines end at b"\n", as tokenize reads them.
# (match() anchors the patterns where a line starts.)
_COOKIE = re.compile(rb"[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")
_BLANK = re.compile(rb"[ \t\f]*(?:[#\r\n]|$)")


def declares_encoding(data: bytes) -> bool:
    """Tell whether source bytes declare their encoding (a PEP 263 coding line), after any UTF-8 BOM."""
    start = 3 if data.startswith(codecs.BOM_UTF8) else 0
    end = data.find(b"\n", start)
    first = len(data) if end < 0 else end + 1
    if _COOKIE.match(data, start, first):
        return True
    if end < 0 or not _BLANK.match(data, start, first):
        return False
    second = data.find(b"\n", first)
    return _COOKIE.match(data, first, len(data) if second < 0 else second + 1) is not None


def decode(data: bytes) -> str:
    """Decode source bytes as Python does: BOM, then PEP 263 coding line, else UTF-8."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


def split_lines(text: str) -> list[str]:
    """Split source into lines as Python counts them (\\r\\n, \\r or \\n), without a last empty one."""
    lines = text.split("\n") if "\r" not in text else _NEWLINE.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# The characters a window keeps of one line (vLLM's longest line has 324): a record must not repeat a
# whole minified or generated line, or one line holding thousands of raises would make a catalog
# thousands of times the size of its source.
LONG_LINE = 1000


def window(lines: Sequence[str], line: int, context: int, column: int = 0) -> tuple[int, int, str]:
    """Return the 1-based bounds and text of the source window around a line, clipped to the file.

    A line longer than LONG_LINE characters is cut, and says where and by how much: the raise's own
    line keeps LONG_LINE characters from `column` (where the raise starts), the others their start.
    """
    start = max(1, line - context)
    end = min(len(lines), line + context)
    kept = lines[start - 1 : end]
    if any(len(text) > LONG_LINE for text in kept):
        kept = [_cut(text, column if number == line else 0) for number, text in enumerate(kept, start)]
    return start, end, "\n".join(kept)


def _cut(text: str, keep_from: int) -> str:
    if len(text) <= LONG_LINE:
        return text
    begin = max(0, min(keep_from, len(text) - LONG_LINE))
    stop = begin + LONG_LINE
    head = f"[...{begin} characters cut...]" if begin else ""
    tail = f"[...{len(text) - stop} characters cut...]" if stop < len(text) else ""
    return head + text[begin:stop] + tail


def lines_with_raise(source: str, lines: Sequence[str]) -> list[int]:
    """The numbers of the lines of `source` (split as `lines`) that mention `raise`, in order."""
    if "\r" in source:
        return [number for number, line in enumerate(lines, start=1) if "raise" in line]
    found: list[int] = []
    line, counted = 1, 0
    at = source.find("raise")
    while at >= 0:  # the newlines between two mentions are counted by str.count, not line by line
        line += source.count("\n", counted, at)
        counted = at
        if not found or found[-1] != line:
            found.append(line)
        at = source.find("raise", at + 5)
    return found


def scan_blob(
    data: bytes, *, options: ScanOptions, previous: FileResult | None = None, facts: bool = False
) -> FileResult:
    """Scan one blob as the pipeline does: the prefilter, then the parser; a pure function of its inputs.

    `previous` is the result for an earlier version of the same file: its unchanged pieces are reused
    instead of parsed again (the result is the same as without it). `facts` asks for the file's classes
    and CLI flags even if it holds no site: it is parsed whole.
    """
    earlier = orjson.loads(previous.model_dump_json()) if previous is not None else None
    result = _scan(data, options, earlier, facts)
    return result if isinstance(result, FileResult) else FileResult.model_validate(result)


def _scan(
    data: bytes, options: ScanOptions, previous: dict[str, Any] | None, facts: bool
) -> FileResult | dict[str, Any]:
    """`scan_blob`, with the previous result as data (as the cache holds it); a rescan gives data too."""
    if could_hold(data, options):
        return _parse(data, options, previous, facts)
    if not facts:
        return FileResult(kind="ruled-out")
    read = _parse(data, options, None, facts)
    assert isinstance(read, FileResult)  # read for its facts: parsed whole, never rescanned
    return replace(read, couldHold=False)


def _parse(
    data: bytes, options: ScanOptions, previous: dict[str, Any] | None, facts: bool
) -> FileResult | dict[str, Any]:
    try:
        text = decode(data)
    except (SyntaxError, LookupError) as error:
        return FileResult(kind="skipped", reason=f"cannot decode: {error}")
    except UnicodeDecodeError as error:
        return FileResult(kind="skipped", reason=f"cannot decode: {error.reason} at byte {error.start}")
    lines = split_lines(text)
    # Whatever is parsed again takes the templates of the old sites made of the same text.
    templates: dict[str, SiteData] = {}
    if previous is not None:
        with contextlib.suppress(KeyError, TypeError, AttributeError):  # not a result this code wrote
            templates = {site["templateKey"]: site for site in previous["sites"] if site.get("templateKey")}
    if previous is not None and previous.get("pieces") and not facts:
        from extractor.pieces import rescan

        try:
            reused = rescan(lines, previous, options, templates)
        except (KeyError, TypeError, ValueError):  # not a result this code wrote: it only costs a full parse
            reused = None
        if reused is not None:
            return reused
    return _scan_text(text, lines, options, facts=facts, templates=templates)


def _scan_text(
    text: str,
    lines: list[str],
    options: ScanOptions,
    *,
    facts: bool = False,
    templates: Mapping[str, SiteData] | None = None,
) -> FileResult:
    from extractor.pieces import pieces_of

    visited = visit(text, lines, options, templates)
    if isinstance(visited, str):
        return FileResult(kind="skipped", reason=visited)
    body, visitor = visited
    classes: list[ClassFacts] = []
    flags: FlagFacts | None = None
    if facts:  # only the config and CLI files are asked for them
        from extractor.facts import file_facts

        classes, flags = file_facts(body, visitor.segment, text)
    return FileResult(
        kind="scanned",
        sites=visitor.sites,
        skippedSites=visitor.skipped,
        classes=classes,
        flags=flags,
        facts=facts,
        pieces=[] if visitor.globals_read else pieces_of(lines, body),
    )


def visit(
    source: str, lines: list[str], options: ScanOptions, templates: Mapping[str, SiteData] | None = None
) -> tuple[list[ast.stmt], _Visitor] | str:
    """Parse `source` and collect its sites, reading text from `lines` (those of `source`, or of the file
    `source` stands for with some statements replaced: only what `source` holds is walked); a string is
    why it failed.

    `templates` holds sites of an earlier version by their `templateKey`: a raise made of the same text
    takes its template from there rather than from libcst.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        return f"syntax error: {error.msg} (line {error.lineno})"
    except (ValueError, RecursionError, MemoryError) as error:
        return f"cannot parse: {type(error).__name__}: {error}"
    visitor = _Visitor(lines, options, lines_with_raise(source, lines), templates)
    visitor.module = tree.body
    if visitor.raise_lines:
        try:
            visitor.block(tree.body, _State())
        except RecursionError:
            return "cannot scan: nesting too deep"
    return tree.body, visitor


def scan_many(batch: list[tuple[str, bytes, bytes | None, bool]], options: ScanOptions) -> list[tuple[str, bytes]]:
    """Scan blobs (a worker process's unit of work) and return each result serialized, by blob id.

    Each item is (blob id, bytes, serialized result of the file's previous version or None, whether
    the file's facts are wanted).
    """
    out = []
    for oid, data, previous, facts in batch:
        earlier = None
        if previous is not None:
            with contextlib.suppress(orjson.JSONDecodeError):  # a corrupt previous entry costs a full parse
                earlier = orjson.loads(previous)
        result = _scan(data, options, earlier if isinstance(earlier, dict) else None, facts)
        if isinstance(result, FileResult):
            out.append((oid, result.model_dump_json().encode()))
        else:
            out.append((oid, orjson.dumps(result)))
    return out


def scan(data: bytes, *, options: ScanOptions) -> FileScan:
    """Find every raise site in scope in one file's bytes; a pure function of the bytes and options."""
    try:
        text = decode(data)
    except (SyntaxError, LookupError) as error:
        return Skipped(f"cannot decode: {error}")
    except UnicodeDecodeError as error:
        return Skipped(f"cannot decode: {error.reason} at byte {error.start}")
    result = _scan_text(text, split_lines(text), options)
    if result.kind == "skipped":
        return Skipped(result.reason or "")
    return Scanned(tuple(result.sites), tuple(result.skippedSites))


class _State(NamedTuple):
    """Where the walk stands; replaced, never mutated, on the way down."""

    conditions: tuple[Condition, ...] = ()
    scope: tuple[str, ...] = ()
    caught: frozenset[str] = frozenset()
    # Statement lists from the function body down to the current statement, with its index in each,
    # and the compound statement that owns each list (None for the function body).
    chain: tuple[tuple[Sequence[ast.stmt], int, ast.stmt | None], ...] = ()
    owner: ast.stmt | None = None
    # The functions and classes around the raise, outermost first.
    defs: tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, ...] = ()

    def enter(self, condition: Condition, owner: ast.stmt) -> _State:
        return self._replace(conditions=(*self.conditions, condition), owner=owner)


class _Visitor:
    """Walks one module's statements, collecting sites with their enclosing conditions."""

    def __init__(
        self,
        lines: list[str],
        options: ScanOptions,
        raise_lines: list[int],
        templates: Mapping[str, SiteData] | None = None,
    ) -> None:
        self.lines = lines
        self.templates = templates or {}
        # A raise outside any function whose message names a variable: resolving it may need any statement.
        self.outside_function = False
        self._encoded: dict[int, bytes] = {}
        self.options = options
        # Lines that mention `raise`: a statement spanning none of them holds no raise and is not walked.
        self.raise_lines = raise_lines
        self.sites: list[Site] = []
        self.skipped: list[SkippedSite] = []
        self.module: Sequence[ast.stmt] = ()
        self.globals_read = False  # a message was looked up among the module's constants
        self._constants: dict[str, ast.expr] | None = None

    # Source text helpers -------------------------------------------------------------------------
    def _line_bytes(self, lineno: int) -> bytes:
        cached = self._encoded.get(lineno)
        if cached is None:
            cached = self._encoded[lineno] = self.lines[lineno - 1].encode()
        return cached

    def segment(self, node: _Located) -> str:
        """Return the exact source of a node (ast offsets are UTF-8 byte offsets)."""
        start, end = node.lineno, node.end_lineno or node.lineno
        col, end_col = node.col_offset, node.end_col_offset or 0
        if start == end:
            return self._line_bytes(start)[col:end_col].decode()
        first = self._line_bytes(start)[col:].decode()
        middle = self.lines[start : end - 1]
        last = self._line_bytes(end)[:end_col].decode()
        return "\n".join([first, *middle, last])

    def one_line(self, node: _Located) -> str:
        return _one_line(self.segment(node))

    def column(self, node: _Located) -> int:
        return len(self._line_bytes(node.lineno)[: node.col_offset].decode())

    def keyword_line(self, keyword: str, body: Sequence[ast.stmt], after: int) -> int:
        """Find the line of a block keyword (`else`, `finally`) that opens `body`, above its first line."""
        first = body[0].lineno
        for lineno in range(first, after, -1):
            stripped = self.lines[lineno - 1].lstrip()
            if stripped.startswith(keyword) and stripped[len(keyword) : len(keyword) + 1] in (":", " ", "\t"):
                return lineno
        return first

    # Walk ----------------------------------------------------------------------------------------
    def block(self, body: Sequence[ast.stmt], state: _State) -> None:
        lines = self.raise_lines
        for index, statement in enumerate(body):
            position = bisect.bisect_left(lines, statement.lineno)
            if position == len(lines) or lines[position] > (statement.end_lineno or statement.lineno):
                continue
            self.statement(statement, state._replace(chain=(*state.chain, (body, index, state.owner))))

    def statement(self, node: ast.stmt, state: _State) -> None:
        if isinstance(node, ast.Raise):
            self.raise_(node, state)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inner = _State(scope=(*state.scope, node.name, "<locals>"), defs=(*state.defs, node))
            self.block(node.body, inner)
        elif isinstance(node, ast.ClassDef):
            self.block(node.body, _State(scope=(*state.scope, node.name), defs=(*state.defs, node)))
        elif isinstance(node, ast.If):
            self.if_(node, state, ConditionKind.IF)
        elif isinstance(node, ast.For | ast.AsyncFor):
            test = f"{self.one_line(node.target)} in {self.one_line(node.iter)}"
            self.loop(node, state, ConditionKind.FOR, test)
        elif isinstance(node, ast.While):
            self.loop(node, state, ConditionKind.WHILE, self.one_line(node.test))
        elif isinstance(node, ast.With | ast.AsyncWith):
            items = ", ".join(self.one_line(item.context_expr) + _as(self, item.optional_vars) for item in node.items)
            self.block(
                node.body,
                state.enter(construct(Condition, kind=ConditionKind.WITH, test=items, line=node.lineno), node),
            )
        elif isinstance(node, ast.Try | ast.TryStar):
            self.try_(node, state)
        elif isinstance(node, ast.Match):
            self.match(node, state)

    def if_(self, node: ast.If, state: _State, kind: ConditionKind) -> None:
        test = self.one_line(node.test)
        self.block(node.body, state.enter(construct(Condition, kind=kind, test=test, line=node.lineno), node))
        if not node.orelse:
            return
        negated = state.enter(construct(Condition, kind=kind, test=test, negated=True, line=node.lineno), node)
        first = node.orelse[0]
        if len(node.orelse) == 1 and isinstance(first, ast.If) and self._is_elif(first):
            chained = negated._replace(chain=(*negated.chain, (node.orelse, 0, node)))
            self.if_(first, chained, ConditionKind.ELIF)
            return
        line = self.keyword_line("else", node.orelse, node.body[-1].end_lineno or node.lineno)
        self.block(node.orelse, negated.enter(construct(Condition, kind=ConditionKind.ELSE, test="", line=line), node))

    def _is_elif(self, node: ast.If) -> bool:
        return self._line_bytes(node.lineno)[node.col_offset :].startswith(b"elif")

    def loop(self, node: ast.For | ast.AsyncFor | ast.While, state: _State, kind: ConditionKind, test: str) -> None:
        self.block(node.body, state.enter(construct(Condition, kind=kind, test=test, line=node.lineno), node))
        if node.orelse:
            exhausted = state.enter(construct(Condition, kind=kind, test=test, negated=True, line=node.lineno), node)
            line = self.keyword_line("else", node.orelse, node.body[-1].end_lineno or node.lineno)
            self.block(
                node.orelse,
                exhausted.enter(construct(Condition, kind=ConditionKind.ELSE, test="", line=line), node),
            )

    def try_(self, node: ast.Try | ast.TryStar, state: _State) -> None:
        attempt = state.enter(construct(Condition, kind=ConditionKind.TRY, test="", line=node.lineno), node)
        self.block(node.body, attempt)
        for handler in node.handlers:
            caught = self.one_line(handler.type) if handler.type is not None else ""
            inner = state.enter(construct(Condition, kind=ConditionKind.EXCEPT, test=caught, line=handler.lineno), node)
            if handler.name:
                inner = inner._replace(caught=state.caught | {handler.name})
            self.block(handler.body, inner)
        if node.orelse:
            line = self.keyword_line("else", node.orelse, node.body[-1].end_lineno or node.lineno)
            self.block(
                node.orelse, attempt.enter(construct(Condition, kind=ConditionKind.ELSE, test="", line=line), node)
            )
        if node.finalbody:
            last = node.orelse or (node.handlers[-1].body if node.handlers else node.body)
            line = self.keyword_line("finally", node.finalbody, last[-1].end_lineno or node.lineno)
            self.block(
                node.finalbody,
                state.enter(construct(Condition, kind=ConditionKind.FINALLY, test="", line=line), node),
            )

    def match(self, node: ast.Match, state: _State) -> None:
        subject = self.one_line(node.subject)
        earlier = state
        for case in node.cases:
            test = f"{subject} case {self.one_line(case.pattern)}"
            if case.guard is not None:
                test += f" if {self.one_line(case.guard)}"
            line = case.pattern.lineno
            self.block(
                case.body,
                earlier.enter(construct(Condition, kind=ConditionKind.MATCH_CASE, test=test, line=line), node),
            )
            earlier = earlier.enter(
                construct(Condition, kind=ConditionKind.MATCH_CASE, test=test, negated=True, line=line), node
            )

    # Sites ---------------------------------------------------------------------------------------
    def raise_(self, node: ast.Raise, state: _State) -> None:
        exc = node.exc
        if (
            "<locals>" not in state.scope
            and isinstance(exc, ast.Call)
            and any(isinstance(a, ast.Name) for a in exc.args)
        ):
            self.outside_function = True
        reraise = _reraise(exc, state.caught)
        if reraise is not None:  # not a new site: with every class in scope, a named skip
            if self.options.any_exception:
                self._skip(node, reraise)
            return
        assert exc is not None
        if isinstance(exc, ast.Call) and isinstance(exc.func, ast.Attribute) and exc.func.attr == "with_traceback":
            exc = exc.func.value  # `raise E("new").with_traceback(tb)`: a new exception all the same
        target = exc.func if isinstance(exc, ast.Call) else exc
        dotted = _dotted(target)
        name = dotted.rpartition(".")[2] if dotted else None
        if not self.options.any_exception:
            if name not in self.options.exceptions:
                return
        elif name is None:
            self._skip(node, f"raises an expression, not a class: {self.one_line(target)}")
            return
        elif not isinstance(exc, ast.Call) and not name[:1].isupper():
            self._skip(node, f"raises the value of a variable, not a class: {dotted}")
            return
        assert name is not None
        template, key = self.template(exc, state, name)
        if not _encodable(template.message):
            self._skip(node, "its message holds a lone surrogate (an escape like \\ud800): no UTF-8 can carry it")
            return
        line = node.lineno
        column = self.column(node)
        start, end, code = window(self.lines, line, self.options.context, column)
        qualname = ".".join(state.scope).removesuffix(".<locals>") or "<module>"
        extraction = construct(
            Extraction,
            placeholders=list(template.placeholders),
            conditions=list(state.conditions),
            function=qualname,
            cause=self.one_line(node.cause) if node.cause is not None else None,
            messageKind=template.kind,
            messageSource=self.segment(exc.args[0]) if isinstance(exc, ast.Call) and exc.args else None,
            column=column,
            endLineNumber=node.end_lineno or line,
            warnings=list(template.warnings),
        )
        texts = [c.test for c in extraction.conditions] + [p.expression for p in extraction.placeholders]
        self.sites.append(
            construct(
                Site,
                errorClass=name,
                errorMessage=template.message,
                messagePattern=template.pattern,
                lineNumber=line,
                sourceCode=code,
                sourceCodeStart=start,
                sourceCodeEnd=end,
                extraction=extraction,
                slugStem=slug_stem(template.message, [(p.start, p.end) for p in template.placeholders], name),
                reads=reads(texts),
                templateKey=key,
            )
        )

    def resolve(self, name: str, state: _State) -> list[str]:
        """The sources of what `name` holds at the raise (see `_resolve`), else of the module-level string
        constant it names, else nothing."""
        found = _resolve(name, state, self)
        if found or not state.defs or _bound_in(name, state.defs):
            return found
        # A global: its value may lie in any statement of the module, which a rescan may not have parsed,
        # and may change while the function stays the same: such a file is never rescanned in pieces.
        self.globals_read = True
        constant = self.constants().get(name)
        return [self.segment(constant)] if constant is not None else []

    def substitute(self, value: ast.expr, name: str, replacement: str) -> str:
        """The source of `value` with each use of `name` in it replaced by `replacement`."""
        text = self.segment(value)
        starts = [0]
        for line in text.split("\n"):
            starts.append(starts[-1] + len(line) + 1)
        spans = []
        for node in ast.walk(value):
            if isinstance(node, ast.Name) and node.id == name:
                row = node.lineno - value.lineno
                column = self.column(node) - (self.column(value) if row == 0 else 0)
                spans.append(starts[row] + column)
        for start in sorted(spans, reverse=True):
            text = text[:start] + replacement + text[start + len(name) :]
        return text

    def constants(self) -> dict[str, ast.expr]:
        """The module's names bound once, to a string literal, and declared `global` nowhere."""
        if self._constants is None:
            counts: dict[str, int] = {}
            values: dict[str, ast.expr] = {}
            for statement in self.module:
                for node in _bindings(statement, None):
                    for bound in _bound_names(node):
                        counts[bound] = counts.get(bound, 0) + 1
                targets: list[ast.expr] = [statement.target] if isinstance(statement, ast.AnnAssign) else []
                targets = statement.targets if isinstance(statement, ast.Assign) else targets
                value = statement.value if isinstance(statement, ast.Assign | ast.AnnAssign) else None
                if (
                    len(targets) == 1
                    and isinstance(targets[0], ast.Name)
                    and isinstance(value, ast.Constant)
                    and isinstance(value.value, str)
                ):
                    values[targets[0].id] = value
            declared = {
                name
                for statement in self.module
                for node in ast.walk(statement)
                if isinstance(node, ast.Global | ast.Nonlocal)
                for name in node.names
            }
            self._constants = {
                name: value for name, value in values.items() if counts.get(name) == 1 and name not in declared
            }
        return self._constants

    def _skip(self, node: ast.Raise, reason: str) -> None:
        self.skipped.append(SkippedSite(path="", line=node.lineno, reason=reason))

    def template(self, exc: ast.expr, state: _State, name: str) -> tuple[Template, str | None]:
        """The raise's message template, and a digest of the text it is made from (None: no call)."""
        from extractor.template import message_template  # libcst: imported only when a file is parsed

        if not isinstance(exc, ast.Call):
            return message_template(), None
        args = exc.args
        variable = None
        if any(isinstance(arg, ast.Starred) for arg in args):
            sources = [self.segment(exc)]
        elif len(args) == 1 and isinstance(args[0], ast.Name):
            variable = args[0].id
            sources = self.resolve(variable, state)
        else:
            sources = [self.segment(arg) for arg in args]
        keywords = [self.segment(keyword) for keyword in exc.keywords]
        joins: dict[str, tuple[str | None, list[tuple[str, bool]]]] = {}
        for joined in sorted(_joined_names(exc)):
            filled = _resolve_list(joined, state)
            if filled is not None and filled[1]:  # it adds known text only with items of its own
                head, items = filled
                joins[joined] = (
                    self.segment(head) if head is not None else None,
                    [(self.segment(item), certain) for item, certain in items],
                )
        # The class decides too: some builtins print their arguments their own way.
        made_of = "\0".join([name, variable or "", *sources, repr((keywords, sorted(joins.items())))])
        key = hashlib.blake2b(made_of.encode(), digest_size=12).hexdigest()
        earlier = self.templates.get(key)
        if earlier is not None:
            with contextlib.suppress(KeyError, TypeError, ValueError):  # not a site this code wrote
                return _template_of(earlier), key
        if variable is not None:
            return (
                message_template(variable=variable, pieces=sources, keywords=keywords, joins=joins, error_class=name),
                key,
            )
        return message_template(sources, keywords=keywords, joins=joins, error_class=name), key


def _joined_names(exc: ast.Call) -> set[str]:
    """The names of the lists a raise's arguments join into text (`" ".join(errors)`)."""
    return {
        node.args[0].id
        for arg in exc.args
        for node in ast.walk(arg)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
    }


def _reraise(exc: ast.expr | None, caught: frozenset[str]) -> str | None:
    """Why a raise re-raises an exception that already exists (so is no new site), or None."""
    if exc is None:
        return "re-raises the exception being handled (a bare raise)"
    if isinstance(exc, ast.Name) and exc.id in caught:
        return f"re-raises the caught exception {exc.id}"
    if (
        isinstance(exc, ast.Call)
        and isinstance(exc.func, ast.Attribute)
        and exc.func.attr == "with_traceback"
        and not isinstance(exc.func.value, ast.Call)
    ):
        return "re-raises an existing exception with another traceback (with_traceback)"
    return None


def _template_of(site: SiteData) -> Template:
    """The template a site was given (read back from the cache)."""
    from extractor.template import Template

    extraction = site["extraction"]
    return Template(
        site["errorMessage"],
        site["messagePattern"],
        tuple(construct(Placeholder, **placeholder) for placeholder in extraction["placeholders"]),
        MessageKind(extraction["messageKind"]),
        tuple(extraction["warnings"]),
    )


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _as(visitor: _Visitor, target: ast.expr | None) -> str:
    return f" as {visitor.one_line(target)}" if target is not None else ""


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _resolve(name: str, state: _State, visitor: _Visitor) -> list[str]:
    """Return the sources of what was assigned (then `+=`-ed) to `name` before the raise on every path,
    or nothing.

    Walks back through the statements that precede the raise in its block, then in each enclosing
    block up to the function body. Any other binding of the name on the way (inside a branch, a loop,
    an unpacking, a `def`, an import, a match pattern, a walrus) makes the value path-dependent, and the
    name stays unresolved; so does a value that is not a string when anything on the way may change it
    (`errors = []` then `errors.append(...)`). A value built from the name's earlier value
    (`msg = msg.format(n)`) is that value put in its place; an `if` whose every branch assigns a string
    gives one of those strings.
    """
    pieces: list[ast.expr] = []
    used: set[int] = set()
    passed: list[ast.AST] = []  # what ran on the way: it may change a value that is not a string in place
    augmented = False
    for level in range(len(state.chain) - 1, -1, -1):
        body, index, owner = state.chain[level]
        for position in range(index - 1, -1, -1):
            statement = body[position]
            value = _plain_assignment(statement, name)
            if value is not None:
                if not _stringy(value) and (augmented or any(_may_change(node, name) for node in passed)):
                    return []
                rest = [visitor.segment(piece) for piece in pieces]
                if not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(value)):
                    return [visitor.segment(value), *rest]
                if not _built_on(value, name):
                    return [visitor.segment(value), *rest]  # one placeholder, reading the earlier value
                # Built from its own earlier value: that value, resolved where this statement stands.
                earlier = _resolve(name, state._replace(chain=(*state.chain[:level], (body, position, owner))), visitor)
                if not earlier:
                    return []
                return [visitor.substitute(value, name, "(" + " + ".join(earlier) + ")"), *rest]
            if (
                isinstance(statement, ast.AugAssign)
                and isinstance(statement.target, ast.Name)
                and statement.target.id == name
                and isinstance(statement.op, ast.Add)
            ):
                pieces.insert(0, statement.value)
                used.add(id(statement))
                augmented = True
                continue
            if any(True for _ in _bindings(statement, name)):
                branches = _branches(statement, name, visitor) if not pieces else None
                return [branches] if branches is not None else []
            passed.append(statement)
        if owner is None:
            continue
        # A loop or try may have run other bindings of the name before reaching the raise.
        if isinstance(owner, ast.If | ast.Match):
            if any(True for header in _headers(owner) for _ in _bindings(header, name)):
                return []
            passed += [header for header in _headers(owner) if not _harmless_test(header, name)]
        elif any(id(binding) not in used for binding in _bindings(owner, name)):
            return []
        else:
            passed += _ran_before(owner, body)
    return []


def _ran_before(owner: ast.stmt, body: Sequence[ast.stmt]) -> list[ast.AST]:
    """What of a compound statement may have run before its block `body` (besides the statements of
    `body` above the raise): a `with`'s items, the other blocks of a `try`, all of a loop (an earlier
    turn)."""
    if isinstance(owner, ast.With | ast.AsyncWith):
        return list(owner.items)
    if isinstance(owner, ast.Try | ast.TryStar):
        if body is owner.body:
            return []
        handlers = [handler for handler in owner.handlers if handler.body is not body]
        return [*owner.body, *handlers, *(owner.orelse if body is owner.finalbody else [])]
    return [owner]


def _built_on(value: ast.expr, name: str) -> bool:
    """Tell whether `value` formats or extends the string `name` holds (`name.format(...)`, `name % x`)."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "format":
        base = value.func.value
    elif isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mod | ast.Add):
        base = value.left
    else:
        return False
    return isinstance(base, ast.Name) and base.id == name


def _branches(statement: ast.stmt, name: str, visitor: _Visitor) -> str | None:
    """The strings an `if`/`else` assigns to `name`, one per branch, as one conditional expression's
    source; None unless every branch binds the name exactly once, by a plain assignment of a string."""
    if not isinstance(statement, ast.If) or not statement.orelse:
        return None
    values: list[str] = []
    for branch in (statement.body, statement.orelse):
        if len(branch) == 1 and isinstance(branch[0], ast.If) and branch is statement.orelse:
            inner = _branches(branch[0], name, visitor)
            if inner is None or any(True for _ in _bindings(branch[0].test, name)):
                return None
            values.append(inner)
            continue
        assigned = [_plain_assignment(inner, name) for inner in branch]
        found = [value for value in assigned if value is not None]
        bindings = sum(1 for inner in branch for _ in _bindings(inner, name))
        if len(found) != 1 or bindings != 1 or not _stringy(found[0]):
            return None
        values.append(visitor.segment(found[0]))
    if any(True for _ in _bindings(statement.test, name)):
        return None
    return f"({values[0]}) if _ else ({values[1]})"


def _bound_in(name: str, defs: Sequence[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]) -> bool:
    """Tell whether `name` is local to one of the functions around a raise (so not the module's)."""
    if isinstance(defs[-1], ast.ClassDef):
        return True  # a class body's own names: not worth the trouble
    for node in defs:
        if isinstance(node, ast.ClassDef):
            continue
        arguments = node.args
        parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        parameters += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        if any(parameter.arg == name for parameter in parameters):
            return True
        if any(True for statement in node.body for _ in _bindings(statement, name)):
            return True
    return False


def _bound_names(node: ast.AST) -> list[str]:
    """The names a binding node (as `_bindings` yields them) binds."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.AugAssign):
        return [node.target.id] if isinstance(node.target, ast.Name) else []
    if isinstance(node, ast.Global | ast.Nonlocal):
        return list(node.names)
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [alias.asname or alias.name.partition(".")[0] for alias in node.names]
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    bound = getattr(node, "name", None)
    return [bound] if isinstance(bound, str) else []


# What a list joined into a message holds: the expression it started from when that is not a list
# display (its items unknown), then each item's expression and whether it is there on every path.
JoinedList = tuple[ast.expr | None, list[tuple[ast.expr, bool]]]


def _resolve_list(name: str, state: _State) -> JoinedList | None:
    """Return how the list `name` was filled before the raise (`x = [...]`, then `x.append(...)` in
    straight-line code or under `if`s), or None when anything else on the way may bind or change it."""
    items: list[tuple[ast.expr, bool]] = []
    for body, index, owner in reversed(state.chain):
        for statement in reversed(body[:index]):
            value = _plain_assignment(statement, name)
            if value is not None:
                if isinstance(value, ast.List):
                    if any(isinstance(element, ast.Starred) for element in value.elts):
                        return None
                    return None, [(element, True) for element in value.elts] + items
                return value, items
            found = _appends(statement, name, certain=True)
            if found is None:
                return None
            items[:0] = found
        if owner is not None:
            headers = _headers(owner) if isinstance(owner, ast.If | ast.Match) else _ran_before(owner, body)
            if any(_mentions(header, name) for header in headers if not _harmless_test(header, name)):
                return None
    return None


def _appends(statement: ast.stmt, name: str, *, certain: bool) -> list[tuple[ast.expr, bool]] | None:
    """The items `statement` appends to the list `name` (under an `if`, maybe not), or None when it
    touches the name otherwise."""
    if (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Attribute)
        and statement.value.func.attr == "append"
        and isinstance(statement.value.func.value, ast.Name)
        and statement.value.func.value.id == name
        and len(statement.value.args) == 1
        and not statement.value.keywords
        and not isinstance(statement.value.args[0], ast.Starred)
        and not _mentions(statement.value.args[0], name)
    ):
        return [(statement.value.args[0], certain)]
    if isinstance(statement, ast.If):
        if _mentions(statement.test, name) and not _harmless_test(statement.test, name):
            return None
        found: list[tuple[ast.expr, bool]] = []
        for inner in [*statement.body, *statement.orelse]:
            more = _appends(inner, name, certain=False)
            if more is None:
                return None
            found += more
        return found
    return None if _mentions(statement, name) else []


def _harmless_test(node: ast.AST, name: str) -> bool:
    """Tell whether a condition only asks about the value `name` holds (whether it is empty, how long
    it is, what it equals, its type), which changes nothing in place."""
    if isinstance(node, ast.Name | ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _harmless_test(node.operand, name)
    if isinstance(node, ast.BoolOp):
        return all(_harmless_test(value, name) or not _mentions(value, name) for value in node.values)
    if isinstance(node, ast.Compare):
        return all(_harmless_test(part, name) or not _mentions(part, name) for part in [node.left, *node.comparators])
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("len", "bool", "isinstance", "callable", "type")
        and all(isinstance(arg, ast.Name) or not _mentions(arg, name) for arg in node.args)
    )


def _headers(owner: ast.If | ast.Match) -> list[ast.AST]:
    """The parts of an `if` or `match` that run before any of its branches: the test, or the subject
    with the patterns and guards of its cases."""
    if isinstance(owner, ast.If):
        return [owner.test]
    headers: list[ast.AST] = [owner.subject]
    for case in owner.cases:
        headers.append(case.pattern)
        if case.guard is not None:
            headers.append(case.guard)
    return headers


def _stringy(value: ast.expr) -> bool:
    """Tell whether an expression certainly gives a str, which nothing can change in place."""
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str)
    if isinstance(value, ast.JoinedStr):
        return True
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        return _stringy(value.left) or _stringy(value.right)
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mod):
        return _stringy(value.left)
    if isinstance(value, ast.IfExp):
        return _stringy(value.body) and _stringy(value.orelse)
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in ("format", "join")
        and _stringy(value.func.value)
    )


def _may_change(node: ast.AST, name: str) -> bool:
    """Tell whether `node` may change the value `name` holds in place (it uses the name other than as a
    test of emptiness or length)."""
    if isinstance(node, ast.If | ast.While):
        return (_mentions(node.test, name) and not _harmless_test(node.test, name)) or any(
            _may_change(inner, name) for inner in [*node.body, *node.orelse]
        )
    return _mentions(node, name)


def _mentions(node: ast.AST, name: str) -> bool:
    """Tell whether `name` appears under `node` (nested scopes included: a closure may change it)."""
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node)) or any(
        True for _ in _bindings(node, name)
    )


def _plain_assignment(statement: ast.stmt, name: str) -> ast.expr | None:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        if isinstance(target, ast.Name) and target.id == name:
            return statement.value
    if (
        isinstance(statement, ast.AnnAssign)
        and statement.value is not None
        and isinstance(statement.target, ast.Name)
        and statement.target.id == name
    ):
        return statement.value
    return None


def _bindings(node: ast.AST, name: str | None) -> Iterator[ast.AST]:
    """Yield the statements, expressions or patterns under node that bind `name` (any name for None),
    not in nested scopes, whose own name is bound here all the same."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Lambda):
            continue
        if any(name is None or bound == name for bound in _binds(current)):
            yield current
        if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.AugAssign):
            continue
        stack.extend(ast.iter_child_nodes(current))


def _binds(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id] if isinstance(node.ctx, ast.Store | ast.Del) else []
    if isinstance(
        node,
        ast.AugAssign
        | ast.Global
        | ast.Nonlocal
        | ast.Import
        | ast.ImportFrom
        | ast.MatchMapping
        | ast.FunctionDef
        | ast.AsyncFunctionDef
        | ast.ClassDef
        | ast.ExceptHandler
        | ast.MatchAs
        | ast.MatchStar,
    ):
        return _bound_names(node)
    return []


def _one_line(source: str) -> str:
    """Put an expression's source on one line: comments dropped, line breaks made single spaces."""
    if "\n" not in source and "\r" not in source and "#" not in source:
        return source.strip()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return " ".join(source.split())
    out: list[str] = []
    previous: tokenize.TokenInfo | None = None
    for token in tokens:
        if token.type in _SKIP_TOKENS:
            continue
        if previous is not None:
            if token.start[0] == previous.end[0]:
                out.append(" " * (token.start[1] - previous.end[1]))
            elif previous.string not in "([{" and token.string not in ")]}":
                out.append(" ")
        out.append(token.string)
        previous = token
    return "".join(out)
