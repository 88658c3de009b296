# Match: a rendered error (or a log line) -> the templates of one or many catalogs that explain it, with values.
from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import chain
from typing import TYPE_CHECKING, Any, NamedTuple

import ahocorasick
import re2

from extractor.errors import CatalogError
from extractor.util.progress import warn

if TYPE_CHECKING:  # pydantic's import is a good part of a quick `match`: the models are only read here
    from extractor.model.records import CatalogLine

__all__ = [
    "CATCH_ALL",
    "How",
    "Match",
    "MatchResult",
    "Matcher",
    "Site",
    "Template",
    "literal_pieces",
    "templates_of",
]

# A template with less literal text than this is a catch-all (`f"{what}: {detail}"`, `f"Invalid {x}"`): it
# can be shown as a weak answer, never a confident one. `scripts/recall.py --threshold-table` shows recall
# and false matches on real vLLM texts for thresholds from 4 to 30 (README).
CATCH_ALL = 12
MIN_SCORE = 0.5  # share of the input's characters a confident answer's literal text must explain
# Literal characters a cut paste must show to match as a prefix (unless it shows all the template has).
MIN_PARTIAL = 40
MAX_LINE = 16_384  # characters of one input looked at: the work per line is bounded whatever the log holds
MAX_CANDIDATES = 64  # templates tried per variant of a line, those sharing most literal text first
_MIN_KEY = 4  # literal fragments shorter than this do not select candidates
_CUT_KEY = 24  # the start of a longer fragment is a key of its own

