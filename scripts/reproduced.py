"""Figures of a `reproduce` run, and an independent check of its programs.

    python scripts/reproduced.py --catalog release:0.28.0 --output output/reproduced.jsonl [--run 10]

Reads what `reproduce` wrote (its JSON lines; runs it first when `--output` does not exist yet), and reports:
- the counts per reason and the share reproduced, with a fix;
- `match` on each text vLLM printed, in the shape it printed (pydantic's wrapping included) and bare (the
  message alone): how many answer the record first, and confidently;
- with `--run N`, N programs (every k-th) and their fixes run again, each in a fresh interpreter of the runtime
  (not the forked child `reproduce` uses): the program must raise at the record's own line (its traceback, or
  the error pydantic wraps), the fix must not.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Run in the runtime: exec a program, say where what it raised was raised (the innermost frame of the package, of
# the error pydantic wraps when it wraps one).
_HARNESS = r"""
import json, sys, traceback
program = sys.stdin.read()
try:
    exec(compile(program, "<program>", "exec"), {"__name__": "__main__"})
except BaseException as error:
    inner = [error]
    errors = getattr(error, "errors", None)
    if callable(errors) and type(error).__name__ == "ValidationError":
        found = [(e.get("ctx") or {}).get("error") for e in errors()]
        inner = [e for e in found if isinstance(e, BaseException)] + inner
    for found in inner:
        frames = [f for f in traceback.extract_tb(found.__traceback__) if "/vllm/" in f.filename]
        if frames:
            name = frames[-1].filename
            print(json.dumps({"raised": name[name.rindex("/vllm/") + 1:], "line": frames[-1].lineno}))
            break
    else:
        print(json.dumps({"raised": None}))
else:
    print(json.dumps({"passed": True}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", default="release:0.28.0")
    parser.add_argument("--output", type=Path, default=Path("output/reproduced.jsonl"))
    parser.add_argument("--runtime", help="the runtime's interpreter (default: the one reproduce made)")
    parser.add_argument("--run", type=int, default=0, metavar="N", help="programs to run again, fresh")
    args = parser.parse_args()

    if not args.output.exists():
        args.output.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with args.output.open("w") as out:
            subprocess.run(
                [sys.executable, "-m", "extractor", "reproduce", "--catalog", args.catalog], stdout=out, check=True
            )
        print(f"reproduce: {time.monotonic() - started:.0f} s")
    results = [json.loads(line) for line in args.output.read_text().splitlines()]
    # (a record the serve path's probe alone reproduced has a `serve` line and no program)
    made = [r for r in results if r["reproduction"].get("python") or r["reproduction"].get("serve")]
    fixed = [r for r in made if r["reproduction"].get("fix") or r["reproduction"].get("solutions")]
    reasons = Counter(r["reproduction"]["reason"] for r in results if "reason" in r["reproduction"])
    levels = Counter(r["reproduction"].get("level", "config") for r in made)
    print(f"{len(made)} of {len(results)} reproduced ({100 * len(made) / len(results):.1f}%), {len(fixed)} with a fix")
    print("  " + ", ".join(f"{count} at the {level} level" for level, count in sorted(levels.items())))
    for reason, count in reasons.most_common():
        print(f"  {count:4d}  {reason}")

    from extractor.catalog.load import open_catalog
    from extractor.cli.commands import reproduce as command
    from extractor.cli.options import extract_options, parse_arguments
    from extractor.query.match.matcher import Matcher

    options = extract_options(parse_arguments(command.parser(), ["--catalog", args.catalog]))
    lines = list(open_catalog(args.catalog, repo="https://github.com/vllm-project/vllm", options=options).lines)
    matcher = Matcher.of_lines(lines)
    for shape in ("as printed", "bare"):
        first = confident = 0
        for r in made:
            message = r["reproduction"]["message"]
            if shape == "bare" and "Value error, " in message:
                message = message.split("Value error, ", 1)[1].split(" [type=", 1)[0]
            answers = matcher.match(message).matches
            top = answers[0] if answers else None
            if top is not None and any(s.id == r["id"] for s in top.template.places()):
                first += 1
                confident += bool(top.confident)
        print(f"match, {shape}: {first} of {len(made)} first, {confident} first and confident")

    if args.run:
        python = args.runtime or str(
            Path.home() / ".cache/extractor/runtimes" / f"vllm-{args.catalog.removeprefix('release:')}/bin/python"
        )
        step = max(1, len(made) // args.run)
        ok = bad = 0
        for r in [r for r in made if r["reproduction"].get("python")][::step][: args.run]:
            said = _run(python, r["reproduction"]["python"])
            own = said.get("raised") == r["filePath"] and said.get("line") == r["lineNumber"]
            fix = r["reproduction"].get("fix")
            after = _run(python, fix["python"]) if fix else {}
            fixed_ok = not fix or not (after.get("raised") == r["filePath"] and after.get("line") == r["lineNumber"])
            ok += own and fixed_ok
            bad += not (own and fixed_ok)
            print(f"  {r['filePath']}:{r['lineNumber']}  program: {said}  fix: {after or '-'}")
        print(f"run again, fresh: {ok} of {ok + bad} raise at their own line, with a fix that does not")
    return 0


def _run(python: str, program: str) -> dict[str, object]:
    result = subprocess.run(
        [python, "-c", _HARNESS], input=program, capture_output=True, text=True, timeout=300, check=False
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"failed": result.stderr[-200:]}


if __name__ == "__main__":
    sys.exit(main())
