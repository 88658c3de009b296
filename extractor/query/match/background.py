# Background: who else prints an error's text. `match` weighs vLLM's templates against the messages the
# libraries vLLM runs with raise (scanned by this extractor, shipped as data: see `libraries`), and those the
# interpreter prints itself and argparse's usage errors, measured here by running them (not typed from memory):
# each probe below makes the interpreter raise, and the message it printed becomes a template, the probe's own
# distinctive inputs (names spelled `zq...`, counts 7 and 9) made placeholders. A paste that a background
# message explains at least as well as vLLM's is answered as theirs, in `elsewhere` (see find.py).
from __future__ import annotations

import argparse
import importlib
import platform
import re
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple, NoReturn

__all__ = ["Elsewhere", "Held", "Printed", "background", "digest", "libraries", "measured"]


@dataclass(frozen=True, slots=True)
class Elsewhere:
    """A message printed by someone other than the catalog's code: the library (`python`, `argparse`, a
    distribution's name), its version, where it is raised when known, its class and its template."""

    library: str
    version: str
    errorClass: str
    errorMessage: str
    filePath: str | None = None
    lineNumber: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "library": self.library,
            "version": self.version,
            "filePath": self.filePath,
            "lineNumber": self.lineNumber,
            "errorClass": self.errorClass,
            "errorMessage": self.errorMessage,
        }

    def words(self, values: dict[str, str] | None = None) -> str:
        """Who printed it, in words, for text answers and the site (`values`: what the paste shows for its
        placeholders, naming the command an argparse error is of)."""
        if self.library == "python":
            return f"raised by Python itself ({self.errorClass}, Python {self.version})"
        if self.library == "argparse":
            prog = (values or {}).get("prog")
            if prog:
                return f"an argparse usage error of `{prog}`: see `{prog} --help`"
            return "an argparse usage error of the command line: see its --help"
        where = f" at {self.filePath}:{self.lineNumber}" if self.filePath else ""
        return f"{self.library} {self.version} raises the same text{where}"


@dataclass(frozen=True, slots=True)
class Printed:
    """What a probe made the interpreter print, and which of its inputs stand for a value: (text, name)."""

    cls: str
    message: str
    values: tuple[tuple[str, str], ...]

    def template(self) -> tuple[str, str, tuple[tuple[str, str], ...]]:
        """The message as a template (`{name}` for each value), its pattern (values as `(?P<pN>.*?)`) and its
        groups (group, name), in message order."""
        tokens = sorted(self.values, key=lambda pair: -len(pair[0]))
        split = re.compile("|".join(re.escape(token) for token, _ in tokens) or "(?!)")
        names = dict(self.values)
        parts: list[str] = []
        pattern: list[str] = []
        groups: list[tuple[str, str]] = []
        at = 0
        for found in split.finditer(self.message):
            literal = self.message[at : found.start()]
            parts.append(literal.replace("{", "{{").replace("}", "}}"))
            pattern.append(re.escape(literal))
            group = f"p{len(groups)}"
            groups.append((group, names[found[0]]))
            parts.append("{" + names[found[0]] + "}")
            pattern.append(f"(?P<{group}>.*?)")
            at = found.end()
        tail = self.message[at:]
        parts.append(tail.replace("{", "{{").replace("}", "}}"))
        pattern.append(re.escape(tail))
        return "".join(parts), "".join(pattern), tuple(groups)


def _raised(probe: Callable[[], object]) -> BaseException:
    try:
        probe()
    except Exception as error:  # (each probe raises: what it raised is the measure)
        return error
    raise AssertionError(f"probe {probe.__name__} did not raise")  # pragma: no cover


class _Zq:
    pass


def _zq_function(zq_a: object) -> object:
    return zq_a


def _zq_keywords(zq_a: object, *, zq_k: object) -> object:
    return zq_a


def _zq_pair(zq_a: object, zq_b: object) -> object:
    return zq_a


def _attribute() -> object:
    return _Zq().zq_attr  # type: ignore[attr-defined]


def _class_attribute() -> object:
    return _Zq.zq_attr  # type: ignore[attr-defined]


def _module_attribute() -> object:
    return types.ModuleType("zq_module").zq_attr


