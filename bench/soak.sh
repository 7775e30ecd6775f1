#!/bin/sh
# bench/soak.sh: what a long run costs the harness itself (issue 34, item
# 4): one run of 10 clients under a mix of faults for SOAK (default 10m),
# the harness process's own peak RSS (from /usr/bin/time -v: the largest of
# the harness and each child it waited for, and its children -- the nodes
# -- are a few MB each, so it is the harness's; its workers run inside it,
# for no fault of the mix stops a client), the history's size, and the time
# `harness report` takes to render the run again, with its own peak RSS.
# The run's end, its check and pages, is in the figure, as a sampling of
# /proc would miss it. Usage: bench/soak.sh [DURATION]
set -eu
soak=${1:-10m}
harness=${HARNESS:-bin/harness}
[ -x "$harness" ] || { echo "bench-soak: no $harness; run make build" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-soak: needs /usr/bin/time (Debian's time package)" >&2; exit 2; }
tmp=$(mktemp -d)
pid=
# time ignores an interrupt while its command runs: the harness is told.
cleanup() { [ -n "$pid" ] && pkill -INT -P "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

echo "bench-soak: harness run --clients 10 --nemesis partition,latency,pause-node,kill-node --time-limit $soak" >&2
/usr/bin/time -v -o "$tmp/run-time.txt" "$harness" run --clients 10 --nemesis partition,latency,pause-node,kill-node --time-limit "$soak" --seed 1 --quiet \
	--store "$tmp/store" >"$tmp/run.txt" 2>&1 &
pid=$!
status=0
wait "$pid" || status=$?
pid=
# A run that found an anomaly exits 1; anything else is a failure.
if [ "$status" -gt 1 ]; then
	cat "$tmp/run.txt" >&2
	echo "bench-soak: the run failed (exit $status)" >&2
	exit 1
fi
hwm=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/run-time.txt")
run=$(readlink -f "$tmp/store/latest")
events=$(wc -l <"$run/history.jsonl")
size=$(du -m "$run/history.jsonl" | cut -f1)
/usr/bin/time -v "$harness" report "$run" >"$tmp/report.txt" 2>"$tmp/time.txt" || true
wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/time.txt")
rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/time.txt")
echo "soak $soak: $events events ($size MB of history) · harness peak RSS $((hwm / 1024)) MB · report wall $wall, peak RSS $((rss / 1024)) MB"
