#!/usr/bin/env python3
"""A/B of the AVX2 int8 prefill tile (issue 11, item 2): base vs new, interleaved and rotated.

Each pass runs every arm once; pass p starts at arm (p - 1) mod n (MEASURING.md rule 2).
Before each run it waits for an idle machine (both cores < 8% busy over 2 s, and the
1-minute load below a bound) and records what it saw, with `top`'s busy processes; during each run it measures the
CPU time used by other processes (/proc/stat busy time minus this run's own CPU time), so a
contended pass is labelled rather than silently mixed in.

Usage: run_ab.py --kind tile|pp --base BIN --new BIN [--model GGUF] --passes N --out FILE.json
  tile: BIN is int8_tile_bench (prints one JSON line per thread count)
  pp:   BIN is edge-infer; runs `bench -m MODEL -p 512 -n 0 -r R -t 2 -o json`
All arms run with EDGE_MAX_ISA=avx2.
"""
import argparse
import json
import os
import resource
import subprocess
import time

HZ = os.sysconf("SC_CLK_TCK")


def busy_jiffies():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4]  # all but idle and iowait


def others_busy():
    out = subprocess.run(["top", "-bn1"], capture_output=True, text=True).stdout.splitlines()
    rows = []
    for line in out[7:]:
        f = line.split()
        if len(f) >= 12 and float(f[8]) > 20.0:
            rows.append(f"{f[11]}:{f[8]}%")
    return rows


def busy_share(seconds=2.0):
    """Share of both cores busy over `seconds` (this script sleeps meanwhile)."""
    b0, t0 = busy_jiffies(), time.time()
    time.sleep(seconds)
    return (busy_jiffies() - b0) / HZ / (2 * (time.time() - t0))


def wait_idle(max_load, max_busy, max_wait_s):
    t0 = time.time()
    while True:
        load, busy = os.getloadavg()[0], busy_share()
        ok = load < max_load and busy < max_busy
        if ok or time.time() - t0 > max_wait_s:
            return {"loadavg_1m": round(load, 2), "busy_share_2s": round(busy, 3),
                    "busy_processes": others_busy(), "waited_s": round(time.time() - t0, 1),
                    "idle": ok}
        time.sleep(8)


def run_one(cmd, env):
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    b0, t0 = busy_jiffies(), time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.time() - t0
    b1 = busy_jiffies()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    foreign = max(0.0, (b1 - b0) / HZ - own)
    return p, {"wall_s": round(wall, 2), "own_cpu_s": round(own, 2),
               "foreign_cpu_s": round(foreign, 2),
               "foreign_cpu_share": round(foreign / (2 * wall), 3) if wall > 0 else None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", choices=["tile", "pp"], required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--model")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tile-args", default="512 2048 6144 w4s 128 5")
    ap.add_argument("--max-load", type=float, default=1.5)
    ap.add_argument("--max-busy", type=float, default=0.08)
    ap.add_argument("--max-wait", type=float, default=900)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    env = dict(os.environ, EDGE_MAX_ISA="avx2")
    arms = [("base", a.base), ("new", a.new)]
    runs = []
    for p in range(1, a.passes + 1):
        for i in range(len(arms)):
            name, binary = arms[(p - 1 + i) % len(arms)]
            if a.kind == "tile":
                cmd = [binary] + a.tile_args.split()
            else:
                cmd = [binary, "bench", "-m", a.model, "-p", "512", "-n", "0", "-r",
                       str(a.reps), "-t", "2", "-o", "json"]
            pre = wait_idle(a.max_load, a.max_busy, a.max_wait)
            proc, load = run_one(cmd, env)
            rec = {"pass": p, "arm": name, "command": "EDGE_MAX_ISA=avx2 " + " ".join(cmd),
                   "preflight": pre, "during": load, "rc": proc.returncode}
            if a.kind == "tile":
                rec["results"] = [json.loads(l) for l in proc.stdout.splitlines()
                                  if l.startswith("{")]
                rec["peak_line"] = [l for l in proc.stdout.splitlines() if l.startswith("clock")]
                rec["kernels"] = [l.strip() for l in proc.stdout.splitlines()
                                  if "->" in l or l.startswith("CPU") or l.startswith("features")]
            else:
                res = json.loads(proc.stdout)
                rec["results"] = res
            if proc.returncode != 0:
                rec["stderr"] = proc.stderr[-2000:]
            runs.append(rec)
            print(json.dumps({k: rec[k] for k in ("pass", "arm", "preflight", "during")}),
                  flush=True)
    with open(a.out, "w") as f:
        json.dump({"kind": a.kind, "arms": dict(arms), "passes": a.passes, "runs": runs}, f,
                  indent=1)


if __name__ == "__main__":
    main()
