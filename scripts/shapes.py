"""How `match` answers every record's message pasted in each of the shapes users paste it in.

Usage: python scripts/shapes.py [--catalog release:0.28.0] [--path vllm] [--exception '*'] [--show 3]

Each record's template is printed as Python would print it, its placeholders filled with stand-in values
(numbers, a model name, a list, None; `!r` and `{x=}` honoured), then pasted in each shape below, and
matched against the whole catalog. Per shape, of the records whose template has enough literal text to be
a confident answer at all (CATCH_ALL):
- found: a confident answer is the record's template, or one that prints the same text;
- wrong: a confident answer is a template that cannot print the text (Python's `re` does not fullmatch
  it, nor with a final period; for a cut paste, `regex` finds no rendering starting with what it shows);
- missed: neither (no confident answer: only weak ones, or none).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import regex

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extractor.catalog.load import open_catalog
from extractor.pipeline.extract import ExtractOptions
from extractor.query.match.kinds import Shape, ValueKind
from extractor.query.match.matcher import Matcher
from extractor.query.match.pattern import CATCH_ALL, MatchTemplate, templates_of

PREFIX = "ERROR 11-29 17:35:18 [core.py:123] "
FRAME = 'Traceback (most recent call last):\n  File "/usr/lib/python3.12/site-packages/vllm/x.py", line 12, in f\n'
VALUES: list[object] = [2048, "Qwen/Qwen2-7B", 0.9, [1, 2], None, "fp8", 32768]
EFFECT = "RuntimeError: Engine core initialization failed. See root cause above."

# name -> (paste of `Class: message`, whether the paste shows only the start of the message)
SHAPES: dict[str, tuple[Callable[[str, str], str], bool]] = {
    "plain": (lambda c, t: f"{c}: {t}", False),
    "message alone": (lambda c, t: t, False),
    "log line": (lambda c, t: f"{PREFIX}{c}: {t}", False),
    "log line, process tag": (lambda c, t: f"(EngineCore_DP0 pid=1234) {PREFIX}{c}: {t}", False),
    "inline code": (lambda c, t: f"`{c}: {t}`", False),
    "fenced traceback": (lambda c, t: f"```python\n{FRAME}{c}: {t}\n```", False),
    "traceback, CRLF": (lambda c, t: f"{FRAME}{c}: {t}\n".replace("\n", "\r\n"), False),
    "chained traceback": (
        lambda c, t: (
            f"{FRAME}{c}: {t}\n\nThe above exception was the direct cause of the following exception:\n\n" + EFFECT
        ),
        False,
    ),
    "pydantic": (
        lambda c, t: (
            "1 validation error for VllmConfig\n  Value error, "
            f"{t} [type=value_error, input_value=ArgsKwargs((), {{'model': 'x'}}), input_type=ArgsKwargs]"
        ),
        False,
    ),
    "JSON body": (lambda c, t: json.dumps({"error": {"message": t, "type": "BadRequestError", "code": 400}}), False),
    "repr in a log line": (lambda c, t: f"{PREFIX}EngineCore encountered an issue: {c}({t!r})", False),
    "ANSI colours": (lambda c, t: f"\x1b[31mERROR\x1b[0m 11-29 17:35:18 [core.py:1] {c}: {t}", False),
    "title cut at 80": (lambda c, t: f"[Bug]: {c}: {t}"[:80] + "...", True),
}


# The other errors a shape adds around the record's: an answer naming one of them is no answer for the record.
WRAPPERS = [EFFECT.removeprefix("RuntimeError: ")]


def stand_in(kind: ValueKind, number: int) -> object:
    """A stand-in value a placeholder of this kind can print (see extractor/query/match/kinds.py)."""
    if kind.shape is Shape.INT:
        return 2048
    if kind.shape is Shape.NUMBER:
        return 0.9
    if kind.shape is Shape.BOOL:
        return True
    if kind.shape is Shape.CHOICE:
        return ast.literal_eval(kind.choices[0]) if kind.choices[0][:1] in "'\"" else kind.choices[0]
    if kind.shape is Shape.QUOTED:
        return "fp8"
    return VALUES[number % len(VALUES)]


def render(line: Mapping[str, Any], kinds: Sequence[ValueKind] = ()) -> str:
    """The record's message as Python prints it, each placeholder given a stand-in value its kind prints."""
    message = line["record"]["errorMessage"]
    out, position = [], 0
    for number, placeholder in enumerate(line["extraction"]["placeholders"]):
        value = stand_in(kinds[number], number) if kinds else VALUES[number % len(VALUES)]
        text = repr(value) if placeholder.get("conversion") == "r" else str(value)
        if placeholder.get("debug"):  # `{x=}` prints `x=` (spaces kept) and, with no format spec, the repr
            written = message[placeholder["start"] + 1 : placeholder["end"] - 1]
            shown = re.match(r"(.*?=\s*)(?:!\w)?(:.*)?$", written, re.S)
            assert shown is not None
            text = shown[1] + (str(value) if shown[2] or placeholder.get("conversion") == "s" else repr(value))
        out += [message[position : placeholder["start"]], text]
        position = placeholder["end"]
    return "".join(out) + message[position:]


