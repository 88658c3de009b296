# Argument: one argument of a raise into template parts, as `str()` and as `repr()` print it.
"""The quick reading first; libcst's (`cst`, imported inside these functions) only for what it declines,
so that a process whose messages it all reads never imports libcst."""

from __future__ import annotations

import ast
import contextlib
from typing import cast

from extractor.model.kinds import MessageKind
from extractor.scanning.template import quick
from extractor.scanning.template.pattern import Hole, Part, quoted
from extractor.scanning.template.reading import Reading, Unsupported

__all__ = ["message_parts", "repr_parts"]


def message_parts(reading: Reading, source: str) -> list[Part]:
    """The parts of the text an expression is (a placeholder for a value known at run time)."""
    found = quick.literal_parts(reading, source)
    if found is not None:
        return found
    if (code := quick.not_text(source)) is not None:  # its value, read at run time
        reading.kinds.add(MessageKind.DYNAMIC)
        return [Hole(code)]
    operation = quick.operation(reading, source)
    if isinstance(operation, str):
        reading.kinds.add(MessageKind.DYNAMIC)
        return [Hole(operation)]
    if operation is not None:
        return operation
    from extractor.scanning.template import cst

    node = cst.expression_tree(source)
    if node is None:
        with contextlib.suppress(ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            value = ast.literal_eval(source.strip())  # too deep for libcst, as thousands of literals are
            if isinstance(value, str):
                reading.kinds.add(MessageKind.LITERAL)
                return [value]
        reading.warnings.append("unparsable-message")
        return [Hole(source.strip())]
    try:
        return cst.parts(reading, node)
    except Unsupported:
        reading.kinds.add(MessageKind.DYNAMIC)
        return [Hole(cst.bare_code(node))]


def repr_parts(reading: Reading, source: str) -> list[Part]:
    """Render one argument as `repr` shows it (inside the tuple of a multi-argument raise, or alone
    where the class prints the repr of its argument): a string takes the quotes repr would give it."""
    read = quick.literals(source, joins=bool(reading.joins))
    if read is not None:
        found, kinds = read
        if kinds == {MessageKind.LITERAL}:  # plain literals: their text
            return [repr("".join(cast(list[str], found)))]
        reading.kinds |= kinds
        return quoted(found)
    if (code := quick.not_text(source)) is not None:
        return [Hole(code, conversion="r")]
    operation = quick.operation(reading, source)
    if isinstance(operation, str):
        return [Hole(operation, conversion="r")]
    if operation is not None:
        return quoted(operation)
    from extractor.scanning.template import cst

    node = cst.expression_tree(source)
    if node is not None and cst.is_literal(node):
        return [repr(cst.literal_value(node))]
    if node is not None:
        try:
            inner = cst.parts(reading, node)
        except Unsupported:
            pass
        else:
            return quoted(inner)
    return [Hole(cst.flatten(source), conversion="r")]
