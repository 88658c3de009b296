#!/usr/bin/env bash
# The nightly job as a cron or CI entry point: publishes the catalog of a branch head, with a diff.
#   EXTRACTOR_REPO    repository URL or path        (default: https://github.com/vllm-project/vllm)
#   EXTRACTOR_BRANCH  branch to follow              (default: main)
#   EXTRACTOR_OUTPUT  where catalogs are published  (default: output/vllm-project/vllm)
#   EXTRACTOR_KEEP    keep only the newest N catalogs (default: keep all)
#   EXTRACTOR_ARGS    further options, e.g. "--path vllm --exception '*'" (word-split)
# Safe to re-run, to kill and to start twice: a lock in the output directory serialises runs.
set -euo pipefail
repo="${EXTRACTOR_REPO:-https://github.com/vllm-project/vllm}"
branch="${EXTRACTOR_BRANCH:-main}"
output="${EXTRACTOR_OUTPUT:-output/vllm-project/vllm}"
args=(nightly --repo "$repo" --branch "$branch" --output "$output")
if [ -n "${EXTRACTOR_KEEP:-}" ]; then args+=(--keep "$EXTRACTOR_KEEP"); fi
# shellcheck disable=SC2206
if [ -n "${EXTRACTOR_ARGS:-}" ]; then args+=($EXTRACTOR_ARGS); fi
if [ ! -t 2 ] && [ -n "${EXTRACTOR_QUIET:-}" ]; then args+=(--quiet); fi
exec "${PYTHON:-python3}" -m extractor "${args[@]}"
