# Scan: one file's bytes -> its raise sites (ast finds sites and context; template.py reads messages).
from __future__ import annotations

import ast
import bisect
import codecs
import contextlib
import gc
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
_Located = ast.expr | ast.stmt | ast.pattern


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
        pieces=pieces_of(lines, body),
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
    collecting = gc.isenabled()
    gc.disable()  # parsing makes many short-lived acyclic objects; the cyclic collector only slows it
    try:
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
    finally:
        if collecting:
            gc.enable()


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
            inner = _State(scope=(*state.scope, node.name, "<locals>"))
            self.block(node.body, inner)
        elif isinstance(node, ast.ClassDef):
            self.block(node.body, _State(scope=(*state.scope, node.name)))
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
        if exc is None:
            return  # a bare `raise` re-raises; it is not a new site
        if isinstance(exc, ast.Name) and exc.id in state.caught:
            return  # `raise err` of a caught exception is a re-raise too
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
        template, key = self.template(exc, state)
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

    def _skip(self, node: ast.Raise, reason: str) -> None:
        self.skipped.append(SkippedSite(path="", line=node.lineno, reason=reason))

    def template(self, exc: ast.expr, state: _State) -> tuple[Template, str | None]:
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
            sources = [self.segment(v) for v in _resolve(variable, state)]
        else:
            sources = [self.segment(arg) for arg in args]
        made_of = "\0".join([variable or "", *sources])
        key = hashlib.blake2b(made_of.encode(), digest_size=12).hexdigest()
        earlier = self.templates.get(key)
        if earlier is not None:
            with contextlib.suppress(KeyError, TypeError, ValueError):  # not a site this code wrote
                return _template_of(earlier), key
        if variable is not None:
            return message_template(variable=variable, pieces=sources), key
        return message_template(sources), key


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


def _resolve(name: str, state: _State) -> list[ast.expr]:
    """Return what was assigned (then `+=`-ed) to `name` before the raise on every path, or nothing.

    Walks back through the statements that precede the raise in its block, then in each enclosing
    block up to the function body. Any other binding of the name on the way (inside a branch, a loop,
    an unpacking) makes the value path-dependent, and the name stays unresolved.
    """
    pieces: list[ast.expr] = []
    used: set[int] = set()
    for body, index, owner in reversed(state.chain):
        for statement in reversed(body[:index]):
            value = _plain_assignment(statement, name)
            if value is not None:
                return [value, *pieces]
            if (
                isinstance(statement, ast.AugAssign)
                and isinstance(statement.target, ast.Name)
                and statement.target.id == name
                and isinstance(statement.op, ast.Add)
            ):
                pieces.insert(0, statement.value)
                used.add(id(statement))
                continue
            if any(True for _ in _bindings(statement, name)):
                return []
        # A loop or try may have run other bindings of the name before reaching the raise.
        if (
            owner is not None
            and not isinstance(owner, ast.If | ast.Match)
            and any(id(binding) not in used for binding in _bindings(owner, name))
        ):
            return []
    return []


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


def _bindings(node: ast.AST, name: str) -> Iterator[ast.AST]:
    """Yield the statements or expressions under node that bind `name` (not in nested scopes)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current is not node and isinstance(
            current, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
        ):
            continue
        if isinstance(current, ast.Name) and current.id == name and isinstance(current.ctx, ast.Store | ast.Del):
            yield current
        elif isinstance(current, ast.AugAssign) and isinstance(current.target, ast.Name) and current.target.id == name:
            yield current
            continue
        elif isinstance(current, ast.ExceptHandler) and current.name == name:
            yield current
        stack.extend(ast.iter_child_nodes(current))


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
