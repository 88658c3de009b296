# Builtins: what CPython prints for the builtin exceptions whose `str()` is not that of their argument(s).
"""libcst's reading (`cst`) is imported inside the functions that need it: only a raise of one of these
classes with arguments the quick reading does not read imports it."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from extractor.model.kinds import MessageKind
from extractor.scanning.template.argument import message_parts, repr_parts
from extractor.scanning.template.pattern import Hole, Part, Raw, optional
from extractor.scanning.template.reading import Reading

__all__ = ["SYNTAX_ERRORS", "class_parts"]

_OS_ERRORS = frozenset(
    {
        "OSError", "IOError", "EnvironmentError", "FileNotFoundError", "FileExistsError", "PermissionError",
        "IsADirectoryError", "NotADirectoryError", "ConnectionError", "BrokenPipeError", "ConnectionAbortedError",
        "ConnectionRefusedError", "ConnectionResetError", "ChildProcessError", "InterruptedError",
        "ProcessLookupError", "TimeoutError", "BlockingIOError",
    }
)  # fmt: skip
SYNTAX_ERRORS = frozenset({"SyntaxError", "IndentationError", "TabError"})
_GROUPS = frozenset({"ExceptionGroup", "BaseExceptionGroup"})


def class_parts(reading: Reading, error_class: str | None, args: Sequence[str]) -> list[Part] | None:
    """The rendering of a builtin class whose `__str__` differs from the plain one, or None."""
    if error_class == "KeyError" and len(args) == 1:
        parts = repr_parts(reading, args[0])
        if len(parts) == 1 and isinstance(parts[0], Hole):
            reading.kinds.add(MessageKind.DYNAMIC)
        elif not reading.kinds:
            reading.kinds.add(MessageKind.LITERAL)
        return parts
    if error_class in _OS_ERRORS and 2 <= len(args) <= 5:
        # errno and strerror print as they are, None too; a None filename is no filename. BlockingIOError's
        # third argument is the characters written, which it does not print.
        parts = ["[Errno ", *_str_parts(reading, args[0]), "] ", *_str_parts(reading, args[1])]
        if len(args) >= 3 and not _none(args[2]) and error_class != "BlockingIOError":
            parts += _maybe_none(reading, ": ", args[2])
            if len(args) == 5 and not _none(args[4]):
                parts += _maybe_none(reading, " -> ", args[4])
        return parts
    if error_class in ("UnicodeDecodeError", "UnicodeEncodeError") and len(args) == 5:
        from extractor.scanning.template import cst

        # One byte (character) or a range, which only the values decide: the pattern accepts both.
        encoding, _, start, end, reason = args
        decode = error_class == "UnicodeDecodeError"
        verb, noun = ("decode", "bytes") if decode else ("encode", "characters")
        one = r"byte 0x[0-9a-f]{2}" if decode else r"character '\\(?:x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})'"
        return [
            "'", *_str_parts(reading, encoding), f"' codec can't {verb} ",
            Raw("", f"(?:{one} in position \\d+|"),
            f"{noun} in position ", *_str_parts(reading, start), "-", Hole(f"{cst.flatten(end)} - 1"),
            Raw("", ")"),
            ": ", *_str_parts(reading, reason),
        ]  # fmt: skip
    if error_class in _GROUPS and len(args) == 2:  # `message (N sub-exceptions)`
        from extractor.scanning.template import cst

        count: list[Part] = [Hole(f"len({cst.flatten(args[1])})"), " sub-exception", Raw("s", "s?")]
        return [*_str_parts(reading, args[0]), " (", *count, ")"]
    if error_class in SYNTAX_ERRORS and len(args) >= 2:
        return _syntax_error_parts(reading, args)
    return None


def _syntax_error_parts(reading: Reading, args: Sequence[str]) -> list[Part]:
    """The message, then `(file, line N)` from the details (a sequence of 4 to 6), only with 2 arguments."""
    from extractor.scanning.template import cst

    if len(args) > 2:
        return _str_parts(reading, args[0])
    details = cst.expression_tree(args[1])
    if not cst.is_display(details) or not 4 <= len(details.elements) <= 6:
        return [*_str_parts(reading, args[0]), Raw("", r"(?: \(.*\))?")]  # details known at run time
    # A file name prints if it is a string, a line if it is an int: what only the values decide is optional.
    filename, lineno = (cst.bare_code(element.value) for element in details.elements[:2])
    parts = _str_parts(reading, args[0])
    file: list[Part] | None = None
    known_file = cst.expression_tree(filename)
    if known_file is not None and cst.is_literal(known_file):  # printed as its last path component
        file = [cst.literal_value(known_file).rpartition("/")[2]]
    elif filename != "None":
        file = [Hole(f"os.path.basename({filename})")]
    line = ["line ", *_str_parts(reading, lineno)] if lineno != "None" else None
    sure_file = file is not None and not isinstance(file[0], Hole)
    sure_line = line is not None and cst.is_int(cst.expression_tree(lineno))
    if file is None or line is None:
        shown = file or line
        if shown is None:
            return parts
        sure = sure_file if file else sure_line
        return [*parts, *optional([" (", *shown, ")"], not sure)]
    if sure_file:
        return [*parts, " (", *file, *optional([", ", *line], not sure_line), ")"]
    if sure_line:
        return [*parts, " (", *optional([*file, ", "], True), *line, ")"]
    # Either, both or neither: `, ` only after a file name, `line N` right after `(` otherwise.
    inner = [*optional(file, True), Raw("", r"(?:(?:(?<=\()|"), ", ", Raw("", ")"), *line, Raw("", ")?")]
    return [*parts, *optional([" (", *inner, ")"], True)]


def _maybe_none(reading: Reading, before: str, source: str) -> list[Part]:
    """`before` and the repr of an argument that is left out when it is None: always there for a literal,
    optional for anything else (a variable may hold None)."""
    from extractor.scanning.template import cst

    node = cst.expression_tree(source)
    return optional([before, *repr_parts(reading, source)], node is None or not cst.is_literal(node))


def _str_parts(reading: Reading, source: str) -> list[Part]:
    """What `str()` of an argument prints: a number as written, a string's text, else a placeholder."""
    from extractor.scanning.template import cst

    node = cst.expression_tree(source)
    if cst.is_int(node):
        return [str(ast.literal_eval(node.value))]
    if _none(source):
        return ["None"]
    return message_parts(reading, source)


def _none(source: str) -> bool:
    return source.strip() == "None"
