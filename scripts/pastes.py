"""Recall and false answers of `match` on real pastes, per shape: tests/data/pastes/corpus.jsonl.

Usage: python scripts/pastes.py [--split dev|held-out|all] [--show-misses] [--corpus PATH]

Each line of the corpus is a text as users paste it (an issue title, a log, a sentence quoting an error, a
pydantic report, ...) with the shape it is in, where it came from, the release whose whole-package catalog
(`--path vllm --exception '*'`) is the ground truth, and `expect`: the raise site that printed it, decided by
reading vLLM's source (never by `match`), or null when vLLM did not raise the text. `also` lists the other
sites raising the very same message, which the text cannot tell apart. `split` is `dev` or `held-out` (the
same expected site is always in the same split), so that what is tuned on dev can be checked on held-out.

One matcher is built per release the corpus names. For a positive, the answer is right when the expected
site (or one of `also`) is among the places of the template of the FIRST confident answer; the columns:
- right 1st: the first confident answer is right;
- right any: some confident answer is right;
- wrong 1st: the first confident answer is another template;
- missed: no confident answer at all (weak ones, or none).
For a negative (vLLM did not raise it): confident (a false answer), weak only, none.
The goal the corpus measures: at least 95% of vLLM's texts right first, and no confident answer to a negative.
Only `Matcher.of_lines`, `Matcher.match` and the answers' `.matches`/`.weak` with their `.template`'s places
are used, so that the script outlives rewrites of the matcher.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extractor.catalog.load import open_catalog
from extractor.pipeline.extract import ExtractOptions
from extractor.query.match.matcher import Matcher

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "pastes" / "corpus.jsonl"
SPLITS = ("dev", "held-out")


@dataclass
class Tally:
    positives: int = 0
    right_first: int = 0
    right_any: int = 0
    wrong_first: int = 0
    missed: int = 0
    negatives: int = 0
    false: int = 0
    weak_only: int = 0
    none: int = 0
    misses: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in ("positives", "right_first", "right_any", "wrong_first", "missed"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("negatives", "false", "weak_only", "none"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def _places(template: Any) -> set[tuple[str, int]]:
    places = template.places() if callable(getattr(template, "places", None)) else template.sites
    return {(place.filePath, place.lineNumber) for place in places}


def _expected(row: dict[str, Any]) -> set[tuple[str, int]]:
    sites = [row["expect"], *row.get("also", [])]
    return {(site["filePath"], site["lineNumber"]) for site in sites}


def _matchers(releases: set[str]) -> dict[str, Matcher]:
    options = ExtractOptions(paths=("vllm",), exceptions=("*",))
    matchers = {}
    for release in sorted(releases):
        print(f"pastes: opening release:{release}", file=sys.stderr)
        catalog = open_catalog(f"release:{release}", repo="", options=options)
        matchers[release] = Matcher.of_lines(catalog.lines)
    return matchers


def _judge(row: dict[str, Any], matcher: Matcher, tally: Tally) -> None:
    result = matcher.match(row["text"])
    confident = list(result.matches)
    shown = json.dumps(row["text"][:300], ensure_ascii=False)
    if row["expect"] is None:
        tally.negatives += 1
        if confident:
            tally.false += 1
            site = confident[0].site
            tally.misses.append(f"false ({site.filePath}:{site.lineNumber}): {shown}")
        elif list(result.weak):
            tally.weak_only += 1
        else:
            tally.none += 1
        return
    tally.positives += 1
    expected = _expected(row)
    want = f"{row['expect']['filePath']}:{row['expect']['lineNumber']}"
    if not confident:
        tally.missed += 1
        tally.misses.append(f"missed (want {want}): {shown}")
        return
    if _places(confident[0].template) & expected:
        tally.right_first += 1
    else:
        tally.wrong_first += 1
        site = confident[0].site
        tally.misses.append(f"wrong ({site.filePath}:{site.lineNumber}, want {want}): {shown}")
    if any(_places(answer.template) & expected for answer in confident):
        tally.right_any += 1


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def table(title: str, tallies: dict[str, Tally]) -> str:
    lines = [
        f"### {title}",
        "",
        "| shape | positives | right 1st | right any | wrong 1st | missed | negatives | confident (false) | weak only"
        " | none |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    total = Tally()
    for shape in sorted(tallies):
        t = tallies[shape]
        total.add(t)
        lines.append(_row(shape, t))
    lines.append(_row("**all**", total))
    lines += [
        "",
        f"vLLM's texts right first: {total.right_first}/{total.positives} ({_pct(total.right_first, total.positives)});"
        f" confident answers to texts vLLM did not raise: {total.false}/{total.negatives}.",
        "",
    ]
    return "\n".join(lines)


def _row(shape: str, t: Tally) -> str:
    right = f"{t.right_first} ({_pct(t.right_first, t.positives)})"
    return (
        f"| {shape} | {t.positives} | {right} | {t.right_any} | {t.wrong_first} | {t.missed} | {t.negatives}"
        f" | {t.false} | {t.weak_only} | {t.none} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all")
    parser.add_argument("--show-misses", action="store_true", help="print the texts answered wrongly or not at all")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args(argv)

    rows = [json.loads(line) for line in args.corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    if args.split != "all":
        rows = [row for row in rows if row["split"] == args.split]
    matchers = _matchers({row["release"] for row in rows})
    by_split: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
    for row in rows:
        _judge(row, matchers[row["release"]], by_split[row["split"]][row["shape"]])

    splits = [s for s in SPLITS if s in by_split]
    for split in splits:
        print(
            table(
                f"{split} ({sum(t.positives + t.negatives for t in by_split[split].values())} texts)", by_split[split]
            )
        )
    if len(splits) > 1:
        merged: dict[str, Tally] = defaultdict(Tally)
        for split in splits:
            for shape, tally in by_split[split].items():
                merged[shape].add(tally)
                merged[shape].misses += tally.misses
        print(table(f"all ({len(rows)} texts)", merged))
    if args.show_misses:
        for split in splits:
            for shape in sorted(by_split[split]):
                for miss in by_split[split][shape].misses:
                    print(f"- [{split}, {shape}] {miss}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
