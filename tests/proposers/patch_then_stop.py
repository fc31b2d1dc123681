#!/usr/bin/python3
"""A command proposer for tests/proposer_patch_cli_test.sh: its first answer submits the patch in
$PATCH_FILE ({"action": "patch"}); its second writes the last_feedback it was shown to
$PATCH_MARKER (the candidate.build record) and stops."""
import json
import os
import sys

state = json.load(sys.stdin)
marker = os.environ["PATCH_MARKER"]
if not os.path.exists(marker):
    open(marker, "w").write("")
    print(json.dumps({"action": "patch", "patch": open(os.environ["PATCH_FILE"]).read(),
                      "hypothesis": "four partial sums are faster", "kernel": "rmsnorm", "shape": "M8,N256"}))
    sys.exit(0)
open(marker, "w").write(json.dumps({"last_feedback": state["last_feedback"], "actions": state["actions"]}))
print(json.dumps({"action": "stop", "why": "the candidate was judged"}))
