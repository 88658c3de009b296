# Score: what a match is worth: how much its literal text says of which template printed it, whether that is
# enough for a confident answer, and the order answers are given in.
#
# Each word of a template weighs log2(templates / templates with that word) bits (common English words weigh
# at most one, see programs.py), and a match is confident when the words it shows weigh INFO_MIN bits, or
# INFO_UNIQUE when no other template explains the same place with as much literal text.
from __future__ import annotations

from collections.abc import Sequence

from extractor.query.match.locate import Hit

__all__ = ["INFO_MIN", "INFO_UNIQUE", "MAX_WEAK", "MIN_LIT", "judge", "ranked", "tier"]

INFO_MIN = 18.0  # bits the literal words a paste shows must weigh for a confident answer
MIN_LIT = 10  # skeleton characters (spaces aside) of literal text a confident answer shows
MAX_WEAK = 5
INFO_UNIQUE = 8.0  # bits enough for an answer no other template's text competes with


def judge(hits: list[Hit], *, catch_all: Sequence[bool], class_weight: dict[str, float]) -> None:
    """Decide which hits of one paste are confident: none that another's text demotes (see `_demote`) or whose
    template is a catch-all; the class the paste shows adds what it says; then enough literal text, whose
    words weigh INFO_MIN bits, or INFO_UNIQUE when no other hit explains as much of the same place."""
    _demote(hits)
    standing = [hit for hit in hits if not hit.demoted and not hit.inside and not catch_all[hit.template]]
    for hit in standing:
        if hit.shown_class is not None:  # the class shown says as much as a word as rare
            hit.info += class_weight.get(hit.shown_class, 0.0)
    for hit in standing:
        if hit.literal < MIN_LIT:
            continue
        alone = not hit.open_end and not any(
            o is not hit and o.literal >= hit.literal and o.start < hit.end and hit.start < o.end for o in standing
        )
        hit.confident = hit.info >= INFO_MIN or (alone and hit.info >= INFO_UNIQUE)


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
