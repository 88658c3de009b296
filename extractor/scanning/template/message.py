# Message: a raise's arguments (their source) -> its message template, placeholders and regex pattern.
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from extractor.model.kinds import MessageKind, builtin_exception
from extractor.model.scanned import ScannedPlaceholder
from extractor.scanning.template.argument import message_parts, repr_parts
from extractor.scanning.template.builtins import SYNTAX_ERRORS, class_parts
from extractor.scanning.template.pattern import Hole, Part, adjacent, pattern_for, quoted
from extractor.scanning.template.reading import Joined, Reading

__all__ = ["Template", "message_template"]


@dataclass(frozen=True)
class Template:
    """A message template: what `str(exc)` prints, with `{...}` where run-time values go."""

    message: str
    pattern: str
    placeholders: tuple[ScannedPlaceholder, ...]
    kind: MessageKind
    warnings: tuple[str, ...] = field(default=())


def message_template(
    args: Sequence[str] = (),
    *,
    variable: str | None = None,
    pieces: Sequence[str] = (),
    keywords: Sequence[str] = (),
    joins: Mapping[str, Joined] | None = None,
    error_class: str | None = None,
) -> Template:
    """Build the template of a raise from the source of its arguments.

    `args` are the sources of the positional arguments of the exception; `variable` names the variable
    the single argument is, with `pieces` the sources of what was assigned (then `+=`-ed) to it when
    that is known on every path, or nothing when it is not. `keywords` are the keyword arguments
    (`name=value`), `joins` the lists joined into the message whose items are known, and `error_class`
    the raised class's name, for the builtins that print their arguments their own way.
    """
    reading = Reading(joins)
    kind: MessageKind
    parts: list[Part]
    known = builtin_exception(error_class)
    if keywords and known is None and not args and variable is None:
        # A message passed only by keyword: who knows what an unknown constructor prints from it.
        reading.warnings.append("keyword-arguments")
        parts = [Hole(", ".join(keywords))]
        kind = MessageKind.DYNAMIC
    elif variable is not None:
        sources = list(pieces)
        kind = MessageKind.VARIABLE
        if not sources:
            parts = [Hole(variable, conversion="r" if error_class == "KeyError" else None)]
        elif error_class == "KeyError" and len(sources) == 1:  # the repr of what was assigned, text or not
            parts = repr_parts(reading, sources[0])
        else:
            parts = []
            for source in sources:
                parts += message_parts(reading, source)
            if error_class == "KeyError":  # text: `+=` made it
                parts = quoted(parts)
    elif not args and error_class in SYNTAX_ERRORS:  # its message is None, printed as such
        return Template("None", "None", (), MessageKind.LITERAL, tuple(reading.warnings))
    elif not args:
        return Template("", "", (), MessageKind.EMPTY, tuple(reading.warnings))
    elif (special := class_parts(reading, error_class, args)) is not None:
        parts = special
        kind = _kind_of(reading.kinds)
    elif len(args) == 1:
        parts = message_parts(reading, args[0])
        kind = _kind_of(reading.kinds)
    else:
        parts = ["("]
        for index, source in enumerate(args):
            if index:
                parts.append(", ")
            parts += repr_parts(reading, source)
        parts.append(")")
        reading.warnings.append("args-not-formatted")
        kind = _kind_of(reading.kinds)
    message, pattern, placeholders = pattern_for(parts)
    if adjacent(placeholders):
        reading.warnings.append("adjacent-placeholders")
    return Template(message, pattern, placeholders, kind, tuple(reading.warnings))


def _kind_of(kinds: set[MessageKind]) -> MessageKind:
    for kind in (
        MessageKind.DYNAMIC,
        MessageKind.FORMAT,
        MessageKind.PERCENT,
        MessageKind.CONCAT,
        MessageKind.FSTRING,
        MessageKind.LITERAL,
    ):
        if kind in kinds:
            return kind
    return MessageKind.DYNAMIC
