#!/bin/sh
# bench/check.sh: `harness check` on a generated correct run of N
# operations (10 keys, 10 clients, 3% of unknown outcome), timed by
# /usr/bin/time -v for its wall time and peak memory. The history is made
# once per size under ${BENCH_DIR:-/tmp/lockharness-bench}. Usage:
# bench/check.sh N...
set -eu
harness=${HARNESS:-bin/harness}
[ -x "$harness" ] || { echo "bench-check: no $harness; run make build" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-check: needs /usr/bin/time (Debian's time package)" >&2; exit 2; }
base=${BENCH_DIR:-/tmp/lockharness-bench}
for n in "$@"; do
	dir=$base/ops-$n
	if [ ! -s "$dir/history.jsonl" ]; then
		mkdir -p "$dir"
		echo "writing a history of $n operations to $dir"
		LOCKHARNESS_BENCH_HISTORY=$dir/history.jsonl LOCKHARNESS_BENCH_OPS=$n \
			go test -count=1 -timeout 30m -run '^TestWriteBenchHistory$' ./checker >/dev/null
	fi
	rm -f "$dir/results.json"
	/usr/bin/time -v "$harness" check --check-timeout 10m "$dir" >"$dir/check.txt" 2>"$dir/time.txt" || true
	verdict=$(sed -n 's/.*verdict *//p' "$dir/check.txt")
	wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/time.txt")
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
	size=$(du -m "$dir/history.jsonl" | cut -f1)
	echo "check $n ops ($size MB of history): $verdict · wall $wall · peak RSS $((rss / 1024)) MB"
done
