#!/usr/bin/python3
"""A command proposer for tests (recur agent run --proposer command:...): it reads the agent's
state on stdin and proposes the first suggestion in `next`, with a hypothesis built from the
evidence. Its first answer of a run is a deliberately unsupported action, so the test sees the
loop refuse it and feed the reason back in `rejected`. Stops when nothing is suggested."""
import json
import os
import sys

state = json.load(sys.stdin)
marker = os.environ.get("FOLLOW_NEXT_MARKER")
if marker and not os.path.exists(marker):
    open(marker, "w").write("asked once\n")
    print(json.dumps({"action": "patch", "file": "kernel.diff"}))
    sys.exit(0)
if state["next"] == []:
    print(json.dumps({"action": "stop", "why": "no suggestion left"}))
    sys.exit(0)
change = state["next"][0]
evidence = "; ".join(state["evidence"]["findings"]) or "no findings"
print(json.dumps({
    "action": "set",
    "knobs": {change["knob"]: change["value"]},
    "hypothesis": f"{change['component']} is behind `{state['evidence']['condition']}` ({evidence}); "
                  f"try {change['knob']}={change['value']} ({change['why']}); refused before: {len(state['rejected'])}",
}))
