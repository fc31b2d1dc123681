#!/usr/bin/env python3
"""The emulated link's pacing (knob transfer.link_mbps, docs/transfer.md "Emulated link").

Sends BYTES in PIECE-sized writes through recur.TransferEngine(..., link_mbps=M) to a peer engine
in this process, over shared memory and TCP (loopback), for several rates; runs interleaved (every
rate and transport once per run). Per configuration: wall time from submit to the batch's
completion against the ideal BYTES / rate, the achieved rate, and the process CPU time over the
same interval (the link waits by sleeping, so CPU time should stay near the unlimited run's copy
cost). Medians over runs with [min .. max]; docs/performance.md "KV transfer: emulated link".

  PYTHONPATH=build/python /usr/bin/python3 benchmarks/transfer_link_pacing.py [--runs 5]
      [--bytes 16777216] [--piece 262144] [--mbps 0,100,1000,4000]
"""
import argparse
import os
import statistics
import time

import recur


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--bytes", type=int, default=16 << 20)
    p.add_argument("--piece", type=int, default=256 << 10)
    p.add_argument("--mbps", default="0,100,1000,4000", help="comma-separated link rates, MB/s (0 = unlimited)")
    return p.parse_args()


def timed_batch(engine, source, peer, target_offset, nbytes, piece):
    """Submits nbytes as writes of `piece` bytes; returns (wall s, process CPU s) to completion."""
    count = nbytes // piece
    batch = engine.allocate_batch(count)
    requests = [{"op": "write", "source": source, "source_offset": i * piece, "target": peer,
                 "target_offset": target_offset + i * piece, "length": piece} for i in range(count)]
    cpu0, wall0 = time.process_time(), time.monotonic()
    engine.submit(batch, requests)
    engine.wait_batch(batch, timeout_ms=600000)
    wall, cpu = time.monotonic() - wall0, time.process_time() - cpu0
    engine.free_batch(batch)
    return wall, cpu


def main():
    args = parse_args()
    nbytes = args.bytes - args.bytes % args.piece
    rates = [int(m) for m in args.mbps.split(",")]
    tag = os.getpid()
    decode = recur.TransferEngine(f"lp-dec-{tag}", listen="127.0.0.1:0")
    area = decode.allocate_shared(nbytes)
    target = decode.register_memory(area)["segment_offset"]
    configs = []
    for transport in ("shm", "tcp"):
        for mbps in rates:
            engine = recur.TransferEngine(f"lp-{transport}{mbps}-{tag}", link_mbps=mbps)
            source = engine.allocate_shared(nbytes)
            engine.register_memory(source)
            source[:] = 7
            name = decode.segment_name if transport == "shm" else f"127.0.0.1:{decode.port}/{decode.segment_name}"
            configs.append({"transport": transport, "mbps": mbps, "engine": engine, "source": source,
                            "peer": engine.open_segment(name), "runs": []})
    for c in configs:  # warm-up: first-touch mappings, TCP connection
        timed_batch(c["engine"], c["source"], c["peer"], target, nbytes, args.piece)
    for _ in range(args.runs):
        for c in configs:
            c["runs"].append(timed_batch(c["engine"], c["source"], c["peer"], target, nbytes, args.piece))

    def spread(values, scale):
        return (f"{statistics.median(values) * scale:.2f} "
                f"[{min(values) * scale:.2f} .. {max(values) * scale:.2f}]")

    print(f"{nbytes} bytes in {nbytes // args.piece} writes of {args.piece}; {args.runs} interleaved runs")
    print("| transport | link MB/s | ideal ms | wall ms | achieved MB/s | process CPU ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    for c in configs:
        walls = [w for w, _ in c["runs"]]
        cpus = [u for _, u in c["runs"]]
        ideal = f"{nbytes / (c['mbps'] * 1e6) * 1e3:.2f}" if c["mbps"] else "-"
        achieved = nbytes / statistics.median(walls) / 1e6
        print(f"| {c['transport']} | {c['mbps'] or 'unlimited'} | {ideal} | {spread(walls, 1e3)} | "
              f"{achieved:.0f} | {spread(cpus, 1e3)} |")


if __name__ == "__main__":
    main()
