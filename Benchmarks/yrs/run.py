"""The Yrs side of converge-bench's map workloads, through pycrdt (Python bindings for Yrs).

Runs the same workloads as Benchmarks/converge-bench/MapWorkloads.swift, defined after
crdt-benchmarks (github.com/dmonad/crdt-benchmarks) but on a map, and prints one JSON object:

  {"peer": "yrs", "pycrdt": VERSION, "repetitions": N,
   "workloads": {"b1": {"time_ms": ..., "update_bytes": ..., "state_bytes": ...}, ...}}

time_ms is the median CPU time of the calling thread over N repetitions after one warm-up;
update_bytes is the total of every update exchanged; state_bytes is the encoded state (an
update from the empty state vector) of the client named in each workload. Every repetition
checks its result and fails loudly if it is wrong.

The workloads (N = 6,000 operations, C = 20 * floor(sqrt(N)) = 1,540 clients):
  b1    one client sets keys k0..k(N-1) to 0..N-1, one transaction (one update) per set;
        timed: the sets and their updates; then (untimed) a second client applies every
        update and must equal the first. State: the first client.
  b2    two clients each set the same N keys in one transaction (client 1 to i, client 2
        to N + i), then each applies the other's update. Timed: all of it. State: client 1.
  b3.1  C clients each set key "v" to their index, one update each; client 0 applies every
        update (untimed); timed: client 1 applying every update in one transaction; client 1
        must equal client 0. State: client 0.
  b3.3  the same, client i setting its own key "k<i>".
  b3.4  the same, client i setting key "k<i mod 20>".
Client IDs are 1, 2, ... (the smallest Yrs encodes), as Converge's replica IDs are short.
"""

import argparse
import json
import math
import sys
import time

import pycrdt
from pycrdt import Doc, Map

OPERATIONS = 6_000
CLIENTS = 20 * math.isqrt(OPERATIONS)


def new_client(client_id, updates=None):
    doc = Doc(client_id=client_id)
    if updates is not None:
        doc.observe(lambda event: updates.append(event.update))
    return doc, doc.get("map", type=Map)


def cpu_ms(start_ns):
    return (time.thread_time_ns() - start_ns) / 1e6


def b1():
    updates = []
    doc, values = new_client(1, updates)
    start = time.thread_time_ns()
    for i in range(OPERATIONS):
        values[f"k{i}"] = i
    elapsed = cpu_ms(start)
    peer, peer_values = new_client(2)
    for update in updates:
        peer.apply_update(update)
    expected = {f"k{i}": float(i) for i in range(OPERATIONS)}
    assert len(updates) == OPERATIONS, "b1: one update per set"
    assert values.to_py() == expected and peer_values.to_py() == expected, "b1: the clients differ"
    return elapsed, sum(map(len, updates)), len(doc.get_update())


def b2():
    updates_1, updates_2 = [], []
    doc_1, values_1 = new_client(1, updates_1)
    doc_2, values_2 = new_client(2, updates_2)
    start = time.thread_time_ns()
    with doc_1.transaction():
        for i in range(OPERATIONS):
            values_1[f"k{i}"] = i
    with doc_2.transaction():
        for i in range(OPERATIONS):
            values_2[f"k{i}"] = OPERATIONS + i
    update_1, update_2 = updates_1[0], updates_2[0]
    doc_1.apply_update(update_2)
    doc_2.apply_update(update_1)
    elapsed = cpu_ms(start)
    assert len(updates_1) == 2 and len(updates_2) == 2, "b2: one update per transaction, one per received update"
    assert values_1.to_py() == values_2.to_py() and len(values_1) == OPERATIONS, "b2: the clients differ"
    return elapsed, len(update_1) + len(update_2), len(doc_1.get_update())


def b3(key_of):
    def run():
        updates = []
        clients = []
        for i in range(CLIENTS):
            collected = []
            doc, values = new_client(i + 1, collected)
            values[key_of(i)] = i
            assert len(collected) == 1
            updates.append(collected[0])
            clients.append((doc, values))
        (doc_0, values_0), (doc_1, values_1) = clients[0], clients[1]
        with doc_0.transaction():
            for update in updates:
                doc_0.apply_update(update)
        start = time.thread_time_ns()
        with doc_1.transaction():
            for update in updates:
                doc_1.apply_update(update)
        elapsed = cpu_ms(start)
        assert values_0.to_py() == values_1.to_py(), "b3: the clients differ"
        assert len(values_1) == len({key_of(i) for i in range(CLIENTS)}), "b3: keys are missing"
        return elapsed, sum(map(len, updates)), len(doc_0.get_update())
    return run


WORKLOADS = {
    "b1": b1,
    "b2": b2,
    "b3.1": b3(lambda i: "v"),
    "b3.3": b3(lambda i: f"k{i}"),
    "b3.4": b3(lambda i: f"k{i % 20}"),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repetitions", type=int, default=5, help="timed repetitions after one warm-up (default 5)")
    parser.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads (default: all)")
    arguments = parser.parse_args()
    names = [name for name in arguments.only.split(",") if name]
    unknown = [name for name in names if name not in WORKLOADS]
    if unknown or arguments.repetitions < 1:
        parser.error(f"unknown workloads {unknown}; known: {', '.join(WORKLOADS)}" if unknown else "--repetitions must be at least 1")
    results = {}
    for name in names:
        runs = [WORKLOADS[name]() for _ in range(1 + arguments.repetitions)][1:]
        times = sorted(run[0] for run in runs)
        _, update_bytes, state_bytes = runs[-1]
        assert all(run[1:] == (update_bytes, state_bytes) for run in runs), f"{name}: sizes differ between repetitions"
        results[name] = {"time_ms": times[len(times) // 2], "update_bytes": update_bytes, "state_bytes": state_bytes}
    json.dump({"peer": "yrs", "pycrdt": pycrdt.__version__, "python": sys.version.split()[0],
               "repetitions": arguments.repetitions, "workloads": results}, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
