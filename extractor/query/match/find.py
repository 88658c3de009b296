# Find: the templates that explain a paste, wherever they stand in it, ranked by what their text says.
#
# The one definition of matching that `match` and the site's search share: the site's script
# (publish/site/assets/static/find.js) follows this module and the ones it calls step by step (paste.py: the
# paste made plain and read as its skeleton; programs.py: each template read as the ways it prints, its words
# weighed; locate.py: where each stands in a paste; score.py: which answers are confident, in which order;
# normalize.py: the messages Python prints itself). Its constants and tables are `SHARED`, written into
# find_constants.js beside find.js (`python scripts/gen_find_constants.py`); a catalog's own tables are
# `Finder.to_json()`, written into the site. tests/test_find_parity.py runs find.js in Node on a corpus of
# pastes and checks it answers each with the same hits as `Finder.answer`, field for field.
#
# A template is tried on a paste when the paste's skeleton shows one of its keys (a literal row's start or
# end), found for all templates at once by one Aho-Corasick automaton.
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from extractor.query.match.kinds import KIND_STOPS, KIND_TEXTS, MAX_ENDS, NONE_TOO, SENTENCE
from extractor.query.match.locate import (
    BUILTIN_BASES,
    CLASS_AT,
    CLASS_BEFORE,
    CLASS_WINDOW,
    CLOSERS,
    CLOSERS_NO_PERIOD,
    DIVERGE,
    LEAD_STOPS,
    MAX_STARTS,
    MIN_CUT,
    MIN_SENTENCE,
    OPENERS,
    REWRAP,
    SPACES,
    TAIL_STOPS,
    TYPO_COST,
    TYPO_EDGE,
    TYPO_LONG,
    TYPO_TRIES,
    Hit,
    best_hit,
    difference,
    shown_classes,
)
from extractor.query.match.normalize import WHITESPACE
from extractor.query.match.paste import (
    ANSI,
    CHARACTERS,
    CLASS_SHOWN_IN,
    ENTITIES,
    ENTITY,
    ESCAPE,
    ESCAPES,
    GAPS,
    MOJIBAKE,
    PREFIX_MAX,
    Paste,
)
from extractor.query.match.programs import (
    TYPO_MIN,
    class_weights,
    compile_programs,
    keys_of,
    programs_of,
    weights,
)
from extractor.query.match.score import (
    CONFIDENT_BITS,
    CUT_BITS,
    MAX_WEAK,
    MIN_LIT,
    PERIOD_BITS,
    RIVAL_BITS,
    TYPO_BITS,
    judge,
    ranked,
    refute,
    tier,
)

if TYPE_CHECKING:
    from extractor.query.match.pattern import MatchTemplate

__all__ = ["FRAME", "MAX_LINE", "SHARED", "Answer", "Finder"]

# A traceback's frame line: the file it names (`  File "/usr/lib/.../transformers/x.py", line 12, in f`), or a
# line that is its end (a paste cut inside the frame's path: `/site-packages/vllm/x.py", line 12, in f`).
FRAME = r'(?:File "|(?<![^\n]))([^"\n]+)", line [0-9]([0-9]*)'
_FRAME = re.compile(FRAME)
_NO_FOLDER = ("python", "argparse")
_INSTALLED = ("site-packages", "dist-packages")  # (the folder an installed distribution's package stands in)

MAX_LINE = 16_384  # characters of one input looked at: the work per line is bounded whatever the log holds

# Every constant and table find.js reads, by the name it reads it under (find_constants.js is written from
# it). Those of a catalog, and BUILTIN_BASES (the running interpreter's), are `Finder.to_json()`'s.
SHARED: dict[str, Any] = {
    "MAX_LINE": MAX_LINE,
    "CONFIDENT_BITS": CONFIDENT_BITS,
    "RIVAL_BITS": RIVAL_BITS,
    "PERIOD_BITS": PERIOD_BITS,
    "TYPO_BITS": TYPO_BITS,
    "CUT_BITS": CUT_BITS,
    "MIN_LIT": MIN_LIT,
    "MAX_WEAK": MAX_WEAK,
    "MIN_CUT": MIN_CUT,
    "MAX_STARTS": MAX_STARTS,
    "DIVERGE": DIVERGE,
    "TYPO_MIN": TYPO_MIN,
    "TYPO_LONG": TYPO_LONG,
    "TYPO_TRIES": TYPO_TRIES,
    "TYPO_EDGE": TYPO_EDGE,
    "TYPO_COST": TYPO_COST,
    "MIN_SENTENCE": MIN_SENTENCE,
    "PREFIX_MAX": PREFIX_MAX,
    "CLASS_WINDOW": CLASS_WINDOW,
    "CHARACTERS": CHARACTERS,
    "MOJIBAKE": MOJIBAKE,
    "ENTITIES": ENTITIES,
    "ESCAPES": ESCAPES,
    "LEAD_STOPS": LEAD_STOPS,
    "TAIL_STOPS": TAIL_STOPS,
    "OPENERS": OPENERS,
    "CLOSERS": CLOSERS,
    "CLOSERS_NO_PERIOD": CLOSERS_NO_PERIOD,
    "WHITESPACE": WHITESPACE,
    # Regular expressions both read alike (see locate.py)
    "ANSI": ANSI,
    "ENTITY": ENTITY,
    "ESCAPE": ESCAPE,
    "GAPS": GAPS,
    "SPACES": SPACES,
    "CLASS_SHOWN_IN": CLASS_SHOWN_IN,
    "CLASS_BEFORE": CLASS_BEFORE,
    "REWRAP": REWRAP,
    "CLASS_AT": CLASS_AT,
    "KIND_TEXTS": KIND_TEXTS,
    "KIND_STOPS": KIND_STOPS,
    "MAX_ENDS": MAX_ENDS,
    "NONE_TOO": NONE_TOO,
    "SENTENCE": SENTENCE,
    "FRAME": FRAME,
}


