#!/bin/sh
# bench/all.sh: every speed figure of the harness in one table, each beside
# its goal (issue 34): the pipeline against redis-benchmark (bench/ops.sh),
# harness check on generated histories (bench/check.sh, sizes BENCH_OPS),
# the time from a run's start to its first operation on each topology, the
# median seconds per seed of the two failover repros, and explore's runs a
# minute on each topology (BENCH_EXPLORE per topology, default 60s; 0 skips
# it), and the soak (bench/soak.sh) for BENCH_SOAK (default 0: not run).
# Usage: bench/all.sh
set -eu
harness=${HARNESS:-bin/harness}
[ -x "$harness" ] || { echo "bench: no $harness; run make build" >&2; exit 2; }
harness=$(readlink -f "$harness")
here=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
rows=$tmp/rows.tsv
: >"$rows"
row() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$rows"; }
# lockFor is the lock a topology's figures are measured with: cad, and on
# redlock (which has no single primary for cad) the redlock recipe.
lockFor() { if [ "$1" = redlock ]; then echo redlock; else echo cad; fi; }

echo "bench: the pipeline (bench/ops.sh, 3 runs of ${SECONDS_OPS:-10}s)" >&2
for i in 1 2 3; do
	line=$(HARNESS="$harness" bench/ops.sh "${SECONDS_OPS:-10}" | tail -1)
	echo "  $line" >&2
	row "pipeline against redis-benchmark, run $i" "$line" "ratio >= 0.35"
done

echo "bench: harness check (bench/check.sh ${BENCH_OPS:-1000000 10000000})" >&2
for n in ${BENCH_OPS:-1000000 10000000}; do
	line=$(HARNESS="$harness" bench/check.sh "$n" | tail -1)
	echo "  $line" >&2
	case $n in
	1000000) goal="<= 1.2 s, <= 450 MB" ;;
	10000000) goal="<= 16 s, <= 1.5 GB" ;;
	*) goal="" ;;
	esac
	row "harness check, $n operations" "${line#check $n ops }" "$goal"
done

echo "bench: time to the first operation" >&2
cd "$tmp"
for t in single sentinel redlock cluster; do
	"$harness" run --topology "$t" --lock "$(lockFor "$t")" --nemesis none --time-limit 1s --quiet --store "ttf-$t" >/dev/null 2>&1 || true
	first=$(/usr/bin/python3 - "ttf-$t/latest/history.jsonl" <<'PY'
import json, sys
try:
    for line in open(sys.argv[1]):
        e = json.loads(line)
        if e["type"] == "invoke" and e["process"] >= 0:
            print(f"{e['time'] / 1e9:.2f} s")
            break
    else:
        print("no operation")
except OSError as err:
    print(f"no run ({err.strerror})")
PY
)
	echo "  $t: $first" >&2
	row "first operation after a fresh run starts, $t" "$first" "<= 1 s"
done

echo "bench: the failover repros (10 seeds each)" >&2
for r in failover-double-grant:3.5 cluster-failover-double-grant:5; do
	name=${r%:*}
	line=$("$harness" repro "$name" --seeds 10 --store repro 2>&1 | grep ' seeds met ' | head -1 || true)
	echo "  $name: $line" >&2
	row "repro $name --seeds 10" "${line:-failed}" ">= 9 of 10, median <= ${r#*:} s per seed"
done

explore=${BENCH_EXPLORE:-60s}
if [ "$explore" != 0 ]; then
	echo "bench: explore, $explore on each topology" >&2
	for t in single sentinel redlock cluster; do
		"$harness" explore --lock "$(lockFor "$t")" --topology "$t" --strategy random --budget "$explore" --shrink-share 0 --until budget --store "explore-$t" >/dev/null 2>&1 || true
		rate=$(/usr/bin/python3 - explore-$t/explore/*/explore.json <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    print(f"{60 * len(r['runs']) / r['seconds']:.1f} runs/min ({len(r['runs'])} runs in {r['seconds']:.0f} s)")
except (OSError, ValueError, KeyError, ZeroDivisionError) as err:
    print(f"no campaign ({err})")
PY
)
		echo "  $t: $rate" >&2
		row "explore --strategy random, $t" "$rate" "as many as the pools allow"
	done
fi
cd "$here"

soak=${BENCH_SOAK:-0}
if [ "$soak" != 0 ]; then
	echo "bench: the soak ($soak)" >&2
	line=$(HARNESS="$harness" bench/soak.sh "$soak" 2>/dev/null | tail -1)
	echo "  $line" >&2
	row "soak, 10 clients under faults for $soak" "${line:-failed}" "harness RSS <= 300 MB (1h), report <= 30 s"
else
	row "soak, 10 clients under faults" "not run (BENCH_SOAK=10m, or make bench-soak)" "harness RSS <= 300 MB (1h), report <= 30 s"
fi

/usr/bin/python3 - "$rows" <<'PY'
import sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
head = ["figure", "measured", "goal"]
width = [max(len(r[i]) for r in rows + [head]) for i in range(3)]
for r in [head, ["-" * w for w in width]] + rows:
    print("  ".join(c.ljust(w) for c, w in zip(r, width)).rstrip())
PY
