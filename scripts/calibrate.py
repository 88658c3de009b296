"""Calibrate `match`'s score (score.py): what each repair costs, and how right answers are at each score.

Usage: python scripts/calibrate.py [--held-out]

Reads the dev pastes (tests/data/pastes: corpus.jsonl and fresh.jsonl whole, both used while the matcher was
built, and the dev halves of fresh2.jsonl and fresh3.jsonl), each answered against its release's whole-package
catalog, as scripts/pastes.py does. Prints:
- the repairs the right first answers needed, and what each costs in bits: log2 of how likely the paste looks
  so if another text printed it (H0), over how likely a paste of the template's message needs the repair
  (H1). A typo: -log2 of the share of right first answers that needed one (H0 gives no typo to repair). A
  cut: the same. A final period left out: among right first answers whose template ends with a period and
  that show it to its end, the share that left it out (H1), against the share of the texts vLLM did not
  raise that end without one (H0). PERIOD_BITS, TYPO_BITS and CUT_BITS are these, rounded;
- for each band of `bits`, the first answers in it, right or wrong, and the texts vLLM did not raise whose
  best catalog hit falls in it (how far below the threshold they stay).
--held-out adds the held-out halves of fresh2.jsonl and fresh3.jsonl in tables of their own: never used to set
a cost.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pastes import _expected, _matchers, _places

from extractor.query.match.locate import Hit
from extractor.query.match.matcher import Matcher
from extractor.query.match.score import CONFIDENT_BITS, CUT_BITS, PERIOD_BITS, TYPO_BITS, tier

PASTES = Path(__file__).resolve().parents[1] / "tests" / "data" / "pastes"
DEV = (("corpus.jsonl", None), ("fresh.jsonl", None), ("fresh2.jsonl", "dev"), ("fresh3.jsonl", "dev"))
HELD_OUT = (("fresh2.jsonl", "held-out"), ("fresh3.jsonl", "held-out"))
BANDS = (0.0, CONFIDENT_BITS, 12.0, 16.0, 24.0, 48.0)
_BANDS = [(low, high, f"{low:g} to {high:g}") for low, high in zip(BANDS, (*BANDS[1:], math.inf), strict=True)]


def rows_of(sets: tuple[tuple[str, str | None], ...]) -> list[dict[str, Any]]:
    rows = []
    for name, split in sets:
        for line in (PASTES / name).read_text(encoding="utf-8").splitlines():
            if line.strip() and (row := json.loads(line)) and (split is None or row["split"] == split):
                rows.append(row)
    return rows


def band(bits: float) -> str:
    if bits <= 0:
        return "<= 0"  # (another explanation takes the place: see score.refute)
    return next(name for low, high, name in _BANDS if low <= bits < high)


def repair(hit: Hit) -> str:
    """The repair a hit needed, as score.tier ranks them."""
    return ("none", "period", "typo", "cut")[tier(hit)]


def measure(title: str, rows: list[dict[str, Any]], matchers: dict[str, Matcher]) -> None:
    repairs: Counter[str] = Counter()
    right: Counter[str] = Counter()
    wrong: Counter[str] = Counter()
    negatives: Counter[str] = Counter()
    full_stop = left_out = 0  # right first answers whose template ends with a period, shown to its end
    no_period = negative_texts = 0
    for row in rows:
        matcher = matchers[row["release"]]
        answer = matcher.finder.answer(row["text"])
        if row["expect"] is None:
            mine = [hit.bits for hit in [*answer.confident, *answer.weak]]
            negatives[band(max(mine)) if mine else "no hit"] += 1
            negative_texts += 1
            no_period += not row["text"].rstrip().rstrip("`'\"").endswith(".")
            continue
        if not answer.confident:
            continue
        first = answer.confident[0]
        template = matcher.templates[first.template]
        if _places(template) & _expected(row):
            right[band(first.bits)] += 1
            repairs[repair(first)] += 1
            if not first.cut and template.errorMessage.rstrip().endswith("."):
                full_stop += 1
                left_out += first.period
        else:
            wrong[band(first.bits)] += 1
    total = sum(repairs.values())
    print(f"## {title}: {len(rows)} texts\n")
    print("| repair | right first answers | share | cost (bits) |")
    print("| --- | ---: | ---: | ---: |")
    for name in ("none", "typo", "cut"):
        share = repairs[name] / total if total else 0.0
        cost = f"{-math.log2(share):.2f}" if share and name != "none" else "-"
        print(f"| {name} | {repairs[name]} of {total} | {100 * share:.1f}% | {cost} |")
    if full_stop and left_out and negative_texts and no_period:
        h1, h0 = left_out / full_stop, no_period / negative_texts
        print(
            f"| period left out | {left_out} of {full_stop} ending with one (H0: {no_period} of {negative_texts}"
            f" others' texts end without) | {100 * h1:.1f}% | {math.log2(h0 / h1):.2f} |"
        )
    print(f"\nin score.py: PERIOD_BITS = {PERIOD_BITS}, TYPO_BITS = {TYPO_BITS}, CUT_BITS = {CUT_BITS}\n")
    print("| bits | right first | wrong first | texts vLLM did not raise (best hit) |")
    print("| --- | ---: | ---: | ---: |")
    for name in ["no hit", "<= 0", *(name for _, _, name in _BANDS)]:
        print(f"| {name} | {right[name]} | {wrong[name]} | {negatives[name]} |")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--held-out", action="store_true", help="also measure fresh2.jsonl's held-out half")
    args = parser.parse_args(argv)
    dev = rows_of(DEV)
    held = rows_of(HELD_OUT) if args.held_out else []
    matchers = _matchers({row["release"] for row in [*dev, *held]})
    measure("dev", dev, matchers)
    if held:
        measure("held-out", held, matchers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