def _no_module() -> object:
    return importlib.import_module("zq_module")


def _no_name() -> object:
    from json import zq_name  # type: ignore[attr-defined]

    return zq_name


def _not_defined() -> object:
    return eval("zq_name", {})  # (a free name the compiler cannot see: what a typo in a module does)


def _too_many_positional() -> object:
    return _zq_function(1, 2, 3, 4, 5, 6, 7, 8, 9)  # type: ignore[call-arg]


def _too_many_for_two() -> object:
    return _zq_pair(1, 2, 3, 4, 5, 6, 7, 8, 9)  # type: ignore[call-arg]


def _missing_two() -> object:
    return _zq_pair()  # type: ignore[call-arg]


def _unexpected_keyword() -> object:
    return _zq_function(1, zq_bad=2)  # type: ignore[call-arg]


def _missing_positional() -> object:
    return _zq_function()  # type: ignore[call-arg]


def _missing_keyword() -> object:
    return _zq_keywords(1)  # type: ignore[call-arg]


def _not_callable() -> object:
    return _Zq()()  # type: ignore[operator]


def _not_subscriptable() -> object:
    return _Zq()[0]  # type: ignore[index]


def _not_iterable() -> object:
    return list(_Zq())  # type: ignore[call-overload]


def _operand() -> object:
    return _Zq() + 1  # type: ignore[operator]


def _int_literal() -> object:
    return int("zq_text")


def _float_literal() -> object:
    return float("zq_text")


def _too_many_values() -> object:
    first, second = [1] * 9
    return first, second


def _not_enough_seven() -> object:
    one, _b, _c, _d, _e, _f, _g = [1] * 5
    return one


def _empty_max() -> object:
    return max([])


def _empty_min() -> object:
    return min([])


def _list_index() -> object:
    return [][0]


def _tuple_index() -> object:
    return ()[0]  # type: ignore[misc]


def _string_index() -> object:
    return ""[0]


def _division() -> object:
    return 1 / 0


def _integer_division() -> object:
    return 1 // 0


def _float_division() -> object:
    return 1.0 / 0.0


def _no_file() -> object:
    return open("/zq_missing/zq_file")


# Each probe and the inputs in what it printed that stand for a value (the text a user's error shows there).
_PROBES: list[tuple[Callable[[], object], tuple[tuple[str, str], ...]]] = [
    (_attribute, (("_Zq", "type"), ("zq_attr", "name"))),
    (_class_attribute, (("_Zq", "type"), ("zq_attr", "name"))),
    (_module_attribute, (("zq_module", "module"), ("zq_attr", "name"))),
    (_no_module, (("zq_module", "name"),)),
    (_no_name, (("zq_name", "name"), ("json", "module"), ("__PATH__", "path"))),
    (_not_defined, (("zq_name", "name"),)),
    (_too_many_positional, (("_zq_function", "function"), ("1", "expected"), ("9", "given"))),
    (_too_many_for_two, (("_zq_pair", "function"), ("2", "expected"), ("9", "given"))),
    (_missing_two, (("_zq_pair", "function"), ("2", "count"), ("'zq_a' and 'zq_b'", "names"))),
    (_unexpected_keyword, (("_zq_function", "function"), ("zq_bad", "name"))),
    (_missing_positional, (("_zq_function", "function"), ("1", "count"), ("zq_a", "name"))),
    (_missing_keyword, (("_zq_keywords", "function"), ("1", "count"), ("zq_k", "name"))),
    (_not_callable, (("_Zq", "type"),)),
    (_not_subscriptable, (("_Zq", "type"),)),
    (_not_iterable, (("_Zq", "type"),)),
    (_operand, (("_Zq", "left"), ("int", "right"))),
    (_int_literal, (("zq_text", "text"),)),
    (_float_literal, (("zq_text", "text"),)),
    (_too_many_values, (("2", "expected"),)),
    (_not_enough_seven, (("7", "expected"), ("5", "got"))),
    (_empty_max, ()),
    (_empty_min, ()),
    (_list_index, ()),
    (_tuple_index, ()),
    (_string_index, ()),
    (_division, ()),
    (_integer_division, ()),
    (_float_division, ()),
    (_no_file, (("/zq_missing/zq_file", "path"),)),
]