# An exception class as a printed error names it (`ValueError`, `vllm.errors.ConfigError`, bare `Exception`),
# the module path apart; and the class that prefixes a printed error, `ValueError: ...`.
_CLASS = r"(?<![\w.])(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Z]\w*(?:Error|Exception|Exit|Warning)|Exception|Warning)"
_CLASS_PREFIX = re.compile(_CLASS + r"(?::\s?|$)")
_ERROR_LEVEL = re.compile(r"^\W{0,3}(?:\(\w[^)]*\)\s*)?(?:ERROR|CRITICAL|FATAL)\b")
_ANSI = re.compile(r"(?:\x1b|\^\[)\[[0-9;?]*[A-Za-z]")
_ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-fA-F]+|[A-Za-z]+);")
_LOG_PREFIX = re.compile(
    r"^(?:\(\w[^)]*\)\s*)?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[[^\]]*\]\s?",
    re.M,
)
_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019", "`": "`"}
_PYDANTIC = re.compile(r"(?:Value error|Assertion failed), ")
_MESSAGE_KEY = re.compile(r"""['"](?:message|detail|error)['"]\s*:\s*(?P<q>['"])(?P<msg>(?:\\.|(?!(?P=q)).)*)(?P=q)""")
_QUOTED = re.compile(r"""(?P<q>['"])(?P<msg>(?:\\.|(?!(?P=q)).){20,})(?P=q)""")
_HTTP = re.compile(r"\d{3} ")
_TRACEBACK = "Traceback (most recent call last)"
_RAISE = re.compile(r"^\s*raise\s+(?P<cls>[\w.]+)\s*\((?P<arg>.*)\)\s*(?:from\s+\w+)?\s*$", re.S)
_GROUP = re.compile(r"\(\?P<(\w+)>\.\*\?\)")
_COUNT = re.compile(r"\{\d+(?:,\d*)?\}\??")
_TRAILING_SPACE = re.compile(r"(?:\\?\s)+$")
_ESCAPED = re.compile(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|.)", re.S)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_REPR_START = re.compile(_CLASS + r"\((?P<q>['\"])")  # `ValueError('...')`
MAX_SEGMENTS = 8  # errors of a multi-line input matched one by one
_SEGMENT_LINES = 50  # lines a message may span
_NOT_A_MESSAGE = (_TRACEBACK, "During handling of the above exception", "The above exception was", 'File "')


class How(StrEnum):
    """How an input met its template: as printed, once cleaned, as a cut prefix, or as the raise's source."""

    EXACT = "exact"
    NORMALIZED = "normalized"
    PARTIAL = "partial"
    SOURCE = "source"


_HOW_RANK = {How.EXACT: 3, How.NORMALIZED: 3, How.SOURCE: 2, How.PARTIAL: 1}


class Site(NamedTuple):
    """Where catalogs hold a template: the record there, and the catalogs (releases) that hold it there."""

    releases: tuple[str, ...]
    filePath: str
    lineNumber: int
    id: str
    slug: str
    githubUrl: str
    function: str


@dataclass(slots=True)
class Template:
    """One message template with every site, in every catalog given, that raises it."""

    errorClass: str
    errorMessage: str
    messagePattern: str
    groups: tuple[tuple[str, str], ...]  # (capture group, placeholder expression), in message order
    messageSource: str | None
    sites: list[Site]
    releases: list[str] = field(default_factory=list)  # the labels of the catalogs holding it, in their order
    pieces: tuple[str, ...] = ()  # literal text around the placeholders, len(groups) + 1 of them
    literal: int = 0
    # Each placeholder's text in the template, and whether it starts right where the one before ends
    # (`{a}{b}`): such a run could split its text anywhere, so it gives one value.
    texts: tuple[str, ...] = ()
    touching: tuple[bool, ...] = ()
    compiled: Any = None
    top: Site | None = None

    def __post_init__(self) -> None:
        runs, names, plain = read_pattern(self.messagePattern)
        if plain and tuple(names) == tuple(g for g, _ in self.groups):
            self.pieces = tuple(runs)
        else:  # quotes either way, optional parts, alternatives (or a hand-made pattern): no prefix matching
            self.pieces = ()
        self.literal = sum(map(len, self.pieces or self.fragments()))
        if len(self.touching) != len(self.groups):  # made by hand, not from a catalog line: none touch
            self.texts = tuple(f"{{{expression}}}" for _, expression in self.groups)
            self.touching = (False,) * len(self.groups)

    def fragments(self) -> tuple[str, ...]:
        """The literal runs of the pattern: its pieces, or for a pattern with other syntax (a quote either
        way, optional parts, alternatives) the text between it (each alternative a fragment of its own)."""
        if self.pieces:
            return self.pieces
        return tuple(run for run in read_pattern(self.messagePattern)[0] if run)

    @property
    def needed(self) -> tuple[str, ...]:
        """The literal text a whole rendering shows, whatever happened to backticks and a final period."""
        return tuple(q for p in self.pieces if (q := p.replace("`", "").strip().removesuffix(".")))

    @property
    def catch_all(self) -> bool:
        return self.literal < CATCH_ALL

    def newest(self) -> Site:
        """The site in the newest catalog holding the template (the first in file order there), found once."""
        if self.top is None:
            held = [s for s in self.places() if not self.releases or self.releases[-1] in s.releases]
            self.top = min(held, key=lambda s: (s.filePath, s.lineNumber))
        return self.top

    def places(self) -> list[Site]:
        """The sites, made from the plain rows a stored index holds on first use (most are never used)."""
        if self.sites and type(self.sites[0]) is tuple:
            self.sites = [Site._make(row) for row in self.sites]
        return self.sites

    def __getstate__(self) -> tuple[Any, ...]:
        rows = [tuple(site) for site in self.sites]  # plain tuples load several times faster than NamedTuples
        fields = (self.errorClass, self.errorMessage, self.messagePattern, self.groups, self.messageSource)
        return (*fields, rows, self.releases, self.pieces, self.literal, self.texts, self.touching)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        (self.errorClass, self.errorMessage, self.messagePattern, self.groups, self.messageSource) = state[:5]
        self.sites, self.releases, self.pieces, self.literal, self.texts, self.touching = state[5:]
        self.compiled = self.top = None

    def regex(self) -> Any:
        """Compile on first use (RE2: linear in the input), the template's trailing whitespace optional."""
        if self.compiled is None:
            self.compiled = _compiled(f"(?:{self._body()})\\s*$")
        return self.compiled

    def open_regex(self) -> Any:
        """The same, with anything after it (compiled on each use: it is tried only when the other failed)."""
        return _compiled(f"(?:{self._body()})")

    def _body(self) -> str:
        return _TRAILING_SPACE.sub("", self.messagePattern).replace("`", "`?")


def _compiled(pattern: str) -> Any:
    options = re2.Options()
    options.dot_nl = True
    options.log_errors = False
    return re2.compile(pattern, options)


def read_pattern(pattern: str) -> tuple[list[str], list[str], bool]:
    """Read a messagePattern as literal runs between its syntax: the runs (escapes undone), the names of its
    `(?P<name>.*?)` groups in order, and whether nothing else is syntax (`plain`: then the runs are the text
    around those groups, one more than them). A literal character a quantifier makes optional (`\\\\?`,
    `x*`) is no part of a run, as a rendering need not show it; a character class (`['"]`) ends a run."""
    runs: list[str] = []
    names: list[str] = []
    run: list[str] = []
    plain = True
    position, end = 0, len(pattern)
    while position < end:
        char = pattern[position]
        group = _GROUP.match(pattern, position) if char == "(" else None
        if group is not None:
            runs.append("".join(run))
            run, position = [], group.end()
            names.append(group[1])
            continue
        escaped_class = char == "\\" and pattern[position + 1 : position + 2].isalnum()  # `\\d`, `\\s`, `\\b`
        plain = plain and char not in "()|[.^$?*+" and not escaped_class
        if char == "\\" and position + 1 < end and not pattern[position + 1].isalnum():
            run.append(pattern[position + 1])  # an escaped character stands for itself
            position += 2
            continue
        counted = _COUNT.match(pattern, position) if char == "{" else None
        if char in "?*+" or counted is not None:  # the atom before is optional or repeated: not needed text
            plain = False
            if run:
                run.pop()
            position = counted.end() if counted is not None else position + 1
            if counted is None and pattern[position : position + 1] in ("?", "+"):  # lazy or possessive
                position += 1
        elif char == "[":  # a class, to its closing bracket (one right after `[` or `[^` is inside it)
            close = position + 1
            close += pattern[close : close + 1] == "^"
            close += pattern[close : close + 1] == "]"
            while close < end and pattern[close] != "]":
                close += 2 if pattern[close] == "\\" else 1
            position = close + 1
        elif char in "()|.^$" or char == "\\":  # groups, alternatives, anchors, any character, `\\d`-like classes
            position += 1
            if char == "(" and pattern[position : position + 1] == "?":  # `(?:`, `(?P<name>`, `(?=`...
                inner = re.match(r"\?(?:P<\w+>|[:=!]|<[=!])", pattern[position:])
                position += inner.end() if inner else 1
            elif char == "\\":
                position += 1
        else:
            run.append(char)
            position += 1
            continue
        runs.append("".join(run))
        run = []
    runs.append("".join(run))
    if not plain:
        runs = [text for text in runs if text]
    return runs, names, plain


class Row(NamedTuple):
    """What an index reads of a catalog line: its template and where it is raised."""

    errorClass: str
    errorMessage: str
    messagePattern: str
    placeholders: tuple[tuple[str, str, int, int], ...]  # (group, expression, start, end) in message order
    messageSource: str | None
    place: tuple[str, int, str, str, str, str]  # a Site's fields after its releases

    @classmethod
    def of(cls, line: CatalogLine) -> Row:
        """The row of a validated line."""
        record, extraction = line.record, line.extraction
        return cls(
            record.errorClass,
            record.errorMessage,
            record.messagePattern,
            tuple((p.group, p.expression, p.start, p.end) for p in extraction.placeholders),
            extraction.messageSource,
            (record.filePath, record.lineNumber, record.id, record.slug, record.githubUrl, extraction.function),
        )

    @classmethod
    def of_data(cls, line: Mapping[str, Any]) -> Row:
        """The row of a line as data, as this run built it (see LoadedCatalog.data)."""
        record, extraction = line["record"], line["extraction"]
        return cls(
            record["errorClass"],
            record["errorMessage"],
            record["messagePattern"],
            tuple((p["group"], p["expression"], p["start"], p["end"]) for p in extraction["placeholders"]),
            extraction.get("messageSource"),
            (
                record["filePath"],
                record["lineNumber"],
                record["id"],
                record["slug"],
                record["githubUrl"],
                extraction["function"],
            ),
        )


def templates_of(lines: Iterable[CatalogLine], *, release: str = "", origin: str = "") -> list[Template]:
    """Group catalog lines by template (class and pattern), checking each pattern compiles with its groups.

    `origin` names the catalog file in errors, with the line's number.
    """
    return templates_of_rows(map(Row.of, lines), release=release, origin=origin)


def templates_of_rows(rows: Iterable[Row], *, release: str = "", origin: str = "") -> list[Template]:
    """`templates_of`, over what it reads of each line."""
    by_key: dict[tuple[str, str], Template] = {}
    too_large: set[tuple[str, str]] = set()
    for number, row in enumerate(rows, start=1):
        key = (row.errorClass, row.messagePattern)
        if key in too_large:
            continue
        template = by_key.get(key)
        if template is None:
            held = row.placeholders
            groups = tuple((group, expression) for group, expression, _, _ in held)
            template = Template(row.errorClass, row.errorMessage, row.messagePattern, groups, row.messageSource, [])
            template.texts = tuple(row.errorMessage[start:end] for _, _, start, end in held)
            template.touching = tuple(bool(k) and held[k - 1][3] == p[2] for k, p in enumerate(held))
            if not _check(template, where=f"{origin or 'catalog'}:{number}"):
                too_large.add(key)
                continue
            by_key[key] = template
        if release and template.releases[-1:] != [release]:
            template.releases.append(release)
        template.sites.append(Site((release,) if release else (), *row.place))
    return list(by_key.values())


def _check(template: Template, *, where: str) -> bool:
    """Refuse a template whose pattern is no pattern a catalog holds; False (said in a warning) for one
    that is, but too large for the linear-time matcher's memory (a message of a megabyte in one raise):
    matching goes on without it, as the catalog is the extractor's own."""
    try:
        compiled = template.regex()
    except re2.error as error:
        try:
            re.compile(template.messagePattern)
        except re.error as python_error:
            raise CatalogError(f"{where}: messagePattern does not compile: {python_error}") from None
        detail = error.args[0].decode(errors="replace") if error.args and isinstance(error.args[0], bytes) else error
        if "pattern too large" in str(detail):
            warn(
                f"{where}: a messagePattern of {len(template.messagePattern):,} characters is too large for the "
                "linear-time matcher: matching goes on without that record"
            )
            return False
        raise CatalogError(f"{where}: messagePattern uses what a linear-time matcher cannot run: {detail}") from None
    names = compiled.groupindex  # (made anew at each look: once, or a pattern of N groups costs N²)
    unknown = [group for group, _ in template.groups if group not in names]
    if unknown:
        raise CatalogError(f"{where}: messagePattern has no group named {unknown[0]!r} (a placeholder names it)")
    return True


def literal_pieces(line: CatalogLine) -> list[str]:
    """Split a template into its literal text, dropping the placeholders."""
    message = line.record.errorMessage
    pieces, position = [], 0
    for placeholder in line.extraction.placeholders:
        pieces.append(message[position : placeholder.start])
        position = placeholder.end
    pieces.append(message[position:])
    return [piece for piece in pieces if piece]


@dataclass(frozen=True, slots=True)
class Match:
    """One template that explains an input, with the value each placeholder took and how it matched."""

    template: Template
    values: dict[str, str]
    how: How
    score: float  # share of the input's characters the template's literal text explains
    normalized: tuple[str, ...] = ()
    error_class: str | None = None
    literal: int = 0  # characters of the template's literal text the input shows (optional parts may not print)
    # The whole message after the input's `SomeError: ` is a rendering of the template, from fixed text on,
    # with as much literal text as a cut paste must show (MIN_PARTIAL), and the classes agree: long values
    # (a list of choices, a traceback) then do not make it less certain.
    anchored: bool = False

    @property
    def confident(self) -> bool:
        enough = not self.template.catch_all and self.literal >= CATCH_ALL
        return enough and (self.score >= MIN_SCORE or self.anchored)

    @property
    def site(self) -> Site:
        """The site in the newest catalog given (the first in file order there)."""
        return self.template.newest()

    def rank(self) -> tuple[bool, bool, bool, int, bool, int]:
        return (
            self.confident,
            self.template.errorClass == self.error_class,
            # A template that explains the text to its end (even cut) beats one with text left after it.
            "trailing-text" not in self.normalized,
            _HOW_RANK[self.how],
            "period" not in self.normalized,  # a template met as printed beats one that needed a period added
            self.literal,
        )

    def releases(self) -> list[str]:
        return list(self.template.releases)

    def to_json(self, *, sites: bool = True) -> dict[str, Any]:
        site = self.site
        document: dict[str, Any] = {
            "id": site.id,
            "slug": site.slug,
            "filePath": site.filePath,
            "lineNumber": site.lineNumber,
            "githubUrl": site.githubUrl,
            "errorMessage": self.template.errorMessage,
            "values": self.values,
            "how": str(self.how),
            "partial": self.how is How.PARTIAL,
            "score": round(self.score, 3),
            "normalized": list(self.normalized),
        }
        releases = self.releases()
        if releases:
            document["releases"] = releases
        if sites and (releases or len(self.template.places()) > 1):  # every place, when there is another
            document["sites"] = [
                {"releases": list(s.releases), "filePath": s.filePath, "lineNumber": s.lineNumber, "id": s.id}
                for s in self.template.places()
            ]
        return document


@dataclass(frozen=True)
class MatchResult:
    """What one input yielded: whether it looks like an error, its confident matches, else its weak ones."""

    input: str
    is_error: bool
    matches: tuple[Match, ...] = field(default=())
    weak: tuple[Match, ...] = field(default=())
    # The class of a message Python itself prints (`No module named 'x'`): why its answers are weak ones.
    python: str | None = None

    @property
    def holds_message(self) -> bool:
        return self.is_error or bool(self.matches)

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"input": self.input, "matches": [m.to_json() for m in self.matches]}
        if self.weak:
            document["weak"] = [m.to_json(sites=False) for m in self.weak]
        if self.python is not None:
            document["python"] = self.python_note
        return document

    @property
    def python_note(self) -> str:
        return f"Python itself prints this {self.python}: the raise may be the interpreter's"


# Messages the interpreter prints itself, by class: a template that prints the same (a re-raise written to
# look like Python's own) cannot tell that paste from Python's, so its answer is a weak one.
_PYTHON_OWN: dict[str, re.Pattern[str]] = {
    cls: re.compile("|".join(f"(?:{pattern})" for pattern in patterns))
    for cls, patterns in {
        "ModuleNotFoundError": [r"No module named '[^']+'"],
        "ImportError": [r"No module named '[^']+'", r"cannot import name '[^']+' from '[^']+'(?: \(.*\))?"],
        "AttributeError": [
            r"(?:partially initialized )?module '[^']+' has no attribute '[^']+'.*",
            r"'[^']+' object has no attribute '[^']+'.*",
            r"type object '[^']+' has no attribute '[^']+'",
        ],
        "NameError": [r"name '[^']+' is not defined.*"],
        "IndexError": [r"(?:list|tuple|string|range object) index out of range"],
        "ZeroDivisionError": [r"(?:integer |float )?division(?: or modulo)? by zero"],
        "RecursionError": [r"maximum recursion depth exceeded.*"],
        "TypeError": [
            r"\S+\(\) takes (?:from )?\d+ (?:to \d+ )?positional arguments? but \d+ (?:were|was) given",
            r"\S+\(\) got an unexpected keyword argument '[^']+'",
            r"\S+\(\) missing \d+ required (?:positional|keyword-only) arguments?: .*",
            r"unsupported operand type\(s\) for .*",
            r"'[^']+' object is not (?:callable|subscriptable|iterable)",
        ],
        "ValueError": [r"invalid literal for int\(\) with base \d+: .*", r"(?:too many|not enough) values to unpack.*"],
    }.items()
}


def python_prints(text: str) -> str | None:
    """If the error a text shows (`SomeError: message`, the message on one line) is one the interpreter
    prints itself, its class."""
    prefix = _CLASS_PREFIX.search(text)
    if prefix is None:
        return None
    name = prefix["cls"].rpartition(".")[2]
    own = _PYTHON_OWN.get(name)
    message = text[prefix.end() :].split("\n", 1)[0].strip()
    if own is None or not message or own.fullmatch(message) is None:
        return None
    return name


@dataclass(frozen=True, slots=True)
class _Variant:
    text: str
    steps: tuple[str, ...]


def _unquote(text: str) -> str:
    """The text a JSON or Python string literal's body stands for, its escapes undone in one pass (so `\\\\n`
    is a backslash and an n); an escape neither knows is kept as it is."""
    if "\\" not in text:
        return text
    out = _ESCAPED.sub(_unescape, text)
    if "\\u" in text or "\\U" in text:  # a JSON surrogate pair is one character; a lone half is not text
        out = out.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return out


def _unescape(found: re.Match[str]) -> str:
    escape = found[1]
    if len(escape) > 1:
        code = int(escape[1:], 16)
        return chr(code) if code < 0x110000 else found[0]
    return _SIMPLE_ESCAPES.get(escape, escape if escape in "\\'\"/" else found[0])


def _exception_repr(text: str) -> _Variant | None:
    """`SomeError('message')` (an exception's repr, as a log line shows one) ending the text: as `SomeError:
    message`. String operations, as for every part of a paste that may be long."""
    for start in _REPR_START.finditer(text):
        body = text[start.end() :].rstrip()
        if body.endswith(start["q"] + ")") and len(body) >= 2:
            return _Variant(f"{start['cls']}: {_unquote(body[:-2])}", ("embedded",))
    return None


def _cleaned(text: str, *, entities: bool = True) -> _Variant:
    """Undo what terminals, Markdown, HTML (unless not `entities`) and quoting did to a paste, naming each
    step taken."""
    steps: list[str] = []
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        steps.append("newlines")
    if _ANSI.search(text):
        text, _ = _ANSI.subn("", text)
        steps.append("ansi")
    if entities and "&" in text and _ENTITY.search(text):
        text = html.unescape(text)
        steps.append("html")
    if "\n" in text and _LOG_PREFIX.search(text, 1):
        text = _LOG_PREFIX.sub("", text)
        steps.append("log-prefix")
    if "\n" in text and (unprefixed := _without_line_prefix(text)) is not None:
        text = unprefixed
        steps.append("line-prefix")
    stripped = text.strip()
    markdown = re.sub(r"^(?:>\s?|[-*]\s+)+", "", stripped)
    if markdown.startswith("```"):  # string operations: a pattern with `\s*...$` is quadratic on spaces
        markdown = markdown[3:].lstrip("abcdefghijklmnopqrstuvwxyz").strip()
    if markdown.endswith("```"):
        markdown = markdown[:-3].rstrip()
    while len(markdown) > 2 and markdown[:2] in ("**", "__") and markdown.endswith(markdown[:2]):
        markdown = markdown[2:-2].strip()
    if markdown != stripped:
        steps.append("markdown")
    quoted = markdown
    while len(quoted) > 2 and quoted[0] in _QUOTES and quoted.endswith(_QUOTES[quoted[0]]):
        quoted = quoted[1:-1].strip()
    if quoted != markdown:
        steps.append("quotes" if not markdown.startswith("`") else "markdown")
    cut = quoted.removesuffix("...").removesuffix("\u2026").rstrip() if quoted.endswith(("...", "\u2026")) else quoted
    if cut != quoted:
        steps.append("ellipsis")
    return _Variant(cut, tuple(dict.fromkeys(steps)))


def _without_line_prefix(text: str) -> str | None:
    """The text without what starts each of its lines the same way, give or take digits (a process tag, a
    time stamp, a quote mark: `(EngineCore_DP0 pid=1) `, `2025-01-02 12:34:56,789 - vllm - ERROR - `, `> `),
    up to a space; None when the lines share no such start (indentation and a class name are not one)."""
    lines = text.split("\n")
    shown = [line for line in lines if line.strip()]
    if len(shown) < 2:
        return None
    shapes = [_DIGITS.sub("0", line[:_PREFIX_MAX]) for line in shown]
    first, last = min(shapes), max(shapes)  # what all share, the first and the last in order share
    common = first[: next((k for k, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), len(first))]
    cut = common.rfind(" ") + 1
    if not common[:cut].strip() or _CLASS_PREFIX.search(common[:cut]):
        return None
    return "\n".join(line[cut:] if line.strip() else line for line in lines)


_DIGITS = re.compile(r"\d")
_PREFIX_MAX = 80  # characters of a line its prefix may take


def _segments(text: str) -> list[tuple[str, str]]:
    """The errors of a text of several lines (a chained traceback, a log): each line that names an
    exception class, alone and then with the lines that follow it up to a blank line, a traceback or the
    next such line (a message may span lines). At most MAX_SEGMENTS of them."""
    lines = text.split("\n")
    out: list[tuple[str, str]] = []
    for number, line in enumerate(lines):
        if len(out) == MAX_SEGMENTS:
            break
        if not _CLASS_PREFIX.search(line):
            continue
        end = number + 1
        while end < len(lines) and end - number <= _SEGMENT_LINES:
            following = lines[end]
            stop = not following.strip() or following.lstrip().startswith(_NOT_A_MESSAGE)
            if stop or _CLASS_PREFIX.match(following):
                break
            end += 1
        out.append((line, "\n".join(lines[number:end])))
    return out


def _pydantic_errors(text: str) -> list[str]:
    """The messages of pydantic's `Value error, <message> [type=value_error, ...]` lines (string search:
    no pattern here may backtrack over a long line)."""
    out = []
    for line in text.splitlines():
        found = _PYDANTIC.search(line)
        if found:
            message = line[found.end() :]
            cut = message.rfind(" [type=")
            out.append((message[:cut] if cut >= 0 else message).strip())
    return out


def _variants(base: _Variant) -> Iterator[_Variant]:
    """The input (as `_cleaned` made it) and every message it may hold inside another text. What a known
    wrapper holds comes first (an exception's repr ending it, a JSON or dict body's message, pydantic's
    `Value error, ...`, an HTTP status line): matched as pasted, a template ending in a value would take the
    wrapper's tail into that value. Guesses (any long quoted text, a traceback's tail) come after it."""
    quoted = _exception_repr(base.text)
    if quoted is not None:
        yield _Variant(quoted.text, (*base.steps, *quoted.steps))
    for key in dict.fromkeys(m["msg"] for m in _MESSAGE_KEY.finditer(base.text)):
        yield _Variant(_unquote(key), (*base.steps, "embedded"))
    for error in _pydantic_errors(base.text)[:1]:
        yield _Variant(error, (*base.steps, "pydantic"))
    if _HTTP.match(base.text):
        message = base.text[4:].strip()
        message = message[:-4].rstrip() if message.endswith(" None") else message
        yield _Variant(message, (*base.steps, "http"))
    yield base
    guesses = sorted((m["msg"] for m in _QUOTED.finditer(base.text)), key=len, reverse=True)[:3]
    for message in dict.fromkeys(guesses):
        yield _Variant(_unquote(message), (*base.steps, "embedded"))
    before, found, after = base.text.rpartition(_TRACEBACK)
    if found and not after.strip(": \n"):
        yield _Variant(before.rstrip().removesuffix(",").rstrip(), (*base.steps, "embedded"))
    # What editors and chat clients did to the characters, and a terminal's wrapping: after the text as it
    # is (a message may hold curly quotes, double spaces or line breaks of its own).
    typed = _typed(base.text)
    if typed != base.text:
        yield _Variant(typed, (*base.steps, "characters"))
    if "\n" in typed:
        lines = [line.strip() for line in typed.split("\n")]
        yield _Variant(" ".join(line for line in lines if line), (*base.steps, "line-breaks"))
        yield _Variant("".join(lines), (*base.steps, "line-breaks"))


# Characters editors, chat clients and web pages put for plain ones: curly quotes, spaces that do not break,
# zero-width ones; and the UTF-8 of curly quotes read as Windows-1252 (`â€™`).
_TYPED = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " ", "\u202f": " ", "\u2007": " ",
     "\u200b": None, "\u200c": None, "\u200d": None, "\u2060": None, "\ufeff": None}
)  # fmt: skip
_MOJIBAKE = {"\u00e2\u20ac\u2122": "'", "\u00e2\u20ac\u02dc": "'", "\u00e2\u20ac\u0153": '"', "\u00e2\u20ac\ufffd": '"'}
_SPACES = re.compile(r"(?<=\S) {2,}(?=\S)")


