"""How many of a reproduced catalog's records get a validationCode, and why the others do not.

    python scripts/validation_codes.py output/reproduced-0.28.0            # a folder `reproduce --output` wrote
    python scripts/validation_codes.py output/reproduced-0.28.0 --show 3   # and three records of each reason

Reads the catalog `reproduce --output DIR` wrote (each reproduced record carries its reproduction), derives each
record's validationCode again from it (reproduce/validation.py: nothing runs but the checks themselves), and
prints the counts: records, reproduced, at the `vllm serve` level, with a fix line, with a validationCode; then
one row per reason a reproduced record has none, with the read that did not translate where one did not.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extractor.model.records import CatalogLine
from extractor.reproduce.validation import catalog_facts, validation


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a folder `reproduce --output` wrote (or its records.jsonl)")
    parser.add_argument("--show", type=int, default=0, metavar="N", help="records shown per reason")
    args = parser.parse_args()
    path = args.folder / "records.jsonl" if args.folder.is_dir() else args.folder
    lines = [CatalogLine.model_validate_json(raw) for raw in path.read_bytes().splitlines() if raw.strip()]
    catalog = catalog_facts(lines)
    reproduced = [line for line in lines if line.extraction.reproduction and line.extraction.reproduction.reproduced]
    misses: Counter[str] = Counter()
    details: dict[str, Counter[str]] = defaultdict(Counter)
    shown: dict[str, list[str]] = defaultdict(list)
    coded = serve = 0
    for line in reproduced:
        made = line.extraction.reproduction
        assert made is not None
        serve += made.serve is not None
        found = validation(line, made, catalog=catalog)
        if found.code is not None:
            coded += 1
            continue
        reason = str(found.miss)
        misses[reason] += 1
        details[reason][found.detail.split(" on ")[0][:60]] += 1
        shown[reason].append(f"{line.record.slug}: {found.detail[:160]}")
    total = len(lines)
    print(f"{total} records, {len(reproduced)} reproduced, {serve} at the vllm serve level")
    print(f"validationCode: {coded} of {total} ({100 * coded / max(total, 1):.1f}%)")
    print("\n| why a reproduced record has none | records | what |\n| --- | ---: | --- |")
    for reason, count in misses.most_common():
        what = ", ".join(f"{d} ({n})" if n > 1 else d for d, n in details[reason].most_common(8) if d)
        print(f"| {reason} | {count} | {what} |")
    print(f"| not reproduced | {total - len(reproduced)} | |")
    for reason in misses:
        for text in shown[reason][: args.show]:
            print(f"  {reason}: {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