class _Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Refused(f"{self.prog}: error: {message}")


def _zq_type(text: str) -> int:
    raise ValueError(text)


def _usage_errors() -> Iterator[Printed]:
    """argparse's usage errors, as a parser named `zq_prog` prints them on bad command lines."""
    parser = _Parser(prog="zq_prog")
    parser.add_argument("--zq-choice", choices=["zq_a", "zq_b"])
    parser.add_argument("--zq-typed", type=_zq_type)
    parser.add_argument("--zq-one")
    parser.add_argument("--zq-two", nargs=7)
    parser.add_argument("--zqlong-a")
    parser.add_argument("--zqlong-b")
    required = _Parser(prog="zq_prog")
    required.add_argument("--zq-required", required=True)
    prog = ("zq_prog", "prog")
    cases: list[tuple[argparse.ArgumentParser, list[str], tuple[tuple[str, str], ...]]] = [
        (parser, ["--zq-choice", "zq_c"],
         (prog, ("--zq-choice", "argument"), ("zq_c", "value"), ("'zq_a', 'zq_b'", "choices"))),
        (parser, ["--zq-typed", "zq_x"], (prog, ("--zq-typed", "argument"), ("_zq_type", "type"), ("zq_x", "value"))),
        (parser, ["--zq-bogus"], (prog, ("--zq-bogus", "arguments"))),
        (parser, ["--zq-one"], (prog, ("--zq-one", "argument"))),
        (parser, ["--zq-two", "1"], (prog, ("--zq-two", "argument"), ("7", "count"))),
        (parser, ["--zqlong", "1"], (prog, ("--zqlong-a, --zqlong-b", "options"), ("--zqlong", "option"))),
        (required, [], (prog, ("--zq-required", "arguments"))),
    ]  # fmt: skip
    for which, argv, values in cases:
        try:
            which.parse_args(argv)
        except _Refused as refused:
            yield Printed("", str(refused), values)


class Held(NamedTuple):
    """A background message as `match` holds it: who prints it, its pattern and groups (group, name) in message
    order, and for a library's, its pattern's literal runs (read when the data was built)."""

    elsewhere: Elsewhere
    pattern: str
    groups: tuple[tuple[str, str], ...]
    pieces: tuple[str, ...] = ()


def measured() -> list[Held]:
    """Every message the probes made this interpreter and argparse print, as templates."""
    version = platform.python_version()
    out: list[Held] = []
    for probe, values in _PROBES:
        error = _raised(probe)
        message = str(error)
        if isinstance(error, ImportError) and error.path:
            message = message.replace(error.path, "__PATH__")
        printed = Printed(type(error).__name__, message, tuple(v for v in values if v[0] in message))
        template, pattern, groups = printed.template()
        out.append(Held(Elsewhere("python", version, printed.cls, template), pattern, groups))
    for printed in _usage_errors():
        template, pattern, groups = printed.template()
        out.append(Held(Elsewhere("argparse", version, "ArgumentError", template), pattern, groups))
    return out


@cache
def background() -> tuple[Held, ...]:
    """The messages the interpreter and argparse print (measured once a process), in a fixed order."""
    return tuple(measured())


def _packed() -> bytes:
    from importlib.resources import files

    return files("extractor.query.match").joinpath("data", "background.jsonl.gz").read_bytes()


@cache
def digest() -> str:
    """A digest of the libraries' data, part of the key of a stored match index (as the code's digest is)."""
    import hashlib

    return hashlib.sha256(_packed()).hexdigest()[:16]


@cache
def libraries() -> tuple[Held, ...]:
    """The raise sites of the libraries vLLM runs with (transformers, torch, pydantic, huggingface_hub,
    tokenizers), as scripts/build_background.py scanned them with this extractor from a vLLM runtime: shipped
    as data (data/background.jsonl.gz), in the file's order."""
    import gzip
    import json

    out = []
    for line in gzip.decompress(_packed()).decode().splitlines():
        library, version, path, number, cls, message, pattern, groups, pieces = json.loads(line)
        elsewhere = Elsewhere(library, version, cls, message, path, number)
        out.append(Held(elsewhere, pattern, tuple((group, name) for group, name in groups), tuple(pieces)))
    return tuple(out)
