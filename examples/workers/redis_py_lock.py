#!/usr/bin/python3
"""redis-py's own redis.lock.Lock as a lockharness worker (protocol 1).

Run by the harness as `--lock exec --worker-cmd '/usr/bin/python3
examples/workers/redis_py_lock.py'`; docs/worker-protocol.md is the protocol.
Nothing of the lock is reimplemented: acquire, release and extend are the
library's own calls.

It runs on single, and on sentinel through redis-py's own Sentinel client
(`Sentinel(...).master_for(...)`): the sentinels answer with the nodes'
own addresses, which the worker maps through the hello's `dial` to its own
proxies (`DialingSentinel.discover_master`), so that every fault on its
links reaches it. It does not announce cluster: redis-py 4.3's RedisCluster
has no way to map the addresses the nodes announce (`address_remap` came in
redis-py 4.6), so it would dial the nodes past the harness's proxies.

With psycopg2 installed (Debian's python3-psycopg2) it
also writes to the run's PostgreSQL itself when the hello names one
(--resource postgres): the inventory's plain decrement (redis-py's Lock
hands out no fencing token) or the jobs workload's done rows.
"""
import json
import ssl
import sys

import redis
from redis.exceptions import AuthenticationError, LockError, LockNotOwnedError, NoPermissionError, ResponseError

try:
    import psycopg2
except ImportError:
    psycopg2 = None


def send(**msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


hello = json.loads(sys.stdin.readline())
send(kind="ready", protocol=1, name="redis-py-lock", version=redis.__version__, extend=True, topologies=["single", "sentinel"],
     unsupported={"cluster": "redis-py %s's RedisCluster dials the addresses the nodes announce and takes no function to map them "
                             "(address_remap came in redis-py 4.6), so its traffic would pass the harness's proxies by" % redis.__version__,
                  "redlock": "redis-py's Lock takes one server; Redlock over several is not in redis-py"},
     writes=["postgres"] if psycopg2 else [], workloads=["inventory", "jobs"])
if hello.get("probe") or hello.get("protocol") != 1:
    sys.exit(0)  # a probe wants only the ready line; a mismatch the harness refuses

timeout = hello["op_timeout_ms"] / 1000
conn = dict(socket_timeout=timeout, socket_connect_timeout=timeout, retry_on_timeout=False)
if hello.get("auth"):
    conn.update(username=hello["auth"]["username"], password=hello["auth"]["password"])
if hello.get("tls"):
    conn.update(ssl=True, ssl_ca_certs=hello["tls"].get("ca_file") or None, ssl_cert_reqs=ssl.CERT_REQUIRED)
dial = hello.get("dial") or {}


def address(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def through(host, port):
    """The address to dial for a node the servers announce as host:port:
    this client's own proxy for it (the hello's dial)."""
    return address(dial.get("%s:%s" % (host, port), "%s:%s" % (host, port)))


if hello["topology"] == "sentinel":
    from redis.sentinel import Sentinel

    class DialingSentinel(Sentinel):
        """redis-py's Sentinel, asking for the primary as it does, and
        dialling the address the sentinels name through this client's
        proxy for that node."""

        def discover_master(self, service_name):
            return through(*Sentinel.discover_master(self, service_name))

    sentinels = [address(a) for a in hello["sentinel"]["addrs"]]
    client = DialingSentinel(sentinels, sentinel_kwargs=dict(conn)).master_for(hello["sentinel"]["master"], **conn)
else:
    host, port = address(hello["nodes"][0])
    client = redis.Redis(host=host, port=port, **conn)
held = {}  # key -> (token, redis.lock.Lock)

database = hello.get("database")
if database and database.get("fencing", "none") != "none":
    send(kind="fatal", error="this worker writes with fencing none only, not %r" % database["fencing"])
    sys.exit(1)
db = None  # the connection to the run's PostgreSQL, through this client's own link


def db_run(statement):
    """Runs statement(cursor) in one transaction that names this client for
    the ledger's trigger; a failure drops the connection."""
    global db
    try:
        if db is None:
            db = psycopg2.connect(database["dsn"], connect_timeout=max(1, database["timeout_ms"] // 1000))
        with db, db.cursor() as cur:
            cur.execute("SET LOCAL statement_timeout = %s", (database["timeout_ms"],))
            cur.execute("SELECT set_config('lockharness.client', %s, true), set_config('lockharness.token', %s, true)",
                        (str(hello["client"]), token or ""))
            return statement(cur)
    except Exception:
        if db is not None:
            db.close()
        db = None
        raise


def next_job(cur):
    cur.execute("SELECT coalesce(min(j.id), 0) FROM jobs j WHERE j.lock_key = %s"
                " AND NOT EXISTS (SELECT 1 FROM done d WHERE d.job = j.id)", (key,))
    return cur.fetchone()[0]


def protected_write(cur):
    if database["workload"] == "jobs":
        conflict = " ON CONFLICT (job) DO NOTHING" if database.get("idempotent") else ""
        cur.execute("INSERT INTO done (job, client, token) VALUES (%s, %s, %s)" + conflict, (req["value"], hello["client"], token))
        return cur.rowcount
    cur.execute("UPDATE inventory SET quantity = quantity - 1 WHERE sku = %s RETURNING quantity", (database["sku"],))
    return cur.fetchone()[0]

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
        elif op == "read" and database:
            reply["value"] = db_run(next_job)
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
            elif database:  # the protected write, to the database itself
                reply["value"] = db_run(protected_write)
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
