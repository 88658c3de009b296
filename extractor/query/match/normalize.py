# Normalize: a pasted error or log line -> the texts it may hold (cleaned, unwrapped, each error of several lines).
from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "CLASS_PREFIX",
    "MAX_SEGMENTS",
    "Variant",
    "cleaned",
    "pydantic_errors",
    "python_prints",
    "segments",
    "variants",
]

# An exception class as a printed error names it (`ValueError`, `vllm.errors.ConfigError`, bare `Exception`),
# the module path apart; and the class that prefixes a printed error, `ValueError: ...`.
_CLASS = r"(?<![\w.])(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Z]\w*(?:Error|Exception|Exit|Warning)|Exception|Warning)"
CLASS_PREFIX = re.compile(_CLASS + r"(?::\s?|$)")
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
_ESCAPED = re.compile(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|.)", re.S)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_REPR_START = re.compile(_CLASS + r"\((?P<q>['\"])")  # `ValueError('...')`
MAX_SEGMENTS = 8  # errors of a multi-line input matched one by one
_SEGMENT_LINES = 50  # lines a message may span
_NOT_A_MESSAGE = (_TRACEBACK, "During handling of the above exception", "The above exception was", 'File "')


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
    prefix = CLASS_PREFIX.search(text)
    if prefix is None:
        return None
    name = prefix["cls"].rpartition(".")[2]
    own = _PYTHON_OWN.get(name)
    message = text[prefix.end() :].split("\n", 1)[0].strip()
    if own is None or not message or own.fullmatch(message) is None:
        return None
    return name


@dataclass(frozen=True, slots=True)
class Variant:
    """A text the input may hold, and the steps that made it from the input (how a match says it was met)."""

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


def _exception_repr(text: str) -> Variant | None:
    """`SomeError('message')` (an exception's repr, as a log line shows one) ending the text: as `SomeError:
    message`. String operations, as for every part of a paste that may be long."""
    for start in _REPR_START.finditer(text):
        body = text[start.end() :].rstrip()
        if body.endswith(start["q"] + ")") and len(body) >= 2:
            return Variant(f"{start['cls']}: {_unquote(body[:-2])}", ("embedded",))
    return None


def cleaned(text: str, *, entities: bool = True) -> Variant:
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
    return Variant(cut, tuple(dict.fromkeys(steps)))


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
    if not common[:cut].strip() or CLASS_PREFIX.search(common[:cut]):
        return None
    return "\n".join(line[cut:] if line.strip() else line for line in lines)


_DIGITS = re.compile(r"\d")
_PREFIX_MAX = 80  # characters of a line its prefix may take


def segments(text: str) -> list[tuple[str, str]]:
    """The errors of a text of several lines (a chained traceback, a log): each line that names an
    exception class, alone and then with the lines that follow it up to a blank line, a traceback or the
    next such line (a message may span lines). At most MAX_SEGMENTS of them."""
    lines = text.split("\n")
    out: list[tuple[str, str]] = []
    for number, line in enumerate(lines):
        if len(out) == MAX_SEGMENTS:
            break
        if not CLASS_PREFIX.search(line):
            continue
        end = number + 1
        while end < len(lines) and end - number <= _SEGMENT_LINES:
            following = lines[end]
            stop = not following.strip() or following.lstrip().startswith(_NOT_A_MESSAGE)
            if stop or CLASS_PREFIX.match(following):
                break
            end += 1
        out.append((line, "\n".join(lines[number:end])))
    return out


def pydantic_errors(text: str) -> list[str]:
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


def variants(base: Variant) -> Iterator[Variant]:
    """The input (as `cleaned` made it) and every message it may hold inside another text. What a known
    wrapper holds comes first (an exception's repr ending it, a JSON or dict body's message, pydantic's
    `Value error, ...`, an HTTP status line): matched as pasted, a template ending in a value would take the
    wrapper's tail into that value. Guesses (any long quoted text, a traceback's tail) come after it."""
    quoted = _exception_repr(base.text)
    if quoted is not None:
        yield Variant(quoted.text, (*base.steps, *quoted.steps))
    for key in dict.fromkeys(m["msg"] for m in _MESSAGE_KEY.finditer(base.text)):
        yield Variant(_unquote(key), (*base.steps, "embedded"))
    for error in pydantic_errors(base.text)[:1]:
        yield Variant(error, (*base.steps, "pydantic"))
    if _HTTP.match(base.text):
        message = base.text[4:].strip()
        message = message[:-4].rstrip() if message.endswith(" None") else message
        yield Variant(message, (*base.steps, "http"))
    yield base
    guesses = sorted((m["msg"] for m in _QUOTED.finditer(base.text)), key=len, reverse=True)[:3]
    for message in dict.fromkeys(guesses):
        yield Variant(_unquote(message), (*base.steps, "embedded"))
    before, found, after = base.text.rpartition(_TRACEBACK)
    if found and not after.strip(": \n"):
        yield Variant(before.rstrip().removesuffix(",").rstrip(), (*base.steps, "embedded"))
    # What editors and chat clients did to the characters, and a terminal's wrapping: after the text as it
    # is (a message may hold curly quotes, double spaces or line breaks of its own).
    typed = _typed(base.text)
    if typed != base.text:
        yield Variant(typed, (*base.steps, "characters"))
    if "\n" in typed:
        lines = [line.strip() for line in typed.split("\n")]
        yield Variant(" ".join(line for line in lines if line), (*base.steps, "line-breaks"))
        yield Variant("".join(lines), (*base.steps, "line-breaks"))


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
