#!/usr/bin/python3
"""redis-py's own redis.lock.Lock as a lockharness worker (protocol 1).

Run by the harness as `--lock exec --worker-cmd '/usr/bin/python3
examples/workers/redis_py_lock.py'`; docs/worker-protocol.md is the protocol.
Nothing of the lock is reimplemented: acquire, release and extend are the
library's own calls.
"""
import json
import ssl
import sys

import redis
from redis.exceptions import AuthenticationError, LockError, LockNotOwnedError, NoPermissionError, ResponseError


def send(**msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


hello = json.loads(sys.stdin.readline())
send(kind="ready", protocol=1, name="redis-py-lock", version=redis.__version__, extend=True, topologies=["single"])
if hello.get("probe") or hello.get("protocol") != 1:
    sys.exit(0)  # a probe wants only the ready line; a mismatch the harness refuses

host, port = hello["nodes"][0].rsplit(":", 1)
timeout = hello["op_timeout_ms"] / 1000
conn = dict(host=host, port=int(port), socket_timeout=timeout, socket_connect_timeout=timeout, retry_on_timeout=False)
if hello.get("auth"):
    conn.update(username=hello["auth"]["username"], password=hello["auth"]["password"])
if hello.get("tls"):
    conn.update(ssl=True, ssl_ca_certs=hello["tls"].get("ca_file") or None, ssl_cert_reqs=ssl.CERT_REQUIRED)
client = redis.Redis(**conn)
held = {}  # key -> (token, redis.lock.Lock)

for line in sys.stdin:
    req = json.loads(line)
    op, key, token = req["op"], req["key"], req.get("token")
    reply = dict(kind="reply", id=req["id"], type="ok")
    try:
        if op == "acquire":
            lock = client.lock(key, timeout=req["ttl_ms"] / 1000, thread_local=False)
            if lock.acquire(blocking=False, token=token):
                held[key] = (token, lock)
                reply["valid_ms"] = req["ttl_ms"]
            else:
                reply.update(type="fail", reason="busy")
        elif op in ("release", "extend", "write"):
            mine, lock = held.get(key, (None, None))
            if mine != token:
                reply.update(type="fail", reason="not-held", error="this worker holds no lease %s on %s" % (token, key))
            elif op == "release":
                del held[key]
                lock.release()
            elif op == "extend":
                lock.extend(req["ttl_ms"] / 1000, replace_ttl=True)
                reply["valid_ms"] = req["ttl_ms"]
            else:  # the protected write: the value this client stores under its lease
                reply.update(value=req.get("value", 0) + 1, token=token)
        else:
            reply.update(type="fail", reason="rejected", error="unknown op %r" % op)
    except (AuthenticationError, NoPermissionError) as e:
        send(kind="fatal", error="redis refused the credentials: %s" % e)
        sys.exit(1)
    except (LockNotOwnedError, LockError) as e:
        reply.update(type="fail", reason="not-held", error=str(e))
    except ResponseError as e:
        if str(e).startswith(("WRONGPASS", "NOAUTH", "NOPERM")):  # no retry can help: the run must end
            send(kind="fatal", error="redis refused this client: %s" % e)
            sys.exit(1)
        reply.update(type="fail", reason="rejected", error=str(e))  # READONLY, ...: a definite no that says nothing of the lock
    except Exception as e:  # a timeout or a broken connection: the command may have run
        reply.update(type="info", error="%s: %s" % (type(e).__name__, e))
    send(**reply)
