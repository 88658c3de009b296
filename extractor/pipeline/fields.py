# Fields: resolve the attribute chains a record reads to config fields, their docs, defaults and CLI flags.
from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from extractor.model.scanned import ScannedClassFacts, ScannedFieldFacts, ScannedFlagFacts
from extractor.pipeline.lines import LineData

__all__ = ["FieldIndex", "from_self"]

_ANNOTATION_NAME = re.compile(r"[A-Za-z_][\w.]*")
RELATED_LIMIT = 10


@dataclass
class _Class:
    facts: ScannedClassFacts
    fields: dict[str, ScannedFieldFacts] = field(default_factory=dict)


# A record's field (records.FieldRef) as its extraction holds it: every key, in the model's order, by its
# alias (`class`). Built as data (tests/test_fields.py validates them): the catalog is written without pydantic.
FieldRefData = dict[str, Any]


def _field_ref(
    expression: str,
    *,
    owner: str | None = None,
    facts: ScannedFieldFacts | None = None,
    flags: list[str] | None = None,
    via: str | None = None,
    key: str | None = None,
    reason: str | None = None,
) -> FieldRefData:
    return {
        "expression": expression,
        "class": owner,
        "field": facts.name if facts is not None else None,
        "annotation": facts.annotation if facts is not None else None,
        "default": facts.default if facts is not None else None,
        "constraints": list(facts.constraints) if facts is not None else [],
        "doc": facts.doc if facts is not None else None,
        "flags": flags or [],
        "via": via,
        "key": key,
        "resolved": facts is not None,
        "reason": reason,
    }


def _unresolved(chain: str, reason: str) -> FieldRefData:
    return _field_ref(chain, reason=reason)


def _outside_self(chain: str) -> str | None:
    """Why a chain reaches no config field whatever the class it is read in (it does not start at
    self: a parameter, a local or a global), as a user of the command line reads it; None if it starts
    at self."""
    if _at_self(chain):
        return None
    return "a value vLLM passes in or works out here, not a setting"


def _at_self(chain: str) -> bool:
    return chain.partition(".")[0] == "self"


def from_self(reads: Iterable[str]) -> list[str]:
    """The chains of `reads` that may reach a config field at some revision: those starting at self."""
    return [chain for chain in reads if _at_self(chain)]


