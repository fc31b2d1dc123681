"""recur's tracer from Python: zones, flows, counters and instants on the calling thread's track.

Python threads appear as their own tracks, named after threading.current_thread().name.

    recur.trace.enable()
    with recur.trace.zone("schedule", batch=4):
        ...
    recur.trace.flow_begin("kv_block", 17)     # binds to the enclosing zone
    recur.trace.save("run.json")               # .json, .json.gz or .pftrace
"""
from recur import _recur

_t = _recur.trace

enable = _t.enable
enabled = _t.enabled
reset = _t.reset
set_thread_name = _t.set_thread_name
instant = _t.instant
counter = _t.counter
flow_begin = _t.flow_begin
flow_step = _t.flow_step
flow_end = _t.flow_end
save = _t.save


def disable():
    """Stops recording (what was recorded stays until reset())."""
    _t.enable(False)


def zone(name, **args):
    """A context manager: a zone named `name` with up to 4 args (int, float, bool or str)."""
    return _t.Zone(name, args)
