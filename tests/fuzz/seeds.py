#!/usr/bin/env python3
"""Write the seed inputs of the fuzz targets whose input is a record format of their own
(tests/fuzz/fuzz_*.c say which): python3 tests/fuzz/seeds.py [TARGET...]. The seeds are
committed; this script is how they were made and how to remake them after a format change.
"""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def s(text):
    """A NUL-terminated string field."""
    return (text.encode() if isinstance(text, str) else text) + b"\0"


def u8(v):
    return struct.pack("<B", v)


def u16(v):
    return struct.pack("<H", v)


def u32(v):
    return struct.pack("<I", v)


def u64(v):
    return struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)


# ---- protobuf (enough of the wire format for the raw records) ------------------------------
def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def pb_field(num, value):
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(num << 3 | 2) + varint(len(data)) + data


def pb(*fields):
    return b"".join(pb_field(n, v) for n, v in fields)


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- fuzz_ctl_messages ---------------------------------------------------------------------
# record: u8 kind, u8 flags, fields (fuzz_ctl_messages.c)
# Small facts keep most inputs cheap; "hello-fixture-facts" sends a fixture node's ("@F0").
SMALL_FACTS = '{"schema":1,"hostname":"gpu-node-01","gpus":[],"rdma":{"devices":[]}}'


def hello(facts=SMALL_FACTS, boot="boot-x", version="0.1.0", resume=0, flags=0):
    return u8(1) + u8(flags) + s(version) + s(boot) + s(facts) + u64(resume)


def heartbeat(ms=1764590000000, flags=0):
    return u8(2) + u8(flags) + u64(ms)


def facts_update(facts="@F1", reply=0, flags=0):
    return u8(3) + u8(flags) + s(facts) + u64(reply)


def error(code="facts_failed", msg="collecting facts failed", reply=0, flags=0):
    return u8(4) + u8(flags) + s(code) + s(msg) + u64(reply)


def step(dep="@D", idx=0, name="@S0", status="ok", diff="", msg="", ms=12, flags=0):
    return (u8(5) + u8(flags) + s(dep) + u32(idx) + s(name) + s(status) + s(diff) + s(msg) +
            u64(ms))


def done(dep="@D", status="succeeded", counts=(14, 0, 0, 0), msg="", flags=0):
    return u8(6) + u8(flags) + s(dep) + s(status) + b"".join(u32(c) for c in counts) + s(msg)


def ready(bench="@B2", port=18515, flags=0):
    return u8(7) + u8(flags) + s(bench) + u32(port)


def result(bench="@B0", ok=1, role="server", doc=None, flags=0):
    doc = doc if doc is not None else json.dumps(LAT_RESULT, separators=(",", ":"))
    return u8(8) + u8(flags) + s(bench) + u8(ok) + s(role) + s(doc)


def enroll(token="@T", csr="@C", host="gpu-node-09", version="0.1.0", src=7, flags=0):
    return u8(9) + u8(flags) + s(token) + s(csr) + s(host) + s(version) + u8(src)


def reconnect(node_b=False, cancelled=False):
    return u8(10) + u8((8 if node_b else 0) | (16 if cancelled else 0))


LAT_RESULT = {
    "version": 1, "ok": True, "tool": "railyard-bench", "role": "client",
    "params": {"kind": "lat", "op": "send", "transport": "tcp", "size": 2, "iters": 1000},
    "environment": {"client": {"hostname": "gpu-node-02"}, "server": {"hostname": "gpu-node-01"}},
    "results": [{"size": 2, "iters": 1000, "latency": {"min_us": 9.1, "median_us": 10.2,
                                                        "p99_us": 14.8, "max_us": 40.1}}],
    "latency_is": "one-way (RTT/2)", "latency_unit": "us",
    "counters": {"scope": "node", "ports": []},
}