def _typed(text: str) -> str:
    """The text with curly quotes, odd spaces and their mojibake made plain ASCII, and runs of spaces
    between words made one."""
    if "\u00e2\u20ac" in text:
        for bad, good in _MOJIBAKE.items():
            text = text.replace(bad, good)
        text = text.replace("\u00e2\u20ac", '"')  # `”` read as Windows-1252 ends in a byte it does not map
    text = text.translate(_TYPED)
    return _SPACES.sub(" ", text) if "  " in text else text


class Matcher:
    """Finds the templates that explain a text, trying only those that share literal text with it."""

    def __init__(self, templates: Sequence[Template]) -> None:
        self.templates = list(templates)
        self.by_class: dict[str, list[int]] = {}
        self.by_source: dict[str, list[int]] = {}
        self.automaton = ahocorasick.Automaton()
        keys: dict[str, list[int]] = {}
        for index, template in enumerate(self.templates):
            fragments = {p for p in template.fragments() if len(p.strip()) >= _MIN_KEY}
            # A cut paste ends inside some piece: its start still selects the template.
            fragments |= {p[:_CUT_KEY] for p in fragments if len(p) > _CUT_KEY}
            for fragment in fragments:
                keys.setdefault(fragment, []).append(index)
            if not fragments:
                self.by_class.setdefault(template.errorClass, []).append(index)
            if template.messageSource:
                self.by_source.setdefault(_squash(template.messageSource), []).append(index)
        for key, indexes in keys.items():
            self.automaton.add_word(key, (len(key), tuple(indexes)))
        if keys:
            self.automaton.make_automaton()
        self._indexed = bool(keys)

    @classmethod
    def of_lines(cls, lines: Iterable[CatalogLine], *, origin: str = "") -> Matcher:
        return cls(templates_of(lines, origin=origin))

    def candidates(self, text: str) -> list[int]:
        """The templates sharing most literal text with `text`, at most MAX_CANDIDATES of them."""
        if not self._indexed:
            return []
        shared: dict[int, int] = {}
        seen: set[int] = set()  # a fragment counts once however often the text repeats it
        for _, (length, indexes) in self.automaton.iter(text):
            if id(indexes) in seen:
                continue
            seen.add(id(indexes))
            for index in indexes:
                shared[index] = shared.get(index, 0) + length
        ranked = sorted(shared, key=lambda i: (-shared[i], i))
        return ranked[:MAX_CANDIDATES]

    def match(self, text: str) -> MatchResult:
        """Match one input (a message, a log line, a paste, a `raise` line) against the templates."""
        stripped = text.rstrip("\r\n")[:MAX_LINE]
        prefix = _CLASS_PREFIX.search(stripped)
        is_error = prefix is not None or bool(_ERROR_LEVEL.match(stripped))
        source = _RAISE.match(stripped)
        base: _Variant | None = None  # the paste cleaned, once it is
        if source:
            found = [
                Match(template, {}, How.SOURCE, 1.0, (), template.errorClass, template.literal)
                for template in (self.templates[i] for i in self.by_source.get(_squash(source["arg"]), []))
                if template.errorClass == source["cls"].rpartition(".")[2]
            ]
            confident, weak = _best(found)
        elif len(errors := _pydantic_errors(stripped)) > 1:  # `N validation errors for X`: each
            confident, weak = (), ()
            for error in errors:
                one, other = _best(self._found([_Variant(error.strip(), ("pydantic",))]))
                confident, weak = confident + one, weak + other
            weak = () if confident else weak
        else:
            base = _cleaned(stripped)
            # A message may hold what reads as an HTML entity (`&amp;`): as typed, last.
            typed = [_cleaned(stripped, entities=False)] if "html" in base.steps else []
            confident, weak = _best(self._found(chain(_variants(base), *map(_variants, typed))))
            if "\n" in base.text:
                # Several lines: each error they hold, on its own, when the whole answered nothing, when
                # they hold several errors (a cause, then what it caused: each is answered, in order), or
                # when a value took lines a message of one line cannot hold (the log that followed it), or
                # text was left after the message.
                segments = _segments(base.text)
                unsure = any(_spills(m) or "trailing-text" in m.normalized for m in confident)
                if not confident or len(segments) > 1 or unsure:
                    each = self._segments(segments, base.steps)
                    if each or not confident:
                        confident, weak = each, (() if each else weak)
        python = python_prints((base if base is not None else _cleaned(stripped)).text) if confident or weak else None
        if python is not None and all(m.template.errorClass == python for m in (*confident, *weak)):
            confident, weak = (), _in_file_order((*confident, *weak))
            return MatchResult(stripped, True, confident, weak, python)
        if not confident and len(text) > MAX_LINE:  # a long paste's error is often at its end
            tail = _cleaned(text.rstrip("\r\n")[-MAX_LINE:])
            each = self._segments(_segments(tail.text), (*tail.steps, "tail")) if "\n" in tail.text else ()
            confident, weak = (each, ()) if each else (confident, weak)
        return MatchResult(stripped, is_error or bool(confident), confident, weak)

    def _segments(self, segments: list[tuple[str, str]], steps: tuple[str, ...]) -> tuple[Match, ...]:
        """The confident matches of each error of a text of several lines, in the order they come."""
        confident: tuple[Match, ...] = ()
        for texts in segments:
            tried = (_Variant(text, (*steps, "segment")) for text in texts)
            one, _ = _best(self._found(v for variant in tried for v in _variants(variant)))
            confident += tuple(m for m in one if all(m.template is not c.template for c in confident))
        return confident

    def _found(self, variants: Iterable[_Variant]) -> list[Match]:
        """Each template once, at its best over the variants; stop at the first variant answered with confidence."""
        found: dict[int, Match] = {}  # by id() of the template
        for variant in variants:
            for match in self._try(variant):
                key = id(match.template)
                if key not in found or match.rank() > found[key].rank():
                    found[key] = match
            # A match that left text after it is a last resort: a variant met whole (a wrapper's message) wins.
            if any(m.confident and "trailing-text" not in m.normalized for m in found.values()):
                break
        return list(found.values())

    def _try(self, variant: _Variant) -> list[Match]:
        text = variant.text
        prefix = _CLASS_PREFIX.search(text)
        error_class = prefix["cls"].rpartition(".")[2] if prefix else None
        # What follows `SomeError: `, wherever it is: a log prefix or a title's `[Bug]: ` may come first.
        message = text[prefix.end() :] if prefix else None
        indexes = self.candidates(text)
        if error_class is not None:
            indexes += self.by_class.get(error_class, [])
        out: list[Match] = []
        for index in indexes:
            template = self.templates[index]
            match = self._one(template, text, message, variant.steps, error_class)
            if match is not None:
                out.append(match)
        return out

    def _one(
        self, template: Template, text: str, message: str | None, steps: tuple[str, ...], error_class: str | None
    ) -> Match | None:
        if not template.messagePattern and (message if message is not None else text).strip():
            return None  # a raise with no message prints none: `SomeError: text` is not it
        # Every literal piece (give or take backticks and a final period) must be in the text for a whole
        # match: checking that first spares compiling the patterns of most candidates.
        bare = text.replace("`", "") if "`" in text else text
        whole = not template.pieces or all(piece in bare for piece in template.needed)
        period = _with_period(template, message if message is not None else text)
        subjects = ((message, (), True), (text, (), False), (period, ("period",), message is not None))
        best: Match | None = None
        for subject, added, of_message in subjects if whole else ():
            if subject is None:
                continue
            regex = template.regex()
            found = regex.fullmatch(subject) if subject is message else regex.search(subject)
            if found is None:
                continue
            match = self._made(template, found, (*steps, *added), error_class, of_message=of_message)
            if best is None or (match.confident, match.score) > (best.confident, best.score):
                best = match
        if best is None and whole and template.pieces and template.pieces[-1].strip() and "ellipsis" not in steps:
            # Text after the whole message, on its line (a closing backtick, `</code>`, "Any idea?"): where
            # the template ends in its own text, that text says where the message ends. After `SomeError: `,
            # the message must start right there. Lines after it are the segments' (see `match`); what
            # comes before a cut (`...`) is the start of a longer message.
            subject = message if message is not None else text
            found = template.open_regex().search(subject)
            if found is not None and (message is None or found.start() == 0) and "\n" not in subject[found.end() :]:
                best = self._made(template, found, (*steps, "trailing-text"), error_class, of_message=True)
        if best is not None:
            return best
        if template.pieces and not template.catch_all:
            return _prefix(template, message if message is not None else text, steps, error_class)
        return None

    @staticmethod
    def _made(
        template: Template, found: Any, all_steps: tuple[str, ...], error_class: str | None, *, of_message: bool
    ) -> Match:
        """The match a found rendering of the template makes."""
        span = found.end() - found.start()
        if "`" in template.errorMessage and found.group().count("`") < template.errorMessage.count("`"):
            all_steps = (*all_steps, "backticks")
        how = How.NORMALIZED if all_steps else How.EXACT
        if "ellipsis" in all_steps and _ends_in_value(template):  # the cut fell inside the last value
            how = How.PARTIAL
        literal = template.literal if template.pieces else min(template.literal, span - _captured(template, found))
        score = min(1.0, literal / span) if span else 0.0
        anchored = of_message and found.start() == 0 and error_class == template.errorClass
        anchored = anchored and literal >= MIN_PARTIAL and _fixed_start(template, found)
        return Match(template, _values(template, found), how, score, all_steps, error_class, literal, anchored)


