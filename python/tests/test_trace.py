# The tracer from Python: zones with args, flows and counters land on the calling Python
# thread's own track, named after the thread, in the same file as the C++ zones.
import json
import threading

import recur


def test_python_thread_track_zones_and_flows(tmp_path, tiny_model):
    recur.trace.reset()
    recur.trace.enable()
    model = recur.load(tiny_model, threads=1)

    def worker():
        with recur.trace.zone("py.worker_step", seq=3, note="kv"):
            recur.trace.flow_end("kv_block", 41)

    with recur.trace.zone("py.main_step", batch=2, ratio=0.5, ok=True):
        recur.trace.flow_begin("kv_block", 41)
        recur.trace.counter("queue_depth", 4)
        model.new_session().prefill(model.encode("hello there"))
    t = threading.Thread(target=worker, name="py-worker")
    t.start()
    t.join()
    recur.trace.disable()
    path = str(tmp_path / "trace.json")
    assert recur.trace.save(path) > 0
    recur.trace.reset()

    events = json.load(open(path))["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
    worker_tids = [tid for tid, name in names.items() if name == "py-worker"]
    assert len(worker_tids) == 1
    main_tids = [tid for tid, name in names.items() if name == "MainThread"]
    assert len(main_tids) == 1

    zones = {e["name"]: e for e in events if e.get("ph") == "X"}
    assert zones["py.worker_step"]["tid"] == worker_tids[0]
    assert zones["py.worker_step"]["args"] == {"seq": 3, "note": "kv"}
    main = zones["py.main_step"]
    assert main["tid"] == main_tids[0] and main["args"] == {"batch": 2, "ratio": 0.5, "ok": True}
    # The binding's prefill zone sits inside the Python zone, on the same track.
    prefill = zones["py.prefill"]
    assert prefill["tid"] == main["tid"]
    assert main["ts"] <= prefill["ts"] and prefill["ts"] + prefill["dur"] <= main["ts"] + main["dur"]
    flows = {e["ph"]: e for e in events if e.get("cat") == "flow" and e.get("id") == 41}
    assert flows["s"]["tid"] == main_tids[0] and flows["f"]["tid"] == worker_tids[0]
    assert any(e.get("ph") == "C" and e["name"] == "queue_depth" for e in events)
