"""Compare what tests/gpu/torch_ops.py issued with what the shim recorded.

  python3 check_torch_ops.py ANALYZE ISSUED_DIR TRACE_JOB_DIR

Reads each rank's trace with `p3d-analyze --dump` (one text line per record,
`name key=value ...`), counts op records per op kind (calls, bytes) and
compares with issued-rank<r>.json.  Prints one PASS/FAIL line per check and
exits 1 if any check failed.
"""
import glob
import json
import os
import subprocess
import sys


def parse_dump(analyze, path):
    text = subprocess.run([analyze, "--dump", path], check=True,
                          capture_output=True, text=True).stdout
    header, ops, comms = {}, [], []
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        fields = dict(kv.split("=", 1) for kv in rest.split() if "=" in kv)
        if name == "header":
            header = fields
        elif name == "op":
            ops.append(fields)
        elif name == "comm":
            comms.append(fields)
    return header, ops, comms


def main():
    analyze, issued_dir, job_dir = sys.argv[1:4]
    failures = 0
    traced = {}
    for path in sorted(glob.glob(os.path.join(job_dir, "*.p3d"))):
        header, ops, comms = parse_dump(analyze, path)
        traced[int(header["rank"])] = (ops, comms)
    for path in sorted(glob.glob(os.path.join(issued_dir, "issued-rank*.json"))):
        issued = json.load(open(path))
        rank = issued["rank"]
        if rank not in traced:
            print("FAIL rank %d: no trace file" % rank)
            failures += 1
            continue
        ops, comms = traced[rank]
        got = {}
        bad_ret = 0
        for op in ops:
            entry = got.setdefault(op["op"], {"calls": 0, "bytes": 0})
            entry["calls"] += 1
            entry["bytes"] += int(op["bytes"])
            bad_ret += op.get("ret", "0") not in ("0", "7")  # 7: InProgress
        ok = got == issued["ops"] and bad_ret == 0
        failures += not ok
        print("%s rank %d: issued %s traced %s (%d comms, %d bad ret)" % (
            "PASS" if ok else "FAIL", rank, json.dumps(issued["ops"],
            sort_keys=True), json.dumps(got, sort_keys=True), len(comms),
            bad_ret))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