def _values(template: Template, found: Any) -> dict[str, str]:
    """The text each placeholder took (none for a part that did not print); a run of touching placeholders
    (`{a}{b}`) is one value, under the run's template text."""
    values: dict[str, str] = {}
    count = len(template.groups)
    run: list[int] = []
    for k in range(count + 1):
        if k < count and run and template.touching[k]:
            run.append(k)
            continue
        names = [template.groups[i][0] for i in run]
        if len(run) == 1 and (value := found.group(names[0])) is not None:
            values.setdefault(template.groups[run[0]][1], value)
        elif len(run) > 1 and all(found.group(name) is not None for name in names):
            index = found.re.groupindex
            text = "".join(template.texts[i] for i in run)
            values.setdefault(text, found.string[found.span(index[names[0]])[0] : found.span(index[names[-1]])[1]])
        run = [k] if k < count else []
    return values


def _captured(template: Template, found: Any) -> int:
    """The characters the placeholders' groups took (the rest of the match is the template's own text)."""
    index = found.re.groupindex
    spans = (found.span(index[name]) for name, _ in template.groups)
    return sum(end - start for start, end in spans if start >= 0)


def _fixed_start(template: Template, found: Any) -> bool:
    """Whether the match starts with the template's own text, not with a value."""
    index = found.re.groupindex
    starts = [start for name, _ in template.groups if (start := found.span(index[name])[0]) >= 0]
    return bool(min(starts, default=found.end()) > found.start())