def prints(template: MatchTemplate, text: str, shown: str | None) -> bool:
    """Whether the template can print `text` (or, for a cut paste, a text starting with `shown`)."""
    try:
        if any(re.fullmatch(template.messagePattern, t, re.S) for t in (text, text + ".")):
            return True
        return shown is not None and regex.fullmatch(template.messagePattern, shown, re.S, partial=True) is not None
    except (re.error, regex.error):
        return False


def site_answers(spec: str, path: str, exception: str, texts: list[str]) -> list[str | None]:
    """The record the site's search names first for each text (None: no confident answer): a site of the
    catalog built by `python -m extractor site`, its search driven in headless Chromium (Debian's)."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as scratch:
        site = Path(scratch, "site")
        command = [sys.executable, "-m", "extractor", "site", "--catalog", spec, "--path", path, "--exception"]
        subprocess.run([*command, exception, "--output", str(site), "--quiet"], check=True)
        with sync_playwright() as playwright:
            executable = os.environ.get("EXTRACTOR_CHROMIUM", "/usr/bin/chromium")
            browser = playwright.chromium.launch(executable_path=executable, args=["--headless", "--no-sandbox"])
            page = browser.new_page()
            page.goto((site / "index.html").as_uri())
            found = page.evaluate("texts => texts.map(t => window.extractorSearch.first(t))", texts)
            browser.close()
    return list(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--catalog", default="release:0.28.0")
    parser.add_argument("--path", default="vllm")
    parser.add_argument("--exception", default="*")
    parser.add_argument("--show", type=int, default=0, help="print this many missed and wrong texts per shape")
    parser.add_argument(
        "--site", action="store_true", help="also ask the site's search (in headless Chromium) and compare"
    )
    args = parser.parse_args()
    options = ExtractOptions(paths=(args.path,), exceptions=(args.exception,))
    catalog = open_catalog(args.catalog, repo="https://github.com/vllm-project/vllm", options=options)
    data = [line.model_dump(mode="json", by_alias=True) for line in catalog.lines]
    matcher = Matcher(templates_of(catalog.lines))
    own = {(t.errorClass, t.messagePattern): t for t in matcher.templates}
    by_id = {site.id: t for t in matcher.templates for site in t.places()}
    lines = [line for line in data if not own[line["record"]["errorClass"], line["record"]["messagePattern"]].catch_all]
    print(
        f"{args.catalog} ({args.path}, {args.exception}): {len(data)} records, {len(lines)} with at least "
        f"{CATCH_ALL} characters of literal text"
    )
    cases = []  # (shape, record's template, rendered message, paste, what a cut paste shows)
    for name, (paste, cut) in SHAPES.items():
        for line in lines:
            record = line["record"]
            text = render(line, own[record["errorClass"], record["messagePattern"]].kinds)
            pasted = paste(record["errorClass"], text)
            shown = None
            if cut:
                start = pasted.find(": ", pasted.find(record["errorClass"])) + 2
                shown = pasted.removesuffix("...")[start:]
            cases.append((name, own[record["errorClass"], record["messagePattern"]], text, pasted, shown))
    # The answer shown first (a chained traceback's cause; its effect when the cause has no confident answer).
    firsts = [next((m.site.id for m in matcher.match(case[3]).matches), None) for case in cases]
    site = site_answers(args.catalog, args.path, args.exception, [c[3] for c in cases]) if args.site else None

    def judged(case: tuple[Any, ...], first: str | None) -> str:
        _, mine, text, _, shown = case
        if first is None:
            return "missed"
        template = by_id[first]
        if template is mine or prints(template, text, shown):
            return "found"
        # The shape's own other error (a chained traceback's effect) answered instead: the record was missed.
        return "missed" if any(prints(template, wrapper, wrapper) for wrapper in WRAPPERS) else "wrong"

    header = "| shape | found | missed | wrong |"
    if site is not None:
        header += " site: found | missed | wrong | same first answer |"
    print(header + "\n| --- |" + " ---: |" * (header.count("|") - 2))
    for name in SHAPES:
        rows = [k for k, case in enumerate(cases) if case[0] == name]
        verdicts = [judged(cases[k], firsts[k]) for k in rows]
        cells = [verdicts.count(v) for v in ("found", "missed", "wrong")]
        if site is not None:
            theirs = [judged(cases[k], site[k]) for k in rows]
            same = sum(site[k] == firsts[k] for k in rows)
            cells += [theirs.count(v) for v in ("found", "missed", "wrong")] + [f"{same / len(rows):.1%}"]  # type: ignore[list-item]
        print(f"| {name} | " + " | ".join(str(c) for c in cells) + " |")
        shown_missed = [f"  {v}: {cases[k][3][:160]!r}" for k, v in zip(rows, verdicts, strict=True) if v != "found"]
        for example in shown_missed[: args.show]:
            print(example)


if __name__ == "__main__":
    main()
