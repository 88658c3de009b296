#!/usr/bin/env bash
# The nightly job as a cron or CI entry point: publishes the catalog of a branch head, with a diff.
#   EXTRACTOR_REPO    repository URL or path        (default: https://github.com/vllm-project/vllm)
#   EXTRACTOR_BRANCH  branch to follow              (default: main)
#   EXTRACTOR_OUTPUT  where catalogs are published  (default: output/vllm-project/vllm)
#   EXTRACTOR_KEEP    keep only the newest N catalogs (default: keep all)
#   EXTRACTOR_ARGS    further options, split as a shell would split them, quotes removed and nothing expanded:
#                     e.g. "--path vllm --exception '*'" passes --path, vllm, --exception, *
# Safe to re-run, to kill and to start twice: a lock in the output directory serialises runs.
set -euo pipefail
repo="${EXTRACTOR_REPO:-https://github.com/vllm-project/vllm}"
branch="${EXTRACTOR_BRANCH:-main}"
output="${EXTRACTOR_OUTPUT:-output/vllm-project/vllm}"
args=(nightly --repo "$repo" --branch "$branch" --output "$output")
if [ -n "${EXTRACTOR_KEEP:-}" ]; then args+=(--keep "$EXTRACTOR_KEEP"); fi
python="${PYTHON:-python3}"
if [ -n "${EXTRACTOR_ARGS:-}" ]; then
  # shlex splits like a shell, without expanding anything: '*' stays *, and no word is globbed or run.
  split='
import shlex, sys
try:
    words = shlex.split(sys.argv[1])
except ValueError as error:
    sys.exit(f"nightly.sh: cannot split EXTRACTOR_ARGS as a shell would ({error}): {sys.argv[1]}")
sys.stdout.write("".join(word + "\0" for word in words))'
  mapfile -d '' -t extra < <("$python" -c "$split" "$EXTRACTOR_ARGS")
  wait "$!" || exit 2
  args+=("${extra[@]}")
fi
if [ ! -t 2 ] && [ -n "${EXTRACTOR_QUIET:-}" ]; then args+=(--quiet); fi
exec "$python" -m extractor "${args[@]}"
