"""Recall and false matches of `match` on real vLLM error texts, collected at run time from release sdists.

Usage: python scripts/recall.py [--texts-from 0.6.0,0.8.5,0.10.0,0.20.0,0.28.0,0.33.0]
                                [--catalog release:0.5.0..0.33.0] [--threshold-table]

The collection is built from the `tests/` and `docs/` folders the release sdists ship beside `vllm/`
(nothing of vLLM's is stored in this repository):
- `pytest.raises(SomeError, match="...")` whose pattern is literal text once its escapes are undone: the
  start (or a fragment) of a message vLLM raised, as a user quoting from memory would paste it;
- `str(exc) == "..."` / `str(e.value) == "..."` comparisons: whole messages;
- lines of the docs that read `SomeError: message` (25 characters or more): errors users meet.
Each text is pasted as `SomeError: text` into one matcher over every catalog `--catalog` names. The
right answers are decided without the matcher, by brute force over every template of every release
matched against (one of another release that renders the text the same is right too): a template is
right when a rendering of it starts with the text (the `regex` module's partial fullmatch, also with a
final period added), or when the text is a literal part of its message. A confident answer none of
whose templates is right is a false match. `match=` texts are split in those that start a message
(what a user pasting a cut error shows) and those taken from inside one.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import regex

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extractor.catalog.spec import parse_catalogs
from extractor.pipeline.extract import ExtractOptions
from extractor.query.match.index import match_index
from extractor.query.match.pattern import MatchTemplate
from extractor.repo.release import fetch_sdist

_DOC_ERROR = re.compile(r"^\s*(?:[\w.]+\.)?(?P<cls>[A-Z]\w*(?:Error|Exception)): (?P<msg>.{25,}?)\s*$")
_REGEX_META = re.compile(r"(?<!\\)[.^$*+?{}\[\]|()]|\\[dDsSwWbBAZ0-9]")


@dataclass(frozen=True)
class Text:
    release: str
    kind: str  # "match=", "str(exc)", "docs"
    cls: str
    text: str
    where: str


def _literal(pattern: str) -> str | None:
    """The literal text a `match=` pattern stands for, or None if it uses regex syntax."""
    pattern = pattern.removeprefix("^").removesuffix("$")
    if _REGEX_META.search(pattern):
        return None
    return re.sub(r"\\(.)", r"\1", pattern)


def _name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _from_test(source: str, where: str, release: str) -> Iterator[Text]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) == "raises" and node.args:
            for keyword in node.keywords:
                if keyword.arg == "match" and isinstance(keyword.value, ast.Constant):
                    value = keyword.value.value
                    literal = _literal(value) if isinstance(value, str) else None
                    if literal and len(literal) >= 20:
                        yield Text(release, "match=", _name(node.args[0]) or "Exception", literal, where)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
            left, right = node.left, node.comparators[0]
            for call, other in ((left, right), (right, left)):
                if (
                    isinstance(call, ast.Call)
                    and _name(call.func) == "str"
                    and isinstance(other, ast.Constant)
                    and isinstance(other.value, str)
                    and len(other.value) >= 20
                ):
                    yield Text(release, "str(exc)", "Exception", other.value, where)


def collect(version: str) -> list[Text]:
    """Every error text of one release's tests/ and docs/, read from its sdist."""
    out: list[Text] = []
    with tarfile.open(fetch_sdist(version).path, "r:gz") as archive:
        for member in archive:
            path = member.name.partition("/")[2]
            if not member.isfile() or not path.startswith(("tests/", "docs/")):
                continue
            handle = archive.extractfile(member)
            if handle is None:
                continue
            text = handle.read().decode("utf-8", "replace")
            if path.endswith(".py") and path.startswith("tests/"):
                out += _from_test(text, path, version)
            elif path.endswith((".md", ".rst", ".txt")):
                for number, line in enumerate(text.splitlines(), start=1):
                    found = _DOC_ERROR.match(line)
                    if found and "..." not in found["msg"] and "<" not in found["msg"]:
                        out.append(Text(version, "docs", found["cls"], found["msg"], f"{path}:{number}"))
    return list({(t.kind, t.cls, t.text): t for t in out}.values())


