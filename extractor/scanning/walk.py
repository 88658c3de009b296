# Walk: one parsed file's statements -> its raise sites, with their conditions, function and message.
from __future__ import annotations

import ast
import bisect
import contextlib
import functools
import hashlib
import io
import tokenize
from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

from extractor.model.kinds import ConditionKind, MessageKind, builtin_exception
from extractor.model.scanned import (
    ScannedCondition,
    ScannedExtraction,
    ScannedPlaceholder,
    ScannedSite,
    ScannedSkippedSite,
    SiteData,
)
from extractor.scanning.chains import reads
from extractor.scanning.resolve import Chain, Located, bindings, bound_in, bound_names, resolve_list, resolve_name
from extractor.scanning.slugs import slug_stem
from extractor.scanning.source import ScanOptions, bounded, lines_with_raise, node_source, window
from extractor.scanning.template.message import Template, message_template

__all__ = ["Unparsed", "Visitor", "extent", "visit"]

_SKIP_TOKENS = frozenset(
    {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
)


def visit(
    source: str, lines: list[str], options: ScanOptions, templates: Mapping[str, SiteData] | None = None
) -> tuple[list[ast.stmt], Visitor] | Unparsed:
    """Parse `source` and collect its sites, reading text from `lines` (those of `source`, or of the file
    `source` stands for with some statements replaced: only what `source` holds is walked); an `Unparsed`
    (a string) is why it failed.

    `templates` holds sites of an earlier version by their `templateKey`: a raise made of the same text
    takes its template from there rather than from libcst.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        where = f" (line {error.lineno})" if error.lineno is not None else ""  # (a NUL byte has no line)
        return Unparsed(f"syntax error: {error.msg}{where}", error.lineno)
    except (ValueError, RecursionError, MemoryError) as error:
        return Unparsed(f"cannot parse: {type(error).__name__}: {error}")
    visitor = Visitor(lines, options, lines_with_raise(source, lines), templates)
    visitor.module = tree.body
    if visitor.raise_lines:
        try:
            visitor.block(tree.body, _State())
        except RecursionError:
            return Unparsed("cannot scan: nesting too deep")
    # A class of its own printed as a builtin prints may be raised anywhere in the module, by a def a rescan
    # would reuse: the file is parsed whole next time (the raises this walk saw have asked already).
    if not visitor.globals_read and any(
        isinstance(statement, ast.ClassDef) and visitor.printed_as(statement.name) != statement.name
        for statement in tree.body
    ):
        visitor.globals_read = True
    return tree.body, visitor


class Unparsed(str):
    """Why a source could not be parsed or walked (the string `visit` returns), with the line the parser
    stopped at when it said (a rescan leaves out the piece placed there and tries again)."""

    line: int | None

    def __new__(cls, reason: str, line: int | None = None) -> Unparsed:
        made = super().__new__(cls, reason)
        made.line = line
        return made


def extent(statement: ast.stmt) -> tuple[int, int]:
    """A statement's first and last lines, its decorators included (they come first, in order)."""
    decorators = getattr(statement, "decorator_list", None)
    start = min(statement.lineno, decorators[0].lineno) if decorators else statement.lineno
    return start, statement.end_lineno or statement.lineno


# The fields of a statement (or an except clause, a match case) that hold statements.
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _declares(statement: ast.stmt, name: str) -> bool:
    """Tell whether a statement, or one nested in it, declares `name` global or nonlocal. Declarations are
    statements, and no expression holds one (a lambda's body is an expression): only bodies are walked."""
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Global | ast.Nonlocal) and name in node.names:
            return True
        for field in _BODIES:
            stack.extend(getattr(node, field, ()))
    return False


