#!/usr/bin/python3
"""A scripted MCP client for recur's end-to-end tests (stdlib only).

  mcp_client.py drive RECUR WORKDIR   both protocol eras against `recur mcp` run in WORKDIR, which holds
                                      episode.toml: one whole episode (start to a passing gate, journal checked)
                                      in the initialize era, another in the stateless (2026-07-28) era; plus
                                      hostile lines.
  mcp_client.py record RECUR SRC      rewrites SRC/tests/mcp/*.jsonl, the exchanges the replay gtest compares.
"""
import json
import os
import subprocess
import sys

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "mcp_client.py", "version": "1"}}
TOOLS = ["knobs", "trace_analyze", "bench", "check", "gate", "engine_bench", "journal_query", "episode_list",
         "episode_run_step"]


class Client:
    def __init__(self, recur, cwd, stateless=False):
        self.proc = subprocess.Popen([recur, "mcp", "--call-timeout-s", "120"], cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=open(os.path.join(cwd, "mcp.err"), "ab"))
        self.stateless = stateless
        self.next_id = 0
        self.log = []

    def send_raw(self, line):
        self.proc.stdin.write(line if isinstance(line, bytes) else line.encode())
        self.proc.stdin.write(b"\n")
        self.proc.stdin.flush()

    def read(self):
        line = self.proc.stdout.readline()
        assert line, "the server closed stdout"
        return json.loads(line)

    def request(self, method, params=None, meta=None):
        self.next_id += 1
        params = dict(params or {})
        if meta or (self.stateless and meta is None):
            params["_meta"] = meta or META
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.send_raw(json.dumps(msg))
        reply = self.read()
        assert reply.get("id") == self.next_id, reply
        self.log.append({"request": msg, "response": reply})
        return reply

    def notify(self, method):
        msg = {"jsonrpc": "2.0", "method": method}
        self.send_raw(json.dumps(msg))
        self.log.append({"request": msg, "response": None})

    def call(self, name, arguments):
        reply = self.request("tools/call", {"name": name, "arguments": arguments})
        assert "result" in reply, reply
        return reply["result"]

    def close(self):
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0, "recur mcp should exit 0 at end of input"


def check_tools(reply, stateless):
    result = reply["result"]
    assert ("resultType" in result) == stateless, result.keys()
    names = [t["name"] for t in result["tools"]]
    assert names == TOOLS, names
    for t in result["tools"]:
        assert t["inputSchema"]["type"] == "object" and t["outputSchema"]["type"] == "object", t["name"]


def step(client, arguments):
    result = client.call("episode_run_step", arguments)
    assert not result["isError"], result["content"]
    out = result["structuredContent"]
    fb = out["feedback"]
    assert fb is None or fb["verdict"] in ("confirmed", "refuted", "inconclusive", "failed"), fb
    print(f"  {result['content'][0]['text']}", flush=True)
    return out


def run_episode(client, run):
    """Starts the episode as `run` and steps it until it finishes; checks the gate passed and the journal."""
    steps = 1
    out = step(client, {"episode": "episode.toml", "run": run})
    while not out["finished"] and steps < 20:
        out = step(client, {"run": run})
        steps += 1
    assert out["finished"] and out["passed"], out["summary"]["outcome"]
    assert out["summary"]["final_config"]["kernel.rmsnorm.variant"] != "scalar", out["summary"]
    runs = {r["name"]: r for r in client.call("journal_query", {})["structuredContent"]["runs"]}
    assert runs[run]["state"] == "done", runs
    exps = client.call("journal_query", {"run": run})["structuredContent"]["experiments"]
    assert len(exps) == steps and all(e["state"] == "done" for e in exps), (len(exps), steps)
    # bench.callgrind's dumps are kept beside the run's report (runs/RUN/callgrind), named in its record.
    dumps = [e["feedback"]["artifacts"].get("callgrind") for e in exps if e["feedback"]["probe"] == "bench.callgrind"]
    assert dumps and all(d and f"/runs/{run}/callgrind/" in d and os.path.getsize(d) > 0 for d in dumps), dumps
    return steps


