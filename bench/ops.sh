#!/bin/sh
# bench/ops.sh: the harness's own pipeline (workers, proxies, recorder)
# against redis-benchmark, with the same commands and concurrency, on one
# fresh redis-server each. The pipeline's rate counts the Redis commands
# its clients sent (SET NX PX to acquire, the compare-and-delete EVAL to
# release) per second of the run; redis-benchmark's is the rate of that
# same mix of commands, each measured alone. Usage: bench/ops.sh [SECONDS]
set -eu
secs=${1:-10}
clients=4
harness=${HARNESS:-bin/harness}
[ -x "$harness" ] || { echo "bench-ops: no $harness; run make build" >&2; exit 2; }
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" --logfile "$tmp/redis.log" &
pid=$!
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done

cad='if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0'
rate() { redis-benchmark -p "$port" -c "$clients" -n 200000 -q "$@" | tr '\r' '\n' | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1; }
set_rate=$(rate SET lock:orders tok NX PX 2000)
eval_rate=$(rate EVAL "$cad" 1 lock:orders tok)
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=

"$harness" run --hold 0 --backoff 0 --clients "$clients" --nemesis none --time-limit "${secs}s" --seed 1 --quiet --store "$tmp/store" >"$tmp/run.txt" 2>&1 || {
	cat "$tmp/run.txt" >&2; echo "bench-ops: the harness run failed" >&2; exit 1; }
run=$(readlink -f "$tmp/store/latest")

/usr/bin/python3 - "$run/history.jsonl" "$set_rate" "$eval_rate" <<'PY'
import json, sys
path, set_rate, eval_rate = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
first = last = None
count = {"acquire": 0, "release": 0, "write": 0}
with open(path) as f:
    for line in f:
        e = json.loads(line)
        if e.get("process") == "nemesis" or e.get("final") or e["type"] != "invoke":
            continue
        if e["f"] in count:
            count[e["f"]] += 1
        t = e["time"]
        first = t if first is None else first
        last = t
span = (last - first) / 1e9
redis_ops = count["acquire"] + count["release"]
pipeline = redis_ops / span
f_set = count["acquire"] / redis_ops
bench = 1 / (f_set / set_rate + (1 - f_set) / eval_rate)
print(f"redis-benchmark -c 4: SET NX PX {set_rate:,.0f}/s, compare-and-delete EVAL {eval_rate:,.0f}/s")
print(f"pipeline, 4 clients, hold 0, backoff 0, {span:.1f} s: {count['acquire']:,} acquires, {count['release']:,} releases "
      f"({f_set:.0%} SET NX PX), {count['write']:,} writes to the in-memory counter")
print(f"pipeline {pipeline:,.0f} ops/s · redis-benchmark {bench:,.0f} ops/s · ratio {pipeline / bench:.2f}")
PY