class _State(NamedTuple):
    """Where the walk stands; replaced, never mutated, on the way down."""

    conditions: tuple[ScannedCondition, ...] = ()
    scope: tuple[str, ...] = ()
    caught: frozenset[str] = frozenset()
    chain: Chain = ()  # the statement lists down to the current statement (see resolve.Chain)
    owner: ast.stmt | None = None
    # The functions and classes around the raise, outermost first.
    defs: tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, ...] = ()

    # Built whole rather than by `_replace`, which costs three times as much: the walk makes one a statement.
    def enter(self, condition: ScannedCondition, owner: ast.stmt) -> _State:
        return _State((*self.conditions, condition), self.scope, self.caught, self.chain, owner, self.defs)

    def within(self, body: Sequence[ast.stmt], index: int) -> _State:
        """The state at statement `index` of `body`, a statement list of the current owner."""
        chain = (*self.chain, (body, index, self.owner))
        return _State(self.conditions, self.scope, self.caught, chain, self.owner, self.defs)


class Visitor:
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
        self.sites: list[ScannedSite] = []
        self.skipped: list[ScannedSkippedSite] = []
        self.module: Sequence[ast.stmt] = ()
        # A message depends on the module's other statements: a constant it names, or the class it raises
        # (see `printed_as`). Such a file is never rescanned in pieces.
        self.globals_read = False
        self._constants: dict[str, ast.expr | None] = {}  # by name (see `constant`)
        self._classes: dict[str, list[ast.ClassDef]] | None = None  # the module's own, by name
        self._printed: dict[str, str] = {}  # by class name (see `printed_as`)

    # Source text helpers -------------------------------------------------------------------------
    def _line_bytes(self, lineno: int) -> bytes:
        cached = self._encoded.get(lineno)
        if cached is None:
            cached = self._encoded[lineno] = self.lines[lineno - 1].encode()
        return cached

    def segment(self, node: Located) -> str:
        """Return the exact source of a node."""
        return node_source(node, self.lines, self._line_bytes)

    def one_line(self, node: Located) -> str:
        """A node's source on one line, as a record copies it (bounded: see source.bounded)."""
        return bounded(_one_line(self.segment(node)))

    def column(self, node: Located) -> int:
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
            self.statement(statement, state.within(body, index))

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
                state.enter(
                    ScannedCondition(kind=ConditionKind.WITH, test=items, negated=False, line=node.lineno), node
                ),
            )
        elif isinstance(node, ast.Try | ast.TryStar):
            self.try_(node, state)
        elif isinstance(node, ast.Match):
            self.match(node, state)

    def if_(self, node: ast.If, state: _State, kind: ConditionKind) -> None:
        test = self.one_line(node.test)
        self.block(
            node.body, state.enter(ScannedCondition(kind=kind, test=test, negated=False, line=node.lineno), node)
        )
        if not node.orelse:
            return
        negated = state.enter(ScannedCondition(kind=kind, test=test, negated=True, line=node.lineno), node)
        first = node.orelse[0]
        if len(node.orelse) == 1 and isinstance(first, ast.If) and self._is_elif(first):
            chained = negated._replace(chain=(*negated.chain, (node.orelse, 0, node)))
            self.if_(first, chained, ConditionKind.ELIF)
            return
        line = self.keyword_line("else", node.orelse, node.body[-1].end_lineno or node.lineno)
        self.block(
            node.orelse,
            negated.enter(ScannedCondition(kind=ConditionKind.ELSE, test="", negated=False, line=line), node),
        )

    def _is_elif(self, node: ast.If) -> bool:
        return self._line_bytes(node.lineno)[node.col_offset :].startswith(b"elif")

    def loop(self, node: ast.For | ast.AsyncFor | ast.While, state: _State, kind: ConditionKind, test: str) -> None:
        self.block(
            node.body, state.enter(ScannedCondition(kind=kind, test=test, negated=False, line=node.lineno), node)
        )
        if node.orelse:
            exhausted = state.enter(ScannedCondition(kind=kind, test=test, negated=True, line=node.lineno), node)
            line = self.keyword_line("else", node.orelse, node.body[-1].end_lineno or node.lineno)
            self.block(
                node.orelse,
                exhausted.enter(ScannedCondition(kind=ConditionKind.ELSE, test="", negated=False, line=line), node),
            )

    def try_(self, node: ast.Try | ast.TryStar, state: _State) -> None:
        attempt = state.enter(ScannedCondition(kind=ConditionKind.TRY, test="", negated=False, line=node.lineno), node)
        self.block(node.body, attempt)
        for handler in node.handlers:
            caught = self.one_line(handler.type) if handler.type is not None else ""
            inner = state.enter(
                ScannedCondition(kind=ConditionKind.EXCEPT, test=caught, negated=False, line=handler.lineno), node
            )
            if handler.name:
                inner = inner._replace(caught=state.caught | {handler.name})
            self.block(handler.body, inner)
        if node.orelse:
            line = self.keyword_line("else", node.orelse, node.body[-1].end_lineno or node.lineno)
            self.block(
                node.orelse,
                attempt.enter(ScannedCondition(kind=ConditionKind.ELSE, test="", negated=False, line=line), node),
            )
        if node.finalbody:
            last = node.orelse or (node.handlers[-1].body if node.handlers else node.body)
            line = self.keyword_line("finally", node.finalbody, last[-1].end_lineno or node.lineno)
            self.block(
                node.finalbody,
                state.enter(ScannedCondition(kind=ConditionKind.FINALLY, test="", negated=False, line=line), node),
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
                earlier.enter(
                    ScannedCondition(kind=ConditionKind.MATCH_CASE, test=test, negated=False, line=line), node
                ),
            )
            earlier = earlier.enter(
                ScannedCondition(kind=ConditionKind.MATCH_CASE, test=test, negated=True, line=line), node
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
        elif name is None and not isinstance(exc, ast.Call):
            self._skip(node, f"raises an expression, not a class: {self.one_line(target)}")
            return
        elif name is None:  # `raise type(err)(f"...: {err}")`: a class computed at run time, its message read
            name = self.one_line(target)
        elif not isinstance(exc, ast.Call) and not name[:1].isupper():
            self._skip(node, f"raises the value of a variable, not a class: {dotted}")
            return
        assert name is not None
        template, key = self.template(exc, state, self.printed_as(name))
        if not _encodable(template.message):
            self._skip(node, "its message holds a lone surrogate (an escape like \\ud800): no UTF-8 can carry it")
            return
        line = node.lineno
        column = self.column(node)
        start, end, code = window(self.lines, line, self.options.context, column)
        qualname = bounded(".".join(state.scope).removesuffix(".<locals>") or "<module>")
        extraction = ScannedExtraction(
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
            ScannedSite(
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
        """The sources of what `name` holds at the raise (see `resolve_name`), else of the module-level string
        constant it names, else nothing."""
        found = resolve_name(name, state.chain, self)
        if found or not state.defs or bound_in(name, state.defs):
            return found
        # A global: its value may lie in any statement of the module, which a rescan may not have parsed,
        # and may change while the function stays the same: such a file is never rescanned in pieces.
        self.globals_read = True
        constant = self.constant(name)
        return [self.segment(constant)] if constant is not None else []

    def constant(self, name: str) -> ast.expr | None:
        """The string literal the module binds `name` to, if it binds it once, to a string literal, and
        declares it `global` nowhere."""
        if name in self._constants:
            return self._constants[name]
        count = 0
        value: ast.expr | None = None
        declared = False
        for statement in self._spelling(name):
            for node in bindings(statement, name):
                count += bound_names(node).count(name)
            targets: list[ast.expr] = [statement.target] if isinstance(statement, ast.AnnAssign) else []
            targets = statement.targets if isinstance(statement, ast.Assign) else targets
            assigned = statement.value if isinstance(statement, ast.Assign | ast.AnnAssign) else None
            if (
                len(targets) == 1
                and isinstance(targets[0], ast.Name)
                and targets[0].id == name
                and isinstance(assigned, ast.Constant)
                and isinstance(assigned.value, str)
            ):
                value = assigned
            declared = declared or _declares(statement, name)
        found = self._constants[name] = value if count == 1 and not declared else None
        return found

    def printed_as(self, name: str) -> str:
        """The class whose `str()` an exception of class `name` prints with: for a class of this module that
        derives, one base at a time and overriding none of `__init__`, `__new__` and `__str__`, from a
        builtin whose `str()` is not the plain one (KeyError's repr, OSError's `[Errno N]`), that builtin;
        else `name` itself. A module's own class named like a builtin is followed too."""
        if self._classes is None:
            self._classes = {}
            for statement in self.module:
                if isinstance(statement, ast.ClassDef):
                    self._classes.setdefault(statement.name, []).append(statement)
        if name not in self._classes:  # the commonest case: a builtin, or a class from elsewhere
            return name
        found = self._printed.get(name)
        if found is None:
            found = self._printed[name] = self._follow(name, self._classes)
        return found

    def _follow(self, name: str, classes: Mapping[str, list[ast.ClassDef]]) -> str:
        chain: list[ast.ClassDef] = []
        current = name
        while current in classes:
            (definition, *others) = classes[current]
            if others or definition in chain or definition.keywords or len(definition.bases) != 1:
                return name
            base = definition.bases[0]
            if not isinstance(base, ast.Name):
                return name
            chain.append(definition)
            current = base.id
        printed = builtin_exception(current)
        if printed is None:
            return name
        if printed.__str__ is BaseException.__str__:  # plain: only a builtin's name taken changes anything
            return current if builtin_exception(name) is not None else name
        if any(definition.decorator_list for definition in chain) or any(
            _overrides_str(statement) for definition in chain for statement in definition.body
        ):
            return name
        # Bound once, by that class statement: `E = OtherError` elsewhere makes it anything.
        self.globals_read = True
        bound = sum(
            bound_names(node).count(name) for statement in self._spelling(name) for node in bindings(statement, name)
        )
        return current if bound == 1 else name

    def _spelling(self, name: str) -> Iterator[ast.stmt]:
        """The module's statements whose text spells `name`: only those can bind or declare it."""
        for statement in self.module:
            if self.spells(name, *extent(statement)):
                yield statement

    def spells(self, word: str, start: int, end: int) -> bool:
        """Whether lines `start` to `end` may spell the identifier `word`: they hold it, or one is not all
        ASCII (where an identifier may be spelled otherwise: NFKC makes fullwidth letters ASCII ones)."""
        return any(word in line or not line.isascii() for line in self.lines[start - 1 : end])

    def _skip(self, node: ast.Raise, reason: str) -> None:
        self.skipped.append(ScannedSkippedSite(path="", line=node.lineno, reason=reason))

    def template(self, exc: ast.expr, state: _State, name: str) -> tuple[Template, str | None]:
        """The raise's message template, and a digest of the text it is made from (None: no call)."""
        if not isinstance(exc, ast.Call):  # `raise E`: E() (a class whose message without arguments is its own)
            return message_template(error_class=name), None
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
        joined_names = _joined_names(exc) if self.spells("join", exc.lineno, exc.end_lineno or exc.lineno) else set()
        for joined in sorted(joined_names):
            filled = resolve_list(joined, state.chain)
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


def _overrides_str(statement: ast.stmt) -> bool:
    """Whether a statement of a class body defines (or assigns) what decides an exception's `str()`."""
    names = {"__init__", "__new__", "__str__"}
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        return statement.name in names
    return any(name in names for node in bindings(statement, None) for name in bound_names(node))


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
    extraction = site["extraction"]
    return Template(
        site["errorMessage"],
        site["messagePattern"],
        tuple(ScannedPlaceholder(**placeholder) for placeholder in extraction["placeholders"]),
        MessageKind(extraction["messageKind"]),
        tuple(extraction["warnings"]),
    )


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _as(visitor: Visitor, target: ast.expr | None) -> str:
    return f" as {visitor.one_line(target)}" if target is not None else ""


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


@functools.lru_cache(maxsize=4096)  # the same tests come back in every version of a file a history reads
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