def drive(recur, work):
    # The initialize era: handshake, tools, and a whole episode from start to a passing gate.
    a = Client(recur, work)
    init = a.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "mcp_client.py", "version": "1"}})
    assert init["result"]["protocolVersion"] == "2025-11-25", init
    a.notify("notifications/initialized")
    assert a.request("ping")["result"] == {}
    check_tools(a.request("tools/list"), stateless=False)
    eps = a.call("episode_list", {"dir": "."})["structuredContent"]["episodes"]
    assert [e["name"] for e in eps if e["valid"]] == ["rms-mcp"], eps
    missing = a.call("journal_query", {"journal": "runs/none.db"})
    assert missing["isError"], missing
    escape = a.call("gate", {"spec": "../../etc/passwd"})
    assert escape["isError"] and "outside" in escape["content"][0]["text"], escape
    steps_a = run_episode(a, "initialize-era")
    a.close()

    # The stateless era: no handshake; every request carries _meta; a second whole episode.
    b = Client(recur, work, stateless=True)
    disc = b.request("server/discover")["result"]
    assert disc["supportedVersions"][0] == "2026-07-28" and "2025-11-25" in disc["supportedVersions"], disc
    assert disc["resultType"] == "complete" and "tools" in disc["capabilities"], disc
    check_tools(b.request("tools/list"), stateless=True)
    bad = b.request("tools/list", meta={"io.modelcontextprotocol/protocolVersion": "2099-01-01",
                                        "io.modelcontextprotocol/clientCapabilities": {}})
    assert bad["error"]["code"] == -32022, bad
    chk = b.call("check", {"kernel": "rmsnorm", "variant": "scalar", "shape": "M4,N256", "seeds": "1"})
    assert not chk["isError"] and chk["structuredContent"]["probe"] == "check.kernel", chk
    assert chk["structuredContent"]["verdict"] == "confirmed", chk["structuredContent"]
    steps_b = run_episode(b, "stateless-era")
    runs = b.call("journal_query", {})["structuredContent"]["runs"]
    assert sorted(r["name"] for r in runs) == ["initialize-era", "stateless-era"], runs

    # Hostile lines: errors, and the server keeps serving.
    b.send_raw(b"x" * (2 << 20))
    assert b.read()["error"]["code"] == -32600
    b.send_raw("[" * 5000 + "]" * 5000)
    assert b.read()["error"]["code"] == -32600
    b.send_raw(b"{\"jsonrpc\": \xff")
    assert b.read()["error"]["code"] == -32700
    b.send_raw('{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"bench","arguments":{"kernel":7}}}')
    wrong = b.read()
    assert wrong["result"]["isError"] and "expected a string" in wrong["result"]["content"][0]["text"], wrong
    assert b.request("tools/list")["result"]["tools"]
    b.close()
    print(f"mcp_client: the episode passed in both eras ({steps_a} steps initialize era, {steps_b} stateless)")


def record(recur, src):
    a = Client(recur, src)
    a.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "mcp_client.py", "version": "1"}})
    a.notify("notifications/initialized")
    a.request("ping")
    a.request("tools/list")
    a.request("tools/call", {"name": "episode_list", "arguments": {"dir": "tests/mcp"}})
    a.request("tools/call", {"name": "gate", "arguments": {"spec": "../outside.toml"}})
    a.request("tools/call", {"name": "bench", "arguments": {"kernel": 7}})
    a.request("tools/call", {"name": "no_such_tool", "arguments": {}})
    a.request("resources/list")
    a.close()
    b = Client(recur, src, stateless=True)
    b.request("server/discover")
    b.request("tools/list")
    b.request("tools/call", {"name": "episode_list", "arguments": {"dir": "tests/mcp"}})
    b.request("tools/call", {"name": "journal_query", "arguments": {"journal": "/etc/passwd"}})
    b.request("initialize", {"protocolVersion": "2026-07-28"})
    b.request("ping")
    b.request("tools/list", meta={"io.modelcontextprotocol/protocolVersion": "2099-01-01",
                                  "io.modelcontextprotocol/clientCapabilities": {}})
    b.close()
    for name, client in (("initialize_era", a), ("stateless_era", b)):
        with open(os.path.join(src, "tests", "mcp", name + ".jsonl"), "w") as f:
            # The server's folder differs between checkouts: recordings say ${ROOT}.
            root = os.path.realpath(src)
            for entry in client.log:
                f.write(json.dumps(entry, sort_keys=True).replace(root, "${ROOT}") + "\n")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "drive":
        drive(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "record":
        record(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
