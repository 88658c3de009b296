"""find.js, the site's copy of `match`'s finder: its constants generated from Python's (find_constants.js, checked
for staleness), its regular expressions in the syntax both engines read alike, and its answers, every hit of
them field by field, the same as `Finder.answer`'s on a corpus of pastes, in Node, without a browser."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import resource
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extractor.catalog.load import load_catalog
from extractor.publish.site.pages import FIND_CONSTANTS, find_constants, static
from extractor.query.match.find import SHARED
from extractor.query.match.locate import Hit
from extractor.query.match.matcher import Matcher
from extractor.query.match.normalize import WHITESPACE
from tests.conftest import GitRepo, cli
from tests.test_match import BACKENDS, SHAPE_CASES, SHAPES
from tests.test_match import SOURCE as MATCH_SOURCE
from tests.test_match_anywhere import SOURCE as ANYWHERE_SOURCE
from tests.test_match_prefilter import variants

ROOT = Path(__file__).resolve().parents[1]
NODE = shutil.which("node")

# Templates the other sources lack: a raise with no message and one of a variable, messages Python prints itself,
# touching placeholders, a list joined, an entity in the message, a character beyond the BMP and a control
# character in literal text, and generic ones that are weak answers, several to a paste.
EXTRA = """\
def f(a, b, c, name, spec, key):
    if a:
        raise ValueError
    if b:
        raise ValueError(a)
    if spec is None:
        raise ModuleNotFoundError(f"No module named {name!r}")
    if key:
        raise ValueError(f"No plugin named {name!r} for key {key}")
    if c:
        raise ValueError(f"Weight {a}{b} is not divisible by {c}.")
    errors = [f"The adapter {a} cannot be loaded here:"]
    if b:
        errors.append(f"bad rank {b}.")
    if name:
        raise ValueError(" ".join(errors))
    if spec:
        raise ValueError(f"x &amp; y are both set to {a}, pick one")
    if key:
        raise RuntimeError(f"The \\U0001f680 launcher of {name} gave up after {a} retries; see its log")
    raise ValueError(f"Columns of {name} split by \\x1f hold {a} fields, not {b}")
    raise ValueError(f"{a} is not supported")
    raise ValueError(f"{a} is not supported for {b}")
    raise ValueError(f"Unsupported {a}")
    raise ValueError(f"Invalid {a}")
    raise ValueError(f"{a} must be positive")
    raise ValueError(f"{a} must be set")
    raise ValueError(f"{a}: {b}")
"""
# Values a message is rendered with: plain ones, and those that test what each side reads as a character.
VALUES = [
    "7", "'fp8'", "[1, 2]", "None", "meta-llama/Llama-3.1-8B", "", "\x1f", "\x1c8\x85", "\U0001f600 emoji",
    "C:\\new\\tok", 'it\'s "odd"', "tab\there", "line\u2028break", "&amp;", "\ufeff", "a\u00a0b",
]  # fmt: skip
# Pastes of what each side could count, strip or split differently.
E = "\U0001f600"
ODD = [
    E * 16_000 + "ValueError: {}",  # longer than MAX_LINE: the end read too
    "ValueError: {} " + E * 16_400,  # its start cut at MAX_LINE characters
    "x" * 16_383 + E + "ValueError: {}",
    f"{E}{E} [core.py:1] ValueError: {{}}\n{E}{E} [core.py:1] and more",  # a line prefix of wide characters
    f"{E * 79}x ValueError: {{}}\n{E * 79}y and more",
    "\uffff a\n" + E + " a\nValueError: {}",
    E * 150 + "ValueError: {}",  # the class looked for 200 characters back
    "ValueError:" + E * 190 + "{}",
    "\x1fValueError: {}\x1f",
    "\x1c\x1d\x1e {} \x85",
    "ValueError\u2028: {}",
    "x\u2028ValueError: {}",
    "ValueError:\u2029\n{}",
    "&#128512;ValueError: {}&#x1F600;",
    '{{"detail": "ValueError: {}", "hint": "\\ud83d\\ude00 and \\ud83d x \\ude00"}}',
]
IN_WORDS = [E, E + E, "\x1f", "\x85", "\u2028"]  # put inside a message's words (a typo), or between them
# Pastes that several of EXTRA's generic templates explain weakly: more than MAX_WEAK of them.
GENERIC = [
    "ValueError: Invalid x is not supported for y; Unsupported z; w must be positive; v must be set",
    "ValueError: Invalid mode: Unsupported dtype is not supported for xpu and must be positive and must be set",
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Matcher]:
    """A catalog of the match tests' sources and EXTRA, the site `site` builds of it, and its matcher."""
    base = tmp_path_factory.mktemp("parity")
    repo = GitRepo(base / "repo")
    files = {"pkg/a.py": MATCH_SOURCE, "pkg/b.py": SHAPES, "pkg/c.py": ANYWHERE_SOURCE, "pkg/d.py": EXTRA}
    repo.commit(files, tag="v1")
    whole = ["--path", "pkg", "--exception", "*", "--quiet", "--output", str(base / "out")]
    result = cli("--sha", "v1", "--repo", str(repo.path), *whole)
    assert result.returncode == 0, result.stderr
    (catalog,) = (base / "out").glob("*/")
    result = cli("site", "--catalog", str(catalog), "--output", str(base / "site"))
    assert result.returncode == 0, result.stderr
    return base / "site", Matcher.of_lines(load_catalog(catalog).lines)