def _spills(match: Match) -> bool:
    """Whether a value took a line break that the template's own text never shows: the lines after the
    message (a log, another error) went into it."""
    return "\n" not in match.template.errorMessage and any("\n" in value for value in match.values.values())


def _ends_in_value(template: Template) -> bool:
    """Whether a rendering of the template ends in a value (give or take a final period)."""
    return bool(template.pieces) and len(template.pieces) > 1 and not template.pieces[-1].rstrip(".").strip()


def _best(found: Sequence[Match]) -> tuple[tuple[Match, ...], tuple[Match, ...]]:
    """The best-ranked matches: as (confident, ()) or, when none is confident, ((), weak)."""
    if not found:
        return (), ()
    best = max(m.rank() for m in found)
    top = _in_file_order(m for m in found if m.rank() == best)
    return (top, ()) if top[0].confident else ((), top)


def _with_period(template: Template, text: str) -> str | None:
    return text + "." if template.errorMessage.endswith(".") and not text.endswith(".") else None


def _prefix(template: Template, text: str, steps: tuple[str, ...], error_class: str | None) -> Match | None:
    """Match `text` as a cut rendering: each literal found in turn, leftmost, the cut inside one of them
    or inside a value. Leftmost search cannot backtrack: the work is linear in the text per piece."""
    pieces, groups = template.pieces, template.groups
    start = text.find(pieces[0]) if pieces[0] else 0
    if start < 0:  # the cut fell inside the first literal (after whatever text came before the message)
        at = _cut_in(pieces[0], text)
        if at is None:
            return None
        shown = len(text) - at
        return Match(template, {}, How.PARTIAL, shown / len(text), steps, error_class, shown)
    values: dict[str, str] = {}
    position, literal = start + len(pieces[0]), len(pieces[0])
    for (_, expression), piece in zip(groups, pieces[1:], strict=True):
        if position >= len(text):
            break
        found = text.find(piece, position) if piece else position
        if found < 0:  # the cut fell in this value or in the literal after it
            first = max(position, len(text) - len(piece))
            cut = next((k for k in range(first, len(text)) if piece.startswith(text[k:])), len(text))
            values.setdefault(expression, text[position:cut])
            literal += len(text) - cut
            position = len(text)
            break
        values.setdefault(expression, text[position:found])
        position, literal = found + len(piece), literal + len(piece)
    else:
        return None  # the whole template was there: a full match would have said so
    if position < len(text) or literal < min(MIN_PARTIAL, template.literal):
        return None
    span = len(text) - start
    return Match(template, values, How.PARTIAL, min(1.0, literal / span), steps, error_class, literal)


def _cut_in(piece: str, text: str) -> int | None:
    """Where `text` ends with a start of `piece` at least MIN_PARTIAL characters long (and shorter than
    it), if it does: the position that start begins at."""
    if len(piece) <= MIN_PARTIAL:
        return None
    key = piece[:MIN_PARTIAL]
    at = text.find(key, max(0, len(text) - len(piece) + 1))  # only the text's last len(piece) - 1 characters
    while at >= 0:
        if piece.startswith(text[at:]):
            return at
        at = text.find(key, at + 1)
    return None


def _squash(source: str) -> str:
    return re.sub(r"\s+", "", source).replace("'", '"')


def _in_file_order(matches: Iterable[Match]) -> tuple[Match, ...]:
    return tuple(sorted(matches, key=lambda m: (m.site.filePath, m.site.lineNumber, m.site.id)))


def match_lines(matcher: Matcher, inputs: Iterable[str], *, log: bool) -> Iterator[MatchResult]:
    """Match inputs as they come; from a log, yield only lines that matched or look like errors."""
    for text in inputs:
        result = matcher.match(text)
        if not log or result.holds_message:
            yield result
