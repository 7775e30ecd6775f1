"""A worker that breaks the worker protocol in one way, chosen by argv[1];
conformance_test.go holds `harness worker-check` to naming each mistake.
Without a mode it is a correct worker (redis-py's Lock, stripped down)."""
import json
import os
import sys
import time

import redis

mode = sys.argv[1] if len(sys.argv) > 1 else ""


def send(**msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


hello = json.loads(sys.stdin.readline())
if mode == "not-json":
    print("starting the lock client...", flush=True)
ready = dict(kind="ready", protocol=1, name="broken-" + (mode or "none"), extend=False)
if mode == "wrong-type":
    ready["protocol"] = "1"
if mode == "no-name":
    del ready["name"]
if mode == "protocol-2":
    ready["protocol"] = 2
send(**ready)
if mode == "chatty":  # logs to stdout, far more than a pipe's worth of lines
    for i in range(5000):
        print("log line", i, flush=True)
host, port = hello["nodes"][0].rsplit(":", 1)
client = redis.Redis(host=host, port=int(port), socket_timeout=hello["op_timeout_ms"] / 1000)
held = {}

for line in sys.stdin:
    req = json.loads(line)
    op, key, token = req["op"], req["key"], req.get("token")
    reply = dict(kind="reply", id=req["id"], type="ok")
    if op == "acquire":
        if mode == "silent":
            time.sleep(3600)
        if mode == "crash":
            os._exit(3)
        lock = client.lock(key, timeout=req["ttl_ms"] / 1000, thread_local=False)
        if lock.acquire(blocking=False, token=token) or mode == "always-ok":
            held[key] = (token, lock)
            reply["valid_ms"] = req["ttl_ms"]
        else:
            reply.update(type="fail", reason="busy")
            if mode == "no-reason":
                del reply["reason"]
    elif op in ("release", "write"):
        mine, lock = held.get(key, (None, None))
        if mine != token:
            reply.update(type="fail", reason="not-held")
        elif op == "release":
            del held[key]
            lock.release()
        else:
            reply.update(value=req["value"] + 1, token=token)
    if mode == "junk":
        print("did", op, flush=True)
    if mode == "wrong-id":
        reply["id"] += 100
    if mode == "orphan-event":
        send(kind="event", f="extend", type="ok", key=key, token=token)
    send(**reply)
    if mode == "double-reply":
        send(**reply)
