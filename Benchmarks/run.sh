#!/usr/bin/env bash
# Builds klaxon and klaxon-bench in release mode and runs the benchmarks.
#
#   Benchmarks/run.sh                      # all benchmarks, data in bench-data/
#   Benchmarks/run.sh --only check --check-runs 11
#   Benchmarks/run.sh --runs 3 --data /tmp/klaxon-bench
#   Benchmarks/run.sh --quick [--update-baseline]   # the quick check: Benchmarks/quick.sh (see there)
#
# Arguments are passed to klaxon-bench (see `--help`); klaxon-delivery-bench then measures delivery. The release build lives in .build-release/
# so it never disturbs the debug build in .build/. Exit status: that of klaxon-bench
# (0 every target met, 1 a target missed, 2 an error).
set -euo pipefail

# The quick check (each headline ratio against its peer, beside Benchmarks/baseline-quick.tsv) is its own script.
for arg in "$@"; do
    [[ "$arg" == --quick ]] && exec "$(dirname "$0")/quick.sh" "$@"
done
cd "$(dirname "$0")/.."

scratch=.build-release
# `swift build` takes one --product (a second replaces the first), so build each in turn. Build logs
# go to stderr, so stdout holds only the results and the Markdown table.
for product in klaxon klaxon-bench klaxon-delivery-bench; do
    swift build -c release --static-swift-stdlib --scratch-path "$scratch" --product "$product" >&2
done

bin="$scratch/release"
status=0
"$bin/klaxon-bench" --klaxon "$bin/klaxon" "$@" || status=$?
echo
"$bin/klaxon-delivery-bench" 2>/dev/null || status=$?
exit $status
