# docs/python.md's example runs as written.
import os
import subprocess
import sys

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "quickstart.py")


def test_quickstart_runs(tiny_model, tmp_path):
    trace = str(tmp_path / "quickstart.json")
    out = subprocess.run([sys.executable, EXAMPLE, tiny_model, trace], check=True, capture_output=True, text=True)
    assert "KV pages arrived intact" in out.stdout
    assert os.path.getsize(trace) > 0
