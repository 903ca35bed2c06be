#!/usr/bin/env python3
"""make_dumps.py - writes the Flight Recorder dumps of tests/unit/test_flightrec.c
in PyTorch's documented format (pytorch.org/tutorials/prototype/flight_recorder_tutorial):
a pickle of a dict with version, pg_config, pg_status and entries. Four ranks of
one job whose rank 3 never entered all_reduce 57 of the default group, where
ranks 0-2 wait; a sub-group "1" that all ranks completed. Ranks 0 and 1 are
written with protocol 2 (torch's C++ pickler), 2 and 3 with Python's default
(protocol 4: frames, memoize, short strings). Rank 2's dump says its rank; the
others' come from the file name, as PyTorch names them (nccl_trace_rank_N).
Run: python3 make_dumps.py OUTDIR"""
import pickle, sys

def entry(rid, pg, seq, state, name="nccl:all_reduce"):
    return {
        "frames": [{"name": "train_step", "filename": "train.py", "line": 42}],
        "record_id": rid, "pg_id": int(pg[0]), "process_group": pg,
        "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq,
        "profiling_name": name, "time_created_ns": 1724779239936775119 + seq,
        "input_sizes": [[3, 4]], "input_dtypes": ["Float"],
        "output_sizes": [[3, 4]], "output_dtypes": ["Float"],
        "state": state, "time_discovered_started_ns": None,
        "time_discovered_completed_ns": None, "retired": state == "completed",
        "timeout_ms": 600000, "is_p2p": False, "duration_ms": 1.5,
    }

def dump(rank, last):
    ents, rid = [], 0
    for seq in range(1, last + 1):
        state = "completed" if seq < 57 else "started"
        ents.append(entry(rid, ("0", "default_pg"), seq, state)); rid += 1
        if seq % 10 == 0:
            ents.append(entry(rid, ("1", "tp_group"), seq // 10, "completed", "nccl:all_gather")); rid += 1
    ents.append(dict(entry(rid, ("0", "default_pg"), 0, "completed", "nccl:send 3->0"), is_p2p=True))
    d = {"version": "2.3",
         "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"},
                       "1": {"name": "1", "desc": "tp_group", "ranks": "[0, 1, 2, 3]"}},
         "pg_status": {"0": {"last_enqueued_collective": last, "last_started_collective": last,
                             "last_completed_collective": min(last, 56)}},
         "entries": ents}
    if rank == 2:
        d["rank"] = 2
    return d

out = sys.argv[1] if len(sys.argv) > 1 else "."
for rank in range(4):
    with open(f"{out}/nccl_trace_rank_{rank}", "wb") as f:
        pickle.dump(dump(rank, 56 if rank == 3 else 57), f, protocol=2 if rank < 2 else 4)
