# The transfer engine through the bindings: a numpy page's round trip through shared memory
# (raw batch, and KvSender/KvReceiver layer by layer with checksums), and the emulated link's pacing.
import itertools
import os
import time

import numpy as np
import pytest

import recur


_names = itertools.count()


@pytest.fixture
def engines():
    tag = f"{os.getpid()}-{next(_names)}"  # a segment name is served once per process
    decode = recur.TransferEngine(f"pyt-dec-{tag}")
    prefill = recur.TransferEngine(f"pyt-pre-{tag}")
    return prefill, decode


def test_raw_write_and_wait(engines):
    prefill, decode = engines
    area = decode.allocate_shared(1 << 16)
    region = decode.register_memory(area)
    src = prefill.allocate_shared(4096)
    prefill.register_memory(src)
    src[:] = np.arange(4096, dtype=np.uint32).astype(np.uint8)
    peer = prefill.open_segment(decode.segment_name)
    batch = prefill.allocate_batch(4)
    prefill.submit(batch, [{"op": "write", "source": src, "target": peer,
                            "target_offset": region["segment_offset"] + 512, "length": 4096}])
    prefill.wait_batch(batch, timeout_ms=5000)
    assert prefill.status(batch, 0)["state"] == "completed"
    prefill.free_batch(batch)
    assert np.array_equal(area[512:512 + 4096], src)


def test_kv_layers_round_trip_with_checksum(engines):
    prefill, decode = engines
    layout = recur.KvLayout(layers=3, blocks_per_layer=2, max_block_bytes=1024)
    area = decode.allocate_shared(layout.sequence_bytes)
    region = decode.register_memory(area)
    receiver = recur.KvReceiver(area, layout)

    pages = prefill.allocate_shared(3 * 2 * 1024)
    prefill.register_memory(pages)
    rng = np.random.default_rng(3)
    pages[:] = rng.integers(0, 256, pages.size, dtype=np.uint8)
    page = lambda layer, block: pages[(layer * 2 + block) * 1024:(layer * 2 + block + 1) * 1024]

    sender = recur.KvSender(prefill, prefill.open_segment(decode.segment_name), layout)
    sender.begin_sequence(1, region["segment_offset"], 1)
    for layer in range(3):
        sender.send_layer(1, layer, [page(layer, 0), page(layer, 1)])
    sender.finish_sequence(1, timeout_ms=5000)

    for layer in range(3):
        assert receiver.layer_ready(0, layer, 1)
        out = [np.zeros(1024, np.uint8), np.zeros(1024, np.uint8)]
        receiver.receive_layer(1, 1, 0, layer, out, timeout_ms=1000)
        assert np.array_equal(out[0], page(layer, 0)) and np.array_equal(out[1], page(layer, 1))

    # A corrupted payload byte fails the block's checksum: an error, never data.
    area[layout.slot_offset(2, 1) + 100] ^= 0xFF
    with pytest.raises(recur.Error, match="checksum"):
        receiver.receive_layer(1, 1, 0, 2, [np.zeros(1024, np.uint8), np.zeros(1024, np.uint8)], timeout_ms=1000)


def _paced_write_seconds(prefill, decode, nbytes):
    """Writes nbytes from prefill to decode in 16 requests; returns the seconds from submit to done."""
    area = decode.allocate_shared(nbytes)
    region = decode.register_memory(area)
    src = prefill.allocate_shared(nbytes)
    prefill.register_memory(src)
    src[:] = np.random.default_rng(5).integers(0, 256, nbytes, dtype=np.uint8)
    peer = prefill.open_segment(decode.segment_name)
    piece = nbytes // 16
    batch = prefill.allocate_batch(16)
    start = time.monotonic()
    prefill.submit(batch, [{"op": "write", "source": src, "source_offset": i * piece, "target": peer,
                            "target_offset": region["segment_offset"] + i * piece, "length": piece}
                           for i in range(16)])
    prefill.wait_batch(batch, timeout_ms=5000)
    took = time.monotonic() - start
    prefill.free_batch(batch)
    assert np.array_equal(area, src)
    return took


def test_link_mbps_paces_transfers():
    # 1 MiB over an emulated 100 MB/s link takes at least 10.5 ms (a lower bound only: pacing
    # guarantees it; how much longer depends on the machine's load).
    tag = f"{os.getpid()}-{next(_names)}"
    decode = recur.TransferEngine(f"pyt-ldec-{tag}")
    prefill = recur.TransferEngine(f"pyt-lpre-{tag}", link_mbps=100)
    assert _paced_write_seconds(prefill, decode, 1 << 20) >= (1 << 20) / 100e6
    with pytest.raises(ValueError, match="link_mbps"):
        recur.TransferEngine(f"pyt-lbad-{tag}", link_mbps=-1)


def test_link_mbps_defaults_to_the_knob():
    tag = f"{os.getpid()}-{next(_names)}"
    recur.set_knob("transfer.link_mbps", "200")
    try:
        prefill = recur.TransferEngine(f"pyt-kpre-{tag}")
        unlimited = recur.TransferEngine(f"pyt-kfree-{tag}", link_mbps=0)  # the keyword wins
    finally:
        recur.set_knob("transfer.link_mbps", "0")
    decode = recur.TransferEngine(f"pyt-kdec-{tag}")
    assert _paced_write_seconds(prefill, decode, 1 << 20) >= (1 << 20) / 200e6
    _paced_write_seconds(unlimited, decode, 1 << 16)


def test_engine_with_registered_own_memory_is_freed_with_its_shared_memory():
    # allocate_shared's array keeps the engine alive; registering it must not keep the array
    # alive in turn (a cycle Python cannot collect would leak the engine and its /dev/shm objects).
    import gc
    name = f"pyt-free-{os.getpid()}"
    e = recur.TransferEngine(name)
    area = e.allocate_shared(1 << 16)
    e.register_memory(area)
    files = [f for f in os.listdir("/dev/shm") if f.startswith(f"recur-kv.{name}")]
    assert len(files) == 2  # the segment's directory and the allocation
    del e, area
    gc.collect()
    assert [f for f in os.listdir("/dev/shm") if f.startswith(f"recur-kv.{name}")] == []
