# Score: what a match is worth, as one number (`bits`) with one threshold for a confident answer, and the order
# answers are given in.
#
# A hit's bits are the evidence, in bits, that its template printed the text rather than the best other
# explanation of it (a log-likelihood ratio):
# - against chance, the literal words it shows: each weighs log2(templates / templates with that word),
#   counted over the catalog's templates and the background's together (common English words weigh at most
#   one, see programs.py), and the class the paste shows adds what it says;
# - each repair the paste needed costs log2(P(the paste looks so | another text) / P(a paste of the template's
#   message needs it)), measured on the dev pastes (`python scripts/calibrate.py`): a final period left out
#   (PERIOD_BITS), a typo (TYPO_BITS), a cut (CUT_BITS);
# - another template that explains as much of the same place (or a cut inside a value, which cannot tell
#   the text goes on as this template's does) costs RIVAL_BITS;
# - a place another explanation takes at least as well leaves no evidence at all (bits at most 0): another
#   template's literal text in this one's values (demoted), a message that is part of a sentence (inside), a
#   catch-all template, a library's frame innermost in a traceback, a background message (find.py).
# A hit is confident when its bits reach CONFIDENT_BITS and it shows MIN_LIT characters of literal text (too
# little text is no evidence of anything, however rare its words).
from __future__ import annotations

from collections.abc import Sequence

from extractor.query.match.locate import Hit

__all__ = [
    "CONFIDENT_BITS",
    "CUT_BITS",
    "MAX_WEAK",
    "MIN_LIT",
    "PERIOD_BITS",
    "RIVAL_BITS",
    "TYPO_BITS",
    "judge",
    "ranked",
    "refute",
    "tier",
]

CONFIDENT_BITS = 8.0  # the evidence a confident answer needs: 1 in 256 against the best other explanation
RIVAL_BITS = 10.0  # what another template explaining as much of the same place takes away
PERIOD_BITS = 3.7  # left out by 8 of 133 right first answers that could, against 95 of 124 others' texts
TYPO_BITS = 5.8  # a typo repaired: 5 of 273 right first answers of the dev pastes
CUT_BITS = 2.7  # a paste cut short: 41 of 273
MIN_LIT = 10  # skeleton characters (spaces aside) of literal text a confident answer shows
MAX_WEAK = 5


def judge(hits: list[Hit], *, catch_all: Sequence[bool], class_weight: dict[str, float]) -> None:
    """Weigh each hit of one paste (its `bits`, see the module's comment) and decide which are confident."""
    _demote(hits)
    standing = [hit for hit in hits if not hit.demoted and not hit.inside and not catch_all[hit.template]]
    for hit in standing:
        if hit.shown_class is not None:  # the class shown says as much as a word as rare
            hit.info += class_weight.get(hit.shown_class, 0.0)
    for hit in hits:
        hit.bits = hit.info - PERIOD_BITS * hit.period - TYPO_BITS * hit.typo - CUT_BITS * hit.cut
        if hit.demoted or hit.inside or catch_all[hit.template]:
            refute(hit)
            continue
        rival = hit.open_end or any(
            o is not hit and o.literal >= hit.literal and o.start < hit.end and hit.start < o.end for o in standing
        )
        if rival:
            hit.bits -= RIVAL_BITS
        hit.confident = hit.literal >= MIN_LIT and hit.bits >= CONFIDENT_BITS


def refute(hit: Hit) -> None:
    """Another explanation takes the hit's place at least as well: no evidence left for it."""
    hit.bits = min(hit.bits, 0.0)
    hit.confident = False


def _demote(hits: list[Hit]) -> None:
    """A hit whose holes took text another hit shows as literal text, with more literal text in all, is
    weak for this paste (`{feature} is not supported` against `Chunked prefill is not supported`); one
    standing wholly inside another's hole is a message quoted inside another, and both stand."""
    for hit in hits:
        for other in hits:
            if other is hit or not other.spans:
                continue
            if (
                tier(other) < tier(hit)
                and other.literal >= hit.literal
                and hit.start < other.end
                and other.start < hit.end
            ):
                hit.demoted = True  # the paste read whole by one template: no cut of another's, no period added
                break
            if other.literal <= hit.literal:
                continue
            if _inside(other, hit):
                continue
            if (
                not _inside(hit, other)
                and other.literal > hit.literal
                and other.spans
                and hit.spans
                and other.spans[0][0] <= hit.spans[0][0]
                and hit.spans[-1][1] <= other.spans[-1][1]
            ):
                hit.demoted = True  # a shorter message read inside a longer one's own text
                break
            if any(a < d and c < b for a, b in hit.holes for c, d in other.spans):
                hit.demoted = True
                break


def _inside(hit: Hit, other: Hit) -> bool:
    """Whether a hit stands wholly inside one of another's values."""
    return bool(hit.spans) and any(a <= hit.spans[0][0] and hit.spans[-1][1] <= b for a, b in other.holes)


def tier(hit: Hit) -> int:
    """How far a hit had to stretch to explain the paste: not at all, a final period, a typo, a cut."""
    return 3 if hit.cut else 2 if hit.typo else 1 if hit.period else 0


def ranked(hits: list[Hit]) -> list[Hit]:
    """Confident hits first: whole ones before those that needed a final period or a cut, then in the order
    they stand (a message quoted in another's value just before it); then weak ones, most literal text first."""
    shown = [h for h in hits if h.confident]

    def place(hit: Hit) -> tuple[int, int]:
        outer = next((o for o in shown if o is not hit and _inside(hit, o)), None)
        return (outer.start, 0) if outer is not None else (hit.start, 1)

    confident = sorted(
        shown,
        key=lambda h: (
            tier(h),
            *place(h),
            h.start,
            not h.agrees,
            not h.verbatim,
            not h.spaced,
            -h.literal,
            -h.info,
            h.template,
        ),
    )
    # (A cut that shows little of a template's text is no answer at all: a few common words at a text's end.)
    unsure = (h for h in hits if not h.confident and not (h.cut and h.literal < MIN_LIT))
    weak = sorted(unsure, key=lambda h: (-h.literal, -h.info, h.start, h.template))
    return confident + weak[:MAX_WEAK]