def _fits(template: MatchTemplate, text: str) -> str | None:
    """How a template could have printed `text`, decided with nothing of `match`: "whole" (its pattern
    fullmatches the text, or the text with a final period added), "start" (a rendering starts with the
    text: the `regex` module's partial fullmatch, only for templates that start with literal text, else
    any text would be the start of their first value) or "inside" (the text is part of its literal
    message); None if it could not."""
    first = template.pieces[0] if template.pieces else ""
    last = template.pieces[-1] if template.pieces else ""
    # Sound shortcuts: a rendering starts with the first literal piece and ends with the last one.
    starts = not first or text.startswith(first) or first.startswith(text)
    for candidate in (text, text + "."):
        if not starts or not candidate.endswith(last):
            continue
        try:
            if regex.fullmatch(template.messagePattern, candidate, regex.S, timeout=0.05):
                return "whole"
        except (TimeoutError, regex.error):
            continue
    if len(first) >= 4 and starts:
        try:
            if regex.fullmatch(template.messagePattern, text, regex.S, partial=True, timeout=0.05):
                return "start"
        except (TimeoutError, regex.error):
            pass
    return "inside" if text in template.errorMessage else None


def right_templates(text: Text, templates: list[MatchTemplate]) -> set[int]:
    """The templates of the text's release that could have printed it (brute force): every one that fits
    it, leaving out those of under 4 characters of literal text (`f"{what}: {detail}"` fits anything)."""
    return {id(t) for t in templates if t.literal >= 4 and _fits(t, text.text) is not None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts-from", default="0.6.0,0.8.5,0.10.0,0.20.0,0.28.0,0.33.0")
    parser.add_argument("--catalog", default="release:0.5.0..0.33.0")
    parser.add_argument("--path", default="vllm")
    parser.add_argument("--threshold-table", action="store_true", help="recall and false matches per threshold")
    parser.add_argument("--show-misses", type=int, default=0, metavar="N", help="print N texts missed")
    parser.add_argument("--show-false", type=int, default=0, metavar="N", help="print N false matches")
    args = parser.parse_args()
    options = ExtractOptions(paths=(args.path,), exceptions=("*",))
    index = match_index([parse_catalogs(args.catalog, repo="")], repo="", options=options)
    matcher = index.matcher
    rows: list[tuple[Text, set[int], list[tuple[int, int, bool]]]] = []
    for version in args.texts_from.split(","):
        held = matcher.templates  # a template of another release that renders the text as well is right too
        for text in collect(version):
            right = right_templates(text, held)
            result = matcher.match(f"{text.cls}: {text.text}")
            answers = [(id(m.template), m.literal, m.confident) for m in (*result.matches, *result.weak)]
            if text.kind == "match=" and right:
                starts = any(_fits(t, text.text) != "inside" for t in held if id(t) in right)
                text = Text(text.release, "match=start" if starts else "match=inside", text.cls, text.text, text.where)
            rows.append((text, right, answers))
    # The matcher decides what is confident (find.py); the table asks what a floor on the literal text shown
    # would add to that (0: none).
    thresholds = range(0, 31, 2) if args.threshold_table else [0]
    print(f"{len(rows)} texts from {args.texts_from}; matched against {len(index.labels)} catalogs ({args.catalog})")
    for threshold in thresholds:
        report(rows, threshold)
    missed = [(t, a) for t, right, a in rows if right and not {x for x, _, _ in a} & right]
    for text, answers in missed[: args.show_misses]:
        print(f"missed [{text.kind}] {text.cls}: {text.text[:160]!r} ({len(answers)} other answers)")
    by_id = {id(t): t for t in matcher.templates}
    false = [(t, a) for t, right, a in rows if (confident := {x for x, _, sure in a if sure}) and not confident & right]
    for text, answers in false[: args.show_false]:
        print(f"false [{text.kind}] {text.cls}: {text.text[:120]!r}")
        for answer, literal, _ in answers[:2]:
            print(f"      -> {by_id[answer].errorMessage[:120]!r} ({literal} characters of literal text shown)")


def report(rows: list[tuple[Text, set[int], list[tuple[int, int, bool]]]], threshold: int) -> None:
    by_kind: dict[str, list[int]] = {}
    for text, right, answers in rows:
        confident = {a for a, literal, sure in answers if sure and literal >= threshold}
        counts = by_kind.setdefault(text.kind, [0, 0, 0, 0, 0])
        counts[0] += 1
        counts[1] += bool(right)
        counts[2] += bool(right) and bool(confident & right)
        counts[3] += bool(confident) and not confident & right
        counts[4] += bool(confident)
    total = [sum(c[i] for c in by_kind.values()) for i in range(5)]
    for kind, (n, has_right, hit, false, answered) in [*sorted(by_kind.items()), ("all", total)]:
        print(
            f"threshold {threshold:2}  {kind:9} texts {n:5}  with a right template {has_right:5}  "
            f"recall {hit / max(has_right, 1):6.1%}  false matches {false:4} of {answered:5} answers "
            f"({false / max(answered, 1):5.1%})"
        )


if __name__ == "__main__":
    main()