class Answer(NamedTuple):
    """What one input is answered with: the paste as read, its confident hits in order, else its weak ones; and
    the hits of background messages (`elsewhere`: what Python, argparse, ... print) that explain it at least as
    well as the catalog's, or with confidence on their own."""

    paste: Paste
    confident: list[Hit]
    weak: list[Hit]
    elsewhere: list[Hit]


_STATE = (
    "own",
    "libraries",
    "packages",
    "weigh",
    "programs",
    "classes",
    "class_weight",
    "catch_all",
    "kinds",
    "keys",
    "keyless_by_class",
)


class Finder:
    """Templates compiled to programs, with the words' weights and the keys that select them: the catalog's,
    then the background's (those numbered `own` and on), whose words are weighed with them."""

    def __init__(
        self,
        templates: Sequence[MatchTemplate],
        background: Sequence[MatchTemplate] = (),
        libraries: Sequence[str] = (),
    ) -> None:
        self.own = len(templates)
        self.libraries = list(libraries)  # (who prints each background template: `python`, `transformers`, ...)
        # The catalog's own top-level packages (`vllm`): a traceback's innermost frame in one says the catalog raised.
        self.packages = sorted({place.filePath.split("/")[0] for t in templates for place in t.places()} - {""})
        templates = [*templates, *background]
        rows = [programs_of(t) for t in templates]  # (each pattern read once)
        self.weigh = weights(rows)
        self.programs = [compile_programs(read, self.weigh) for read in rows]
        self.classes = [t.errorClass for t in templates]
        self.class_weight = class_weights(self.classes)
        self.catch_all = [t.catch_all for t in templates]
        self.kinds = [t.kinds for t in templates]
        self.keys = [keys_of(programs) for programs in self.programs]  # each template's
        self.keyless_by_class: dict[str, list[int]] = {}
        for index, keys in enumerate(self.keys):
            if not keys:
                self.keyless_by_class.setdefault(self.classes[index], []).append(index)
        self._automaton: Any = None

    def automaton(self) -> Any:
        """An Aho-Corasick automaton of every template's keys, each naming the templates that have it."""
        if self._automaton is None and any(self.keys):
            import ahocorasick

            having: dict[str, list[int]] = {}
            for index, keys in enumerate(self.keys):
                for key in keys:
                    having.setdefault(key, []).append(index)
            automaton = ahocorasick.Automaton()
            for key, indexes in having.items():
                automaton.add_word(key, tuple(indexes))
            automaton.make_automaton()
            self._automaton = automaton
        return self._automaton

    def __getstate__(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _STATE}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._automaton = None

    def to_json(self) -> dict[str, Any]:
        """The tables of these templates the site's script (find.js) reads beside SHARED: each template's
        class, whether it is a catch-all, its programs and its keys, what each class weighs, and the builtin
        classes' bases as this interpreter has them."""
        return {
            "own": self.own,
            "libraries": self.libraries,
            "packages": self.packages,
            "classes": self.classes,
            "catchAll": self.catch_all,
            "classWeight": self.class_weight,
            "programs": [[program.to_json() for program in programs] for programs in self.programs],
            "keys": self.keys,
            "kinds": [[kind.to_json() for kind in kinds] for kinds in self.kinds],
            "builtinBases": BUILTIN_BASES,
        }

    def answer(self, text: str) -> Answer:
        """One input as `match` answers it (a pasted `raise` line aside: see matcher.py): its first MAX_LINE
        characters, its line break aside, read with HTML entities undone, else as typed when that answers it
        better; a longer one's last MAX_LINE too, when its start has no confident answer."""
        line = text.rstrip("\r\n")
        paste = Paste.of(line[:MAX_LINE])
        confident, weak, elsewhere = self._answers(paste)
        if not confident and "html" in paste.steps:  # a message may hold what reads as an entity (`&amp;`)
            typed = Paste.of(line[:MAX_LINE], entities=False)
            more, others, theirs = self._answers(typed)
            if more or not weak:
                paste, confident, weak, elsewhere = typed, more, others, theirs
        if not confident and len(text) > MAX_LINE:  # a long paste's error is often at its end
            tail = Paste.of(line[-MAX_LINE:])
            more, _, theirs = self._answers(tail)
            if more:
                paste, confident, weak, elsewhere = tail, more, [], theirs
        return Answer(paste, confident, weak, elsewhere)

    def _answers(self, paste: Paste) -> tuple[list[Hit], list[Hit], list[Hit]]:
        """The catalog's confident hits, in the order they stand in the paste, else its weak ones; and the
        background's that explain the paste with confidence, or the place of a catalog's hit at least as well
        (which makes that one weak: the text is theirs as much as the catalog's)."""
        hits = self.find(paste)
        mine = [hit for hit in hits if hit.template < self.own]
        theirs = [hit for hit in hits if hit.template >= self.own]
        # A traceback whose innermost frame before a message is a library's: the message is that library's.
        frames = _frames(paste.text, self.libraries, self.packages)
        for hit in mine:
            if _raiser(frames, hit.start) not in (None, *self.packages):
                refute(hit)
        theirs = [b for b in theirs if _raiser(frames, b.start) in (None, self.library(b))]
        elsewhere = [b for b in theirs if b.confident or any(_explains(b, hit) for hit in mine)]
        for hit in mine:
            if any(_explains(b, hit) for b in theirs):
                refute(hit)
        confident = [hit for hit in mine if hit.confident]
        return (confident, [], elsewhere) if confident else ([], mine, elsewhere)

    def candidates(self, paste: Paste) -> list[int]:
        """Every template one of whose keys the paste's skeleton shows, and those with no key of the class
        the paste names; in template order."""
        found: set[int] = set()
        automaton = self.automaton()
        if automaton is not None and paste.bare:
            for _, indexes in automaton.iter(paste.bare):
                found.update(indexes)
        for shown in shown_classes(paste.text):
            found.update(self.keyless_by_class.get(shown, ()))
        return sorted(found)

    def find(self, paste: Paste) -> list[Hit]:
        """Every template that explains part of the paste (its best place each), ranked: confident ones in
        the order they stand (a message quoted inside another first), then weak ones by literal text shown.
        When none is confident, literal text with a typo in it is looked for too."""
        return ranked(self._pass(paste, self.candidates(paste)))

    def _pass(self, paste: Paste, candidates: list[int]) -> list[Hit]:
        hits: list[Hit] = []
        for index in candidates:
            hit = best_hit(index, self.classes[index], self.programs[index], paste, self.kinds[index])
            if hit is not None:
                hits.append(hit)
        judge(hits, catch_all=self.catch_all, class_weight=self.class_weight)
        return hits

    def library(self, hit: Hit) -> str:
        """Who prints a background template's text (`python`, `argparse`, `transformers`, ...)."""
        return self.libraries[hit.template - self.own]

    def difference(self, hit: Hit, paste: Paste) -> str:
        """What sets the literal text a hit shows apart from the template's, besides what `plain` undid and
        whitespace: backticks, quote marks, or letter case."""
        return difference(self.programs[hit.template][hit.program], hit, paste)


