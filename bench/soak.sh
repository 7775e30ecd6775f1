#!/bin/sh
# bench/soak.sh: what a long run costs the harness itself (issue 34, item
# 4): one run of 10 clients under a mix of faults for SOAK (default 10m),
# the harness process's own peak RSS (VmHWM, read from /proc while it runs,
# so its servers are not counted; its workers are, for no fault of the mix
# stops a client and they run inside it), the history's size, and the
# time `harness report` takes to render the run again, with its own peak
# RSS from /usr/bin/time -v. Usage: bench/soak.sh [DURATION]
set -eu
soak=${1:-10m}
harness=${HARNESS:-bin/harness}
[ -x "$harness" ] || { echo "bench-soak: no $harness; run make build" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-soak: needs /usr/bin/time (Debian's time package)" >&2; exit 2; }
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill -INT "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

echo "bench-soak: harness run --clients 10 --nemesis partition,latency,pause-node,kill-node --time-limit $soak" >&2
"$harness" run --clients 10 --nemesis partition,latency,pause-node,kill-node --time-limit "$soak" --seed 1 --quiet \
	--store "$tmp/store" >"$tmp/run.txt" 2>&1 &
pid=$!
hwm=0
while kill -0 "$pid" 2>/dev/null; do
	now=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null || true)
	[ -n "$now" ] && [ "$now" -gt "$hwm" ] && hwm=$now
	sleep 1
done
status=0
wait "$pid" || status=$?
pid=
# A run that found an anomaly exits 1; anything else is a failure.
if [ "$status" -gt 1 ]; then
	cat "$tmp/run.txt" >&2
	echo "bench-soak: the run failed (exit $status)" >&2
	exit 1
fi
run=$(readlink -f "$tmp/store/latest")
events=$(wc -l <"$run/history.jsonl")
size=$(du -m "$run/history.jsonl" | cut -f1)
/usr/bin/time -v "$harness" report "$run" >"$tmp/report.txt" 2>"$tmp/time.txt" || true
wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/time.txt")
rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/time.txt")
echo "soak $soak: $events events ($size MB of history) · harness peak RSS $((hwm / 1024)) MB · report wall $wall, peak RSS $((rss / 1024)) MB"