def ctl_messages():
    t = "fuzz_ctl_messages"
    write(t, "hello", hello() + heartbeat())
    write(t, "hello-fixture-facts", hello(facts="@F0") + heartbeat())
    write(t, "plan-succeeded",
          hello() + b"".join(step(idx=i, name="@S%d" % i, status="changed" if i == 9 else "ok",
                                  diff="--- a\n+++ b\n@@ -1 +1 @@\n-0\n+1\n" if i == 9 else "")
                             for i in range(14)) + done(counts=(13, 1, 0, 0)))
    write(t, "plan-failed",
          hello() + step(idx=0, status="failed", msg="HCA port DOWN") +
          b"".join(step(idx=i, name="@S%d" % i, status="skipped") for i in range(1, 14)) +
          done(status="failed", counts=(0, 0, 1, 13), msg="stopped at a failed step"))
    write(t, "plan-refused",
          hello() + step(dep="d-nothere") + step(idx=20000) + step(status="great") +
          done(status="maybe") + step(idx=0, flags=1) + step(dep="@D", idx=3, name="@S5"))
    write(t, "bench",
          hello() + ready() + ready(bench="@B0", port=1) + result() +
          result(bench="@B1", role="client") + result(bench="@B2", ok=0, role="server",
                                                     doc='{"ok":false,"error":{"code":-110,'
                                                         '"message":"no client"}}'))
    write(t, "bench-refused",
          hello() + ready(bench="@B1") + ready(port=0) + result(doc="[1]") +
          result(role="client") + result(bench="b-nothere"))
    write(t, "facts", hello() + facts_update() + facts_update(facts="[]", reply=3) + error())
    write(t, "order",
          heartbeat() + reconnect() + hello() + hello(flags=1) + reconnect() + hello() +
          hello(flags=3))
    write(t, "reconnect",
          hello() + reconnect(True) + hello(boot="boot-b") + result(bench="@B0",
                                                                                 role="client")
          + reconnect(False, True) + hello(boot="boot-x") + ready())
    write(t, "enroll",
          enroll() + enroll(host="-bad-") + enroll(token="nope") + enroll(csr="x") +
          u8(9) + u8(8) + u16(0) + u8(1))
    raw = pb((1, 1), (10, pb((1, "0.1.0"), (2, '{"schema":1}'), (4, "boot-r"))))
    write(t, "raw", u8(0) + u8(0) + u16(len(raw)) + raw + u8(0) + u8(0) + u16(3) + b"\xff\xff\xff")


# ---- fuzz_agent_messages -------------------------------------------------------------------
# record: u8 kind, u8 flags, fields (fuzz_agent_messages.c)
def welcome(node="n-fuzz00000001", cluster="fuzz", hb=5000, last=0, flags=0):
    return u8(1) + u8(flags) + s(node) + s(cluster) + u32(hb) + u64(last)


def refresh(flags=0):
    return u8(2) + u8(flags)


def apply_plan(dep="d-00000001", plan="@P", flags=0):
    return u8(3) + u8(flags) + s(dep) + s(plan)


def cancel(dep="", bench="", flags=0):
    return u8(4) + u8(flags) + s(dep) + s(bench)


def run_bench(bench="b-00000001", role="server", peer="", params=None, deadline=60000,
              flags=0):
    params = params if params is not None else '{"kind":"lat","transport":"tcp","size":2,' \
                                               '"iters":1000}'
    return u8(5) + u8(flags) + s(bench) + s(role) + s(peer) + s(params) + u32(deadline)


def receipt(flags=0):
    return u8(6) + u8(flags)


def ctl_error(code="report_refused", msg="no", reply=2, flags=0):
    return u8(7) + u8(flags) + s(code) + s(msg) + u64(reply)


def end(status=0, flags=0):
    return u8(8) + u8(flags) + u8(status)


SMALL_PLAN = {
    "schema": 1, "name": "small", "version": "1", "sha256": "0" * 64,
    "steps": [
        {"name": "swappiness", "type": "sysctl", "continue_on_error": False,
         "params": {"settings": {"vm.swappiness": "10"}, "persist": True,
                    "file": "/etc/sysctl.d/90-railyard.conf"}},
        {"name": "motd", "type": "file", "continue_on_error": True,
         "when": {"fact": "os.id", "op": "==", "value": "debian", "quantifier": "all"},
         "params": {"path": "/etc/motd", "content": "hello\n", "mode": "0644",
                    "owner": "root", "group": "root"}},
    ],
}


