# docs/python.md's example runs as written (in this interpreter: a second one costs ~0.5 s).
import importlib.util
import os

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "quickstart.py")


def test_quickstart_runs(tiny_model, tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("quickstart", EXAMPLE)
    quickstart = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(quickstart)
    trace = str(tmp_path / "quickstart.json")
    recur_trace_was_on = quickstart.recur.trace.enabled()
    quickstart.main(tiny_model, trace)
    quickstart.recur.trace.enable(recur_trace_was_on)
    quickstart.recur.trace.reset()
    assert "KV pages arrived intact" in capsys.readouterr().out
    assert os.path.getsize(trace) > 0
