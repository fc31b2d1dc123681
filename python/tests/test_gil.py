# The GIL traced as a lock: a "kv_transfer" Python thread does C++ waits while the main thread
# runs a long C++ compute call. With python.release_gil=off the main thread holds the GIL through
# the call, and `recur analyze locks` shows the transfer thread waiting on "GIL" held by the main
# thread inside the call's zone; with on, no such wait (and no holds) exist.
import threading

import pytest

import recur
from conftest import run_cli

testing = recur._recur._testing


def traced_scenario(path, release_gil):
    recur.set_knob("python.release_gil", release_gil)
    recur.trace.reset()
    recur.trace.enable()
    stop = threading.Event()
    started = threading.Event()

    def transfer_loop():
        while not stop.is_set():
            with recur.trace.zone("kv_transfer.step"):
                started.set()
                testing.wait(1.0)

    t = threading.Thread(target=transfer_loop, name="kv_transfer")
    t.start()
    started.wait()
    for layer in range(3):
        with recur.trace.zone("engine.layer", layer=layer):
            testing.busy(20.0)
    stop.set()
    t.join()
    recur.trace.disable()
    recur.trace.save(path)
    recur.trace.reset()
    recur.set_knob("python.release_gil", "on")


def gil_waits_on_busy(locks):
    """Rows of mutex GIL where kv_transfer waited while MainThread held it inside py.busy."""
    rows = []
    for m in locks["details"]["mutexes"]:
        if m["mutex"] != "GIL":
            continue
        for r in m["rows"]:
            if "kv_transfer" in r["waiter"] and "MainThread" in r["holder"] and "py.busy" in r["holder_zone"]:
                rows.append(r)
    return rows


@pytest.mark.parametrize("release_gil", ["off", "on"])
def test_lock_analysis_sees_the_gil(tmp_path, recur_cli, release_gil):
    path = str(tmp_path / f"gil_{release_gil}.json")
    traced_scenario(path, release_gil)
    locks = run_cli(recur_cli, "analyze", "locks", path, "--json")
    gil = [m for m in locks["details"]["mutexes"] if m["mutex"] == "GIL"]
    rows = gil_waits_on_busy(locks)
    if release_gil == "off":
        assert gil and gil[0]["holds"] >= 3, locks
        assert rows, locks
        assert all("kv_transfer.step" in r["waiter_zone"] for r in rows)
    else:
        assert not rows, locks
        assert not gil or gil[0]["holds"] == 0, locks


def test_knob_is_registered():
    spec = [k for k in recur.knobs() if k["name"] == "python.release_gil"]
    assert spec and spec[0]["default"] == "true" and "lock:gil" in spec[0]["components"]
