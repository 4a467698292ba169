#!/usr/bin/env bash
# Runs test files again and again, one at a time, on each store, and reports the failures per file:
# a flake shows as a file that fails some runs and passes others.
#
#   scripts/reliability/flake-hunt.sh [-n RUNS] [-s sqlite|postgres|both] [FILE…]
#
# Default: 10 runs of every integration and fault file on both stores (hours on a small machine).
# Expects a built dist/ (`npm run test:flakes` builds first). The log of each failed run is kept in
# the report folder (FLAKE_HUNT_DIR, default a new temporary folder) and named in the summary.
set -uo pipefail
cd "$(dirname "$0")/../.."

runs=10
stores=(sqlite postgres)
while getopts "n:s:" option; do
  case "$option" in
    n) runs=$OPTARG ;;
    s) if [ "$OPTARG" = both ]; then stores=(sqlite postgres); else stores=("$OPTARG"); fi ;;
    *) sed -n '4,5p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ $# -gt 0 ]; then files=("$@"); else files=(test/integration/*.test.ts test/fault/*.test.ts); fi
report=${FLAKE_HUNT_DIR:-$(mktemp -d -t flake-hunt-XXXXXX)}
mkdir -p "$report"

summary="$report/summary.tsv"
printf 'store\tfile\truns\tfailed\n' >"$summary"
echo "flake hunt: ${#files[@]} files × ${runs} runs × stores ${stores[*]}; logs in $report"
for store in "${stores[@]}"; do
  for file in "${files[@]}"; do
    failed=0
    for run in $(seq 1 "$runs"); do
      log="$report/$(basename "$file" .test.ts).$store.$run.log"
      if TEST_TIMER_STORE=$store npx vitest run "$file" >"$log" 2>&1; then
        rm -f "$log"
      else
        failed=$((failed + 1))
        echo "FAIL $store $file run $run: $log"
      fi
    done
    printf '%s\t%s\t%s\t%s\n' "$store" "$file" "$runs" "$failed" >>"$summary"
    echo "$store $file: $failed of $runs runs failed"
  done
done

echo
column -t -s $'\t' "$summary"
# Exit 1 when any run failed, so that CI or a loop can stop on it.
! awk -F'\t' 'NR > 1 && $4 > 0 { found = 1 } END { exit !found }' "$summary"