class FieldIndex:
    """Config classes (fields, docs, defaults, constraints) and the CLI flags that set them, at one revision."""

    def __init__(
        self,
        classes: dict[str, _Class],
        flags: dict[tuple[str, str], list[str]],
        boolean: set[tuple[str, str]],
        overwritten: set[tuple[str, str]],
    ) -> None:
        self.classes = classes
        self.flags = flags
        self.boolean = boolean
        self.overwritten = overwritten
        self.root = self._root()
        self._data: dict[tuple[str, str], dict[str, Any]] = {}
        self._settings: dict[str, list[tuple[str, str]]] | None = None  # a field's name -> the flagged ones
        # The field of the root config through which the command line sets each config class.
        self.cli_parent: dict[str, tuple[str, str]] = {}
        if self.root is not None:
            for name, facts in self.classes[self.root].fields.items():
                target = self.class_of(facts.annotation)
                if target is not None and target != self.root:
                    self.cli_parent.setdefault(target, (self.root, name))

    @classmethod
    def build(cls, *, classes: Iterable[ScannedClassFacts], flags: ScannedFlagFacts | None) -> FieldIndex:
        known: dict[str, _Class] = {}
        for facts in classes:
            known.setdefault(facts.name, _Class(facts))
        for entry in known.values():
            entry.fields = cls._fields_of(entry.facts.name, known, set())
        flag_map: dict[tuple[str, str], list[str]] = {}
        boolean: set[tuple[str, str]] = set()
        overwritten: set[tuple[str, str]] = set()
        if flags is not None:
            for class_name, field_name, options, explicit in flags.flags:
                flag_map.setdefault((class_name, field_name), []).extend(
                    o for o in options if o not in flag_map.get((class_name, field_name), [])
                )
                if explicit:
                    boolean.add((class_name, field_name))
            overwritten = {(attr, key) for attr, key in flags.overwritten}
        return cls(known, flag_map, boolean, overwritten)

    @staticmethod
    def _fields_of(name: str, known: dict[str, _Class], seen: set[str]) -> dict[str, ScannedFieldFacts]:
        if name in seen or name not in known:
            return {}
        seen.add(name)
        fields: dict[str, ScannedFieldFacts] = {}
        for base in known[name].facts.bases:
            fields.update(FieldIndex._fields_of(base.rpartition(".")[2], known, seen))
        fields.update((f.name, f) for f in known[name].facts.fields)
        return fields

    def _root(self) -> str | None:
        """The config that holds the others: the class with the most fields typed as config classes."""
        best, count = None, 0
        for name, entry in sorted(self.classes.items()):
            typed = sum(1 for f in entry.fields.values() if self.class_of(f.annotation) not in (None, name))
            if typed > count:
                best, count = name, typed
        return best

    def class_of(self, annotation: str) -> str | None:
        """Unwrap `X | None`, `Optional[X]`, `"X"` to the config class an annotation names, if one."""
        names = [n.rpartition(".")[2] for n in _ANNOTATION_NAME.findall(annotation.replace("'", " ").replace('"', " "))]
        candidates = [n for n in names if n in self.classes]
        return candidates[0] if len(set(candidates)) == 1 else None

    def options_of(self, class_name: str, field_name: str, facts: ScannedFieldFacts) -> list[str]:
        """The flags that set a field, with the `--no-` forms argparse adds for a boolean."""
        options = list(self.flags.get((class_name, field_name), []))
        names = {n.rpartition(".")[2] for n in _ANNOTATION_NAME.findall(facts.annotation)}
        optional_value = names - {"None", "Optional", "Union"} == {"bool", "str"}
        if (class_name, field_name) in self.boolean or ("bool" in names and not optional_value):
            options += ["--no-" + o[2:] for o in options if o.startswith("--") and not o.startswith("--no-")]
        return options

    def resolve(self, chain: str, function: str) -> FieldRefData:
        """Follow `self.a.b` from the class of the enclosing method to a config field."""
        owner = function.split(".")[0]
        unreachable = self._unreachable(chain, owner)
        if unreachable is not None:
            return _unresolved(chain, unreachable)
        parts = chain.split(".")
        if len(parts) == 1:
            return _unresolved(chain, "the whole config, not one of its settings")
        current = owner
        cli = current == self.root or current in self.cli_parent
        parent = self.cli_parent.get(current) if current != self.root else None
        for position, attribute in enumerate(parts[1:], start=1):
            facts = self.classes[current].fields.get(attribute)
            if facts is None:
                said = f"worked out by vLLM: {current}.{attribute} is no setting (a property or method)"
                return _unresolved(chain, said)
            if position == len(parts) - 1:
                return self._reference(chain, current, facts, cli=cli, parent=parent)
            target = self.class_of(facts.annotation)
            if target is None:
                return _unresolved(
                    chain, f"a part of {current}.{attribute} ({facts.annotation}), which is not set part by part"
                )
            cli = cli and current == self.root and self.cli_parent.get(target) == (current, attribute)
            parent = (current, attribute)
            current = target
        raise AssertionError("unreachable")

    def _reference(
        self, chain: str, owner: str, facts: ScannedFieldFacts, *, cli: bool, parent: tuple[str, str] | None
    ) -> FieldRefData:
        flags = self.options_of(owner, facts.name, facts) if cli else []
        via = key = reason = None
        if not cli:
            reason = "a setting of a config vLLM builds itself, not of the one the command line sets"
        elif flags and facts.name in self.classes[owner].facts.postInit:
            reason = f"vLLM may set it itself, in {owner}.__post_init__, whatever the flag says"
        elif not flags and parent is not None:
            parent_flags = [o for o in self.flags.get(parent, []) if o.startswith("--")]
            derived = self._derived(owner, facts, parent)
            if derived:
                reason = f"derived by vLLM: {derived}"
            elif parent_flags:
                via, key = parent_flags[0], facts.name
        return _field_ref(chain, owner=owner, facts=facts, flags=flags, via=via, key=key, reason=reason)

    def _derived(self, owner: str, facts: ScannedFieldFacts, parent: tuple[str, str]) -> str | None:
        if not facts.init:
            return "init=False"
        if facts.name in self.classes[owner].facts.postInit:
            return f"assigned in {owner}.__post_init__"
        if (parent[1], facts.name) in self.overwritten:
            return f"set by the CLI code before {owner} is built"
        return None

    def fields_of(self, reads: Sequence[str], function: str) -> list[dict[str, Any]]:
        """Resolve the chains a record reads (see `reads`), as data."""
        return [self._resolved_data(chain, function) for chain in reads]

    def resolved(self, chains: Sequence[str], function: str) -> list[dict[str, Any]]:
        """The fields the chains read in `function` reach, as data (those of `fields_of` that resolve)."""
        if function.split(".")[0] not in self.classes:  # (only a config class's method reads its fields)
            return []
        return [found for found in self.fields_of(chains, function) if found["resolved"]]

    def _resolved_data(self, chain: str, function: str) -> dict[str, Any]:
        # Many records read the same chains: each is resolved (and dumped) once per owning class; most
        # do not start at self, are unresolved whatever the class, and are built as data.
        outside = _outside_self(chain)
        owner = function.split(".")[0]
        key = (chain, owner if outside is None else "")
        found = self._data.get(key)
        if found is None:
            unreachable = self._unreachable(chain, owner)
            found = _unresolved(chain, unreachable) if unreachable is not None else self.resolve(chain, function)
            self._data[key] = found
        return found

    def _unreachable(self, chain: str, owner: str) -> str | None:
        """Why a chain read in a method of `owner` reaches no field before any field is looked at: it does
        not start at self, or self is no config class; None if it may reach one."""
        outside = _outside_self(chain)
        if outside is None and owner not in self.classes:
            return f"read in {owner}, which is no config: not a setting"
        if outside is not None:
            return outside + self._namesake(chain)
        return None

    def _namesake(self, chain: str) -> str:
        """The one setting the command line sets whose name a value not read from self bears (a
        parameter `max_model_len` is, most often, ModelConfig.max_model_len), as a clause; or nothing."""
        if self._settings is None:
            self._settings = {}
            for owner, field in self.flags:
                known = owner in self.classes and field in self.classes[owner].fields
                if known and (owner == self.root or owner in self.cli_parent):
                    self._settings.setdefault(field, []).append((owner, field))
        found = self._settings.get(chain.rpartition(".")[2], [])
        if len(found) != 1:
            return ""
        ((owner, field),) = found
        options = self.options_of(owner, field, self.classes[owner].fields[field])
        return f"; the setting of that name, {owner}.{field}, is set with {', '.join(options)}"

    def annotate(self, lines: Sequence[LineData], reads: Sequence[Sequence[str]]) -> list[LineData]:
        """Set `fields` and `related` in every line's extraction (lines sorted by file and line; `reads`
        holds each line's chains)."""
        functions = [line["extraction"]["function"] for line in lines]
        paths = [line["record"]["filePath"] for line in lines]
        numbers = [line["record"]["lineNumber"] for line in lines]
        resolved = [self.fields_of(chains, function) for function, chains in zip(functions, reads, strict=True)]
        keys = [sorted({(f["class"] or "", f["field"] or "") for f in refs if f["resolved"]}) for refs in resolved]
        by_field: dict[tuple[str, str], list[int]] = {}
        by_function: dict[tuple[str, str], list[int]] = {}
        for index, (path, function) in enumerate(zip(paths, functions, strict=True)):
            for key in keys[index]:
                by_field.setdefault(key, []).append(index)
            by_function.setdefault((path, function), []).append(index)
        for index, line in enumerate(lines):
            related: list[int] = []
            taken = {index}
            for group in [by_function[(paths[index], functions[index])]] + [by_field[key] for key in keys[index]]:
                for other in _nearest(paths, numbers, group, index, RELATED_LIMIT - len(related), taken):
                    related.append(other)
                    taken.add(other)
                if len(related) >= RELATED_LIMIT:
                    break
            extraction = line["extraction"]
            extraction["fields"] = resolved[index]
            extraction["related"] = [lines[i]["record"]["id"] for i in related]
        return list(lines)


def _nearest(
    paths: Sequence[str], numbers: Sequence[int], group: list[int], origin: int, limit: int, taken: set[int]
) -> list[int]:
    """Pick up to `limit` members of a group (indexes of lines in file and line order, whose paths and line
    numbers are given): same file first, nearest lines first (the earlier of two as near), then the other
    files in path order. Linear in what it returns, not in the group."""
    if limit <= 0:
        return []
    path, number = paths[origin], numbers[origin]
    position = bisect.bisect_left(group, origin)
    before, after = position - 1, position
    size = len(group)
    picked: list[int] = []
    same_file = True
    while len(picked) < limit and (before >= 0 or after < size):
        low = group[before] if before >= 0 else -1  # (-1: none on that side)
        high = group[after] if after < size else -1
        if same_file:
            low_near = low >= 0 and paths[low] == path
            high_near = high >= 0 and paths[high] == path
            if not (low_near or high_near):
                same_file = False
                continue
            take_low = low_near and (not high_near or abs(numbers[low] - number) <= abs(numbers[high] - number))
        else:
            take_low = low >= 0  # other files: in path order, this one's neighbours first
        if take_low:
            best, before = low, before - 1
        else:
            best, after = high, after + 1
        if best not in taken:
            picked.append(best)
    return picked