def _explains(theirs: Hit, hit: Hit) -> bool:
    """Whether a background message's hit explains the place of a catalog's at least as well: it overlaps it,
    stands on its own (not inside a sentence), needed no more stretching (a cut, a typo, a period), shows its
    literal text as written where the catalog's does, and at least as much of it."""
    if theirs.inside or tier(theirs) > tier(hit):  # (standing as whole as the catalog's: no cut where it has none)
        return False
    if hit.verbatim and not theirs.verbatim:  # (`... for Dbrx models.` is vLLM's, not `... for DBRX models.`)
        return False
    return theirs.start < hit.end and hit.start < theirs.end and theirs.literal >= hit.literal


def _frames(text: str, libraries: Sequence[str], packages: Sequence[str]) -> list[tuple[int, str | None]]:
    """A pasted traceback's frames (`File ".../transformers/x.py", line 12`), in order: where each stands whole
    enough to be read (just after its line number's first digit), and whose file it is: a background library's
    (not `python` nor `argparse`, which have no folder of theirs) or one of the catalog's own `packages`, named
    by the folder right after an installation's `site-packages` (else by the innermost folder so named, in a
    source checkout); None when neither."""
    out: list[tuple[int, str | None]] = []
    for found in _FRAME.finditer(text):
        folders = found[1].replace("\\", "/").split("/")[:-1]
        installed = max((k for k, folder in enumerate(folders) if folder in _INSTALLED), default=-1)
        named = folders[installed + 1 : installed + 2] if installed >= 0 else folders[::-1]
        who = next((name for name in named if name in packages or (name in libraries and name not in _NO_FOLDER)), None)
        out.append((found.end() - len(found[2]), who))
    return out


def _raiser(frames: list[tuple[int, str | None]], position: int) -> str | None:
    """Whose file the innermost frame that stands before `position` is in (see _frames), if known."""
    library = None
    for stands, named in frames:
        if stands > position:
            break
        library = named
    return library
