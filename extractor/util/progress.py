# Progress: bars on a terminal and one-line notes elsewhere, on stderr, for work that takes a while; and
# what makes any text one line of stderr.
from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from extractor.util.lifecycle import is_quiet

__all__ = ["bar", "byte_bar", "counted", "note", "one_line", "shown", "sized", "warn"]

T = TypeVar("T")

# What a terminal would take for a line break or a command (ESC starts colours and cursor moves): control
# characters, and Unicode's line and paragraph separators; and the marks that reorder what follows them
# (bidirectional overrides and isolates: a line could show other text than it holds). A tab is left as it is.
_BIDI = "\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSHOWN = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029{_BIDI}]")
LINE_LIMIT = 2000  # characters: a 100 KB argument echoed back is not read, only scrolled past


def one_line(text: str, *, limit: int | None = LINE_LIMIT) -> str:
    """`text` as one line that shows what it holds: each control character escaped as Python writes it
    (`\\n`, `\\x1b`, ...), and past `limit` characters (None: none), its middle left out (saying how much)."""
    escaped = _escaped(_UNSHOWN, text)
    if limit is None or len(escaped) <= limit:
        return escaped
    head, tail = limit * 3 // 4, limit // 4
    return f"{escaped[:head]} ... ({len(escaped) - head - tail} characters left out) ... {escaped[-tail:]}"


# What a terminal would take for a command in text meant for people (ESC, BEL, a carriage return that
# overwrites the line): control characters but the line break and the tab.
_COMMANDS = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")


def shown(text: str) -> str:
    """Text for people (list's table, explain's page) with each control character but line breaks and tabs
    escaped as Python writes it: a catalog's message cannot set a terminal's title or clear its screen."""
    return _escaped(_COMMANDS, text)


def _escaped(characters: re.Pattern[str], text: str) -> str:
    """`text`, each of `characters` in it written as Python escapes it (`\\n`, `\\x1b`, `\\u2028`)."""
    return characters.sub(lambda found: repr(found[0])[1:-1], text)


def _on_terminal() -> bool:
    return not is_quiet() and sys.stderr.isatty() and not os.environ.get("CI")


def _shape() -> dict[str, int]:
    """The terminal's width and height for tqdm; a terminal that does not say (a fresh pseudo-terminal says
    0 by 0) counts as 80 by 24, where tqdm would draw nothing at all."""
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError):
        size = os.terminal_size((0, 0))
    fallback = shutil.get_terminal_size((80, 24))
    return {"ncols": size.columns or fallback.columns or 80, "nrows": size.lines or fallback.lines or 24}


def bar(
    items: Iterable[T],
    total: int,
    label: str,
    *,
    size: Callable[[T], int],
    unit: str = "file",
    status: Callable[[], str] | None = None,
) -> Iterator[T]:
    """Show a progress bar over `items`, each counting `size(item)` of `total` units, on a terminal; stay
    quiet in pipes and CI. `status`: what the bar says after its count (asked again after each item, once the
    caller has taken it: `12 reproduced, at max-model-len-too-long`)."""
    if not _on_terminal():
        yield from items
        return
    from tqdm import tqdm

    with tqdm(total=total, desc=label, unit=unit, leave=False, file=sys.stderr, **_shape()) as shown:
        if status is not None:
            shown.set_postfix_str(one_line(status(), limit=80))
        for item in items:
            yield item
            if status is not None:
                shown.set_postfix_str(one_line(status(), limit=80), refresh=False)
            shown.update(size(item))


def byte_bar(chunks: Iterable[bytes], total: int | None, label: str) -> Iterator[bytes]:
    """Show a progress bar in bytes over `chunks` (of a download) on a terminal; stay quiet elsewhere."""
    if not _on_terminal():
        yield from chunks
        return
    from tqdm import tqdm

    # (kB and MB of 1000, as every size the tool says: "downloading x (40.0 MB)", `cache info`)
    options: dict[str, Any] = {"unit": "B", "unit_scale": True, "unit_divisor": 1000, **_shape()}
    with tqdm(total=total, desc=label, leave=False, file=sys.stderr, **options) as shown:
        for chunk in chunks:
            shown.update(len(chunk))
            yield chunk


def counted(number: int, noun: str) -> str:
    """`1 file`, `2 files`, `3 classes`."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}{'es' if noun.endswith('s') else 's'}"


def sized(count: int) -> str:
    """A size in words, in units of 1000 as every size the tool says (`cache info`, a download, a site):
    `980 B`, `40.0 kB`, `38.1 MB`, `5.5 GB`."""
    value = float(count)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def warn(line: str) -> None:
    """Say something the user should know about the run's inputs (`extractor: warning: ...`), unless quiet."""
    if not is_quiet():
        print(f"extractor: warning: {one_line(line)}", file=sys.stderr, flush=True)


def note(line: str, *, no_bar: bool = False) -> None:
    """Say one line about long work where no bar is shown (a pipe, a log file), unless quiet; `no_bar`: work
    that has no bar, said on a terminal too."""
    if not is_quiet() and (no_bar or not _on_terminal()):
        print(f"extractor: {one_line(line)}", file=sys.stderr, flush=True)