def agent_messages():
    t = "fuzz_agent_messages"
    write(t, "welcome", welcome() + receipt() + refresh() + ctl_error())
    write(t, "plan", welcome() + apply_plan() + receipt() + apply_plan(flags=0))
    write(t, "plan-all-steps", welcome() + apply_plan(dep="d-00000002", plan="@Q"))
    write(t, "plan-small",
          welcome() + apply_plan(dep="d-00000003",
                                 plan=json.dumps(SMALL_PLAN, separators=(",", ":"))))
    write(t, "plan-bad",
          welcome() + apply_plan(dep="../x") + apply_plan(dep="d-4", plan="[1,2]") +
          apply_plan(dep="d-5", plan='{"schema":2}') + cancel(dep="d-4"))
    write(t, "bench",
          welcome() + run_bench() + run_bench(bench="b-00000002", role="client",
                                              peer="10.0.0.2:18515") + cancel(bench="b-00000001")
          + run_bench(bench="b-3", role="both") + run_bench(bench="b-4", params="{}",
                                                           deadline=0))
    write(t, "bench-bw",
          welcome() + run_bench(bench="b-5", role="client", peer="[fd00::2]:18516",
                                params='{"kind":"bw","op":"write","transport":"verbs",'
                                       '"device":"mlx5_0","size":65536,"qps":4,"duration_s":2,'
                                       '"gid_index":3,"ib_port":1,"bidir":true}'))
    write(t, "order",
          receipt() + welcome(flags=1) + receipt(flags=1) + end(0) + welcome(last=3) +
          ctl_error(flags=3) + end(1))
    raw = pb((1, 1), (2, 0), (10, pb((1, "n-1"), (2, "fuzz"), (3, 1000))))
    unknown = pb((1, 2), (99, pb((1, "x"))))
    write(t, "raw",
          u8(0) + u8(0) + u16(len(raw)) + raw + u8(0) + u8(0) + u16(len(unknown)) + unknown +
          u8(0) + u8(0) + u16(2) + b"\x0a\xff")


# ---- fuzz_rest -----------------------------------------------------------------------------
# u8 route (fuzz_rest.c's table), u8 flags, [id string], query string, body
REST_ROUTES = [
    "POST /api/v1/playbooks", "POST /api/v1/playbooks/check", "POST /api/v1/deployments",
    "POST /api/v1/deployments/{id}/cancel", "POST /api/v1/campaigns",
    "POST /api/v1/campaigns/{id}/cancel", "POST /api/v1/signoffs", "POST /api/v1/bench-runs",
    "POST /api/v1/bench-runs/{id}/cancel", "POST /api/v1/revalidations",
    "POST /api/v1/revalidations/{id}/cancel", "POST /api/v1/enrollment-tokens",
    "DELETE /api/v1/enrollment-tokens/{id}", "POST /api/v1/api-tokens",
    "DELETE /api/v1/api-tokens/{id}", "POST /api/v1/nodes/{id}/revoke", "GET /api/v1/nodes",
    "GET /api/v1/nodes/{id}", "GET /api/v1/deployments", "GET /api/v1/deployments/{id}",
    "GET /api/v1/bench-runs", "GET /api/v1/bench-runs/{id}", "GET /api/v1/campaigns",
    "GET /api/v1/signoffs", "GET /api/v1/revalidations", "GET /api/v1/audit",
    "GET /api/v1/playbooks", "GET /api/v1/playbooks/{id}", "GET /api/v1/enrollment-tokens",
    "GET /api/v1/api-tokens", "GET /api/v1/clusters",
]
SMALL_YAML = ('name: fuzz-small\nversion: "1"\nsteps:\n  - name: swappiness\n    type: sysctl\n'
              '    params:\n      settings: {vm.swappiness: 10}\n')


def rest(route, body=None, ident=None, query="", flags=0):
    k = REST_ROUTES.index(route)
    out = u8(k) + u8(flags)
    if "{id}" in route:
        out += s(ident or "")
    out += s(query)
    if body is not None:
        out += (json.dumps(body) if not isinstance(body, (str, bytes)) else body).encode() \
            if not isinstance(body, bytes) else body
    return out


