"""recur for Python: the engine, the KV transfer engine and the tracer (docs/python.md).

    import recur
    model = recur.load("tiny.gguf", threads=2)
    out = model.generate("Hello", max_new_tokens=8)
    with recur.trace.zone("request", id=7):
        logits = model.new_session().prefill(model.encode("Hello"))

Knobs: recur.set_knob(name, value) for this process (python.release_gil applies at once);
RECUR_KNOBS="name=value name=value" in the environment sets them at import.
"""
import os as _os

from recur import _recur
from recur._recur import (  # noqa: F401
    Batch,
    Error,
    KvLayout,
    KvReceiver,
    KvSender,
    Model,
    Session,
    TransferEngine,
    get_knob,
    knobs,
    load,
    set_knob,
)
from recur import trace  # noqa: F401


def _apply_env_knobs():
    for assignment in _os.environ.get("RECUR_KNOBS", "").replace(",", " ").split():
        name, sep, value = assignment.partition("=")
        if not sep:
            raise Error(f"RECUR_KNOBS: '{assignment}': expected name=value")
        set_knob(name, value)


_apply_env_knobs()