def _shapes() -> Any:
    """scripts/shapes.py: the shapes users paste an error in."""
    spec = importlib.util.spec_from_file_location("shapes", ROOT / "scripts" / "shapes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rendered(matcher: Matcher) -> Iterator[tuple[str, str]]:
    """Each template's class and message, its values taken from VALUES, turned for each of three renderings."""
    for number, template in enumerate(matcher.templates):
        pieces = template.pieces or template.fragments()
        for turn in range(3):
            values = [VALUES[(3 * number + turn + k) % len(VALUES)] for k in range(len(pieces) - 1)]
            yield template.errorClass, "".join(p + v for p, v in zip(pieces, [*values, ""], strict=True))


def typed_in(message: str, character: str) -> str:
    """The message with a character put inside its first two words of five letters or more."""
    return re.sub(r"([A-Za-z]{4})([A-Za-z])", lambda found: found[1] + character + found[2], message, count=2)


def corpus(matcher: Matcher) -> list[str]:
    """Every template rendered, pasted in each shape of scripts/shapes.py; cut short, typed over and cased as
    test_match_prefilter's variants (every fifth); wide and control characters in and around it (ODD,
    IN_WORDS); GENERIC; test_match's pasted shapes and wrapped values; and the real pastes of tests/data/pastes."""
    shapes = _shapes().SHAPES
    texts: list[str] = []
    for number, (cls, message) in enumerate(rendered(matcher)):
        texts += [paste(cls, message) for paste, _ in shapes.values()]
        texts += [text for k, text in enumerate(variants(f"{cls}: {message}")) if k % 5 == number % 5]
        texts += [odd.format(message) for odd in ODD[number % 3 :: 3]]
        word = IN_WORDS[number % len(IN_WORDS)]
        texts += [f"{cls}: {message.replace(' ', word, 2)}", f"{cls}: {typed_in(message, word)}"]
    texts += GENERIC + [case.values[0] for case in SHAPE_CASES]
    texts += [json.dumps({"detail": f"Unknown executor backend {value}."}) for value in BACKENDS]
    texts += [f"ValueError('Unknown executor backend {value!r}.')" for value in BACKENDS]
    # (JSON's \u escapes of a character beyond the BMP, and of surrogates left alone: U+FFFD in Python)
    texts += ['{"detail": "Unknown executor backend \\ud83d\\ude00 \\ud83d x \\ude00 \\udbff."}']
    for pastes in sorted((ROOT / "tests" / "data" / "pastes").glob("*.jsonl")):
        texts += [json.loads(row)["text"] for row in pastes.read_text(encoding="utf-8").splitlines()]
    return texts


# Each hit as a list, in Hit's field order (find.js names them in camelCase); a text position in characters.
FIELDS = [field.name for field in dataclasses.fields(Hit)]
HARNESS = r"""
"use strict";
// The site as its index page loads it (its scripts in order, but the page's own search.js), in a context whose
// global is `window`; and find.js as Node requires it, which must answer alike (every tenth text asked).
const fs = require("fs"), path = require("path"), vm = require("vm");
const [site, find, textsFile, outFile] = process.argv.slice(2);
const page = fs.readFileSync(path.join(site, "index.html"), "utf8");
const scripts = [...page.matchAll(/<script src="([^"]+)"><\/script>/g)].map((m) => m[1]);
const window = {};
window.window = window;
vm.createContext(window);
for (const src of scripts.filter((src) => !src.endsWith("/search.js"))) {
  vm.runInContext(fs.readFileSync(path.join(site, src), "utf8"), window, { filename: src });
}
const paged = new window.ExtractorFinder(window.EXTRACTOR_PASTE);
const required = new (require(find))(window.EXTRACTOR_PASTE);
const fields = JSON.parse(process.argv[6]);
const camel = (name) => name.replace(/_(.)/g, (_, c) => c.toUpperCase());
function characters(text) { // a UTF-16 index -> Python's index (characters)
  if (!/[\ud800-\udfff]/.test(text)) return (i) => i;
  const at = [];
  let n = 0;
  for (let i = 0; i <= text.length; i++) {
    at.push(n);
    const c = text.charCodeAt(i), d = text.charCodeAt(i + 1);
    if (!(c >= 0xd800 && c < 0xdc00 && d >= 0xdc00 && d < 0xe000)) n++;
  }
  return (i) => at[i];
}
function answer(finder, text) {
  const got = finder.answer(text), at = characters(got.paste.text);
  const hit = (h) => fields.map((name) => (name === "start" || name === "end" ? at(h[name]) : h[camel(name)]));
  return [got.paste.text, got.paste.steps, got.elsewhere.map(hit), got.confident.map(hit), got.weak.map(hit)];
}
const texts = JSON.parse(fs.readFileSync(textsFile, "utf8"));
const out = texts.map((text) => answer(paged, text));
const same = (text, k) => JSON.stringify(answer(required, text)) === JSON.stringify(out[k]);
const differ = texts.filter((text, k) => k % 10 === 0 && !same(text, k));
fs.writeFileSync(outFile, JSON.stringify({ scripts, records: window.EXTRACTOR_PASTE.records, out, differ }));
"""


def python_answer(matcher: Matcher, text: str) -> list[Any]:
    """What `Finder.answer` answers, as the harness writes find.js's: the paste read, its steps, the class of a
    message Python prints itself, and each confident and weak hit with every field."""
    found = matcher.finder.answer(text)

    def hit(h: Hit) -> list[Any]:
        return [getattr(h, name) for name in FIELDS]

    answer = [found.paste.text, list(found.paste.steps), list(map(hit, found.elsewhere))]
    answer.append(list(map(hit, found.confident)))
    return json.loads(json.dumps([*answer, list(map(hit, found.weak))]))  # (tuples as JSON gives them back)


def cpu_seconds(who: int) -> float:
    """The CPU seconds this process (or its children waited for) took so far: not the clock's, which a busy
    machine makes longer."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@pytest.mark.skipif(NODE is None, reason="no node on PATH: find.js is run in Node (any version from 18)")
def test_find_js_answers_every_paste_with_the_hits_python_finds(site: tuple[Path, Matcher], tmp_path: Path) -> None:
    """Every paste of the corpus: find.js, loaded as the site's index page loads it (find_constants.js first)
    and as a Node module, answers it with the paste read and the steps taken, and every hit, confident or weak,
    in order, with every field (spans, bounds, values, literal text and bits, flags), that `Finder.answer`
    gives `match`; a `match` answer is made of these alone (Matcher._made), a pasted `raise` line aside."""
    folder, matcher = site
    texts = corpus(matcher)
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    (tmp_path / "harness.js").write_text(HARNESS)
    find = ROOT / "extractor" / "publish" / "site" / "assets" / "static" / "find.js"
    started = cpu_seconds(resource.RUSAGE_CHILDREN)
    command = [str(NODE), str(tmp_path / "harness.js"), str(folder), str(find), str(tmp_path / "texts.json")]
    result = subprocess.run([*command, str(tmp_path / "out.json"), json.dumps(FIELDS)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    node = cpu_seconds(resource.RUSAGE_CHILDREN) - started
    got = json.loads((tmp_path / "out.json").read_text())
    assert got["scripts"][:3] == ["assets/find_constants.js", "assets/find.js", "assets/paste.js"]
    places = [sorted(t.places(), key=lambda s: (s.filePath, s.lineNumber)) for t in matcher.templates]
    assert got["records"] == [[s.id for s in sites] for sites in places]  # (the same templates, in order)
    assert got["differ"] == []  # (the module and the page's script answer alike)
    started = cpu_seconds(resource.RUSAGE_SELF)
    expected = [python_answer(matcher, text) for text in texts]
    python = cpu_seconds(resource.RUSAGE_SELF) - started
    differ = [(text, e, g) for text, e, g in zip(texts, expected, got["out"], strict=True) if e != g]
    assert differ[:3] == []
    assert len(texts) > 10_000 and sum(bool(e[3]) for e in expected) > 6_000  # (most answered, some not)
    assert node + python < 10, (node, python)


def test_find_constants_js_is_what_the_generator_writes_now() -> None:
    """The committed find_constants.js (what the site ships and find.js reads) holds find.py's SHARED as it is
    now: an edit of a constant or a table on the Python side without regenerating it fails here."""
    assert static(FIND_CONSTANTS).decode() == find_constants().decode(), (
        f"{FIND_CONSTANTS} is stale: run `python scripts/gen_find_constants.py` and commit it"
    )


def test_the_whitespace_find_js_strips_is_what_python_strips() -> None:
    """WHITESPACE (find.js's `strip` and `isspace`) holds every character Python's str.isspace() takes, and
    no other: JavaScript's own `\\s` takes U+FEFF and leaves out U+001C to U+001F and U+0085."""
    spaces = re.compile(f"[{WHITESPACE}]")
    differ = [hex(c) for c in range(0x110000) if bool(spaces.fullmatch(chr(c))) != chr(c).isspace()]
    assert differ == []


# What a regular expression shared with JavaScript may not hold: `.`, `^` and `$` (JavaScript's lines end at \r,
# U+2028 and U+2029 too; Python's `$` matches before a final \n), and the classes whose characters differ (`\b`,
# a backspace in a class in both, is a word's edge outside one).
_UNSHARED_ESCAPES = {"outside": "sSdDwWbB", "inside": "sSdDwW"}


def unshared(pattern: str) -> list[str]:
    """What a pattern holds that Python's `re` and JavaScript's read differently (`[\\s\\S]`, anything in
    both, is read alike; so is a class's `^`, its negation, and an escaped `.`)."""
    found: list[str] = []
    position, inside = 0, False
    while position < len(pattern):
        char = pattern[position]
        if not inside and pattern.startswith(r"[\s\S]", position):
            position += len(r"[\s\S]")
            continue
        if char == "\\":
            if pattern[position + 1] in _UNSHARED_ESCAPES["inside" if inside else "outside"]:
                found.append(pattern[position : position + 2])
            position += 2
            continue
        if inside:
            inside = char != "]"
        elif char == "[":
            inside = True
            position += pattern.startswith("[^", position)  # (its negation)
        elif char in ".^$":
            found.append(char)
        position += 1
    return found


def shared_patterns() -> dict[str, str]:
    names = ["ANSI", "ENTITY", "ESCAPE", "GAPS", "SPACES", "CLASS_SHOWN_IN", "CLASS_BEFORE", "CLASS_AT", "SENTENCE"]
    return {**{name: SHARED[name] for name in names}, **{f"KIND_TEXTS {k}": v for k, v in SHARED["KIND_TEXTS"].items()}}


def test_every_regular_expression_find_js_shares_is_read_alike_by_both_engines() -> None:
    """The patterns find_constants.js carries hold nothing Python and JavaScript read differently; and the
    check finds each `^`, `\\d`, `.`, `\\w` and `$` that would be, but not an escaped dot, a class's negation or
    backspace, nor `[\\s\\S]`."""
    assert {name: unshared(pattern) for name, pattern in shared_patterns().items() if unshared(pattern)} == {}
    assert unshared(r"(?:^|x)\d+\..[^.$\w\b][\s\S]$") == ["^", "\\d", ".", "\\w", "$"]