def rest_seeds():
    t = "fuzz_rest"
    with open(os.path.join(HERE, "..", "..", "playbooks", "tcp-baseline.yaml")) as f:
        baseline = f.read()
    seeds = {
        "playbook": rest("POST /api/v1/playbooks", {"cluster": "fuzz", "playbook": SMALL_YAML}),
        "playbook-check": rest("POST /api/v1/playbooks/check",
                               {"cluster": "fuzz", "playbook": SMALL_YAML,
                                "node": "gpu-node-01"}),
        "deploy": rest("POST /api/v1/deployments",
                       {"cluster": "fuzz", "playbook": SMALL_YAML, "check": True,
                        "batch": "50%", "max_fail": "1", "canary": 1, "pause_ms": 1000}),
        "deploy-bad": rest("POST /api/v1/deployments",
                           {"cluster": "fuzz", "playbook": "name: x\n\tsteps: [", "canary": -4}),
        "deploy-cancel": rest("POST /api/v1/deployments/{id}/cancel", {}, "@D"),
        "campaign": rest("POST /api/v1/campaigns",
                         {"cluster": "fuzz", "playbook": baseline, "quick": True, "seed": 7,
                          "dry_run": True, "nodes": "gpu-node-01,@N1"}),
        "campaign-cancel": rest("POST /api/v1/campaigns/{id}/cancel", {}, "c-00000000"),
        "signoff": rest("POST /api/v1/signoffs", {"campaign": "c-00000000"}),
        "bench": rest("POST /api/v1/bench-runs",
                      {"cluster": "fuzz", "from": "gpu-node-02", "to": "gpu-node-01",
                       "kind": "bw", "transport": "tcp", "size": 65536, "qps": 2,
                       "duration_s": 1, "bidir": True, "check_data": True}),
        "bench-cancel": rest("POST /api/v1/bench-runs/{id}/cancel", {}, "@B2"),
        "revalidate": rest("POST /api/v1/revalidations",
                           {"cluster": "fuzz", "baseline": "s-00000000", "playbook": baseline,
                            "tolerance_bw_pct": 5, "tolerance_lat_pct": 10}),
        "token": rest("POST /api/v1/enrollment-tokens", {"cluster": "fuzz", "uses": 2,
                                                          "ttl_ms": 60000}),
        "token-delete": rest("DELETE /api/v1/enrollment-tokens/{id}", "", "0123456789abcdef"),
        "api-token": rest("POST /api/v1/api-tokens",
                          {"name": "ci", "role": "viewer", "clusters": ["fuzz"],
                           "ttl_ms": 86400000}),
        "api-token-delete": rest("DELETE /api/v1/api-tokens/{id}", "", "t-00000000"),
        "revoke": rest("POST /api/v1/nodes/{id}/revoke", {}, "@N1"),
        "nodes": rest("GET /api/v1/nodes", "", query="cluster=fuzz&state=online&limit=1&cursor=0"),
        "node": rest("GET /api/v1/nodes/{id}", "", "gpu-node-01"),
        "deployment": rest("GET /api/v1/deployments/{id}", "", "@D"),
        "bench-get": rest("GET /api/v1/bench-runs/{id}", "", "@B0", query="x=%ff%00+y"),
        "audit": rest("GET /api/v1/audit", "", query="limit=5&cursor=2"),
        "text-plain": rest("POST /api/v1/deployments", "{}", flags=2),
        "dup-keys": rest("POST /api/v1/bench-runs", '{"from":"a","from":"b"}'),
        "raw-path": u8(len(REST_ROUTES)) + u8(0) + u8(0) + s("/api/v1/nodes/%2e%2e/@N0//x") +
        s("limit=%zz"),
    }
    for name, data in seeds.items():
        write(t, name, data)


TARGETS = {"fuzz_ctl_messages": ctl_messages, "fuzz_agent_messages": agent_messages,
           "fuzz_rest": rest_seeds}

if __name__ == "__main__":
    for name in sys.argv[1:] or TARGETS:
        TARGETS[name]()
