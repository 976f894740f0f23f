#!/usr/bin/env python3
"""Quantiser wall time side by side (MEASURING.md): each arm is a command that quantises one
input file; arms are interleaved and rotated per pass; the report has per arm the median,
min and max wall time and user CPU time, the CPU load seen before each run, and every ratio
against the arms labelled as the reference.

  bench/quantize_bench.py --out bench/results/X.json --passes 2 \
      --arm edge_w4a8:"build/release/edge-infer quantize F16.gguf {out} --type w4a8 -t 2" \
      --arm llama_q4_k_m:"/path/llama-quantize F16.gguf {out} q4_k_m 2" --reference llama_q4_k_m

{out} is replaced by a scratch path (removed after each run). Only the Python standard
library is used; llama.cpp is never part of this repository: build it elsewhere."""
import argparse, json, os, resource, shlex, statistics, subprocess, sys, tempfile, time


def cpu_busy(seconds=0.5):
    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]
    t0, i0 = snap(); time.sleep(seconds); t1, i1 = snap()
    return 1.0 - (i1 - i0) / max(1, t1 - t0)


def git_commit():
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        head = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except OSError:
        return ""


def run_arm(cmd, scratch):
    out = os.path.join(scratch, "out.gguf")
    argv = [a.replace("{out}", out) for a in shlex.split(cmd)]
    busy = cpu_busy()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}: {proc.stderr[-400:]}")
    size = os.path.getsize(out) if os.path.exists(out) else 0
    if os.path.exists(out):
        os.remove(out)
    return {"wall_s": wall, "user_s": after.ru_utime - before.ru_utime,
            "sys_s": after.ru_stime - before.ru_stime, "busy_before": busy, "out_bytes": size}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arm", action="append", required=True, help="label:command with {out}")
    ap.add_argument("--reference", action="append", default=[], help="label of a reference arm")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--max-busy", type=float, default=0.25)
    ap.add_argument("--scratch", default=None, help="folder for the outputs (default: a temp dir)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    arms = [tuple(x.split(":", 1)) for x in a.arm]
    runs = {label: [] for label, _ in arms}
    with tempfile.TemporaryDirectory(dir=a.scratch) as scratch:
        for p in range(a.passes):
            for i in range(len(arms)):
                label, cmd = arms[(p + i) % len(arms)]
                r = run_arm(cmd, scratch)
                r["pass"], r["contended"] = p, r["busy_before"] > a.max_busy
                runs[label].append(r)
                print(f"pass {p} {label}: {r['wall_s']:.1f} s wall, {r['user_s']:.1f} s user, busy {r['busy_before']:.2f}",
                      file=sys.stderr)
    summary = []
    for label, cmd in arms:
        w = [r["wall_s"] for r in runs[label]]
        summary.append({"label": label, "command": cmd, "wall_median_s": statistics.median(w),
                        "wall_min_s": min(w), "wall_max_s": max(w),
                        "user_median_s": statistics.median(r["user_s"] for r in runs[label]),
                        "out_bytes": runs[label][-1]["out_bytes"],
                        "contended_runs": sum(r["contended"] for r in runs[label])})
    by = {s["label"]: s for s in summary}
    ratios = [{"arm": s["label"], "reference": ref, "wall_ratio": s["wall_median_s"] / by[ref]["wall_median_s"]}
              for ref in a.reference for s in summary if s["label"] != ref]
    doc = {"command": " ".join(sys.argv), "passes": a.passes, "summary": summary, "ratios": ratios,
           "runs": runs, "loadavg": open("/proc/loadavg").read().split()[:3],
           "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), ""),
           "nproc": os.cpu_count(), "commit": git_commit(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    for s in summary:
        print(f"{s['label']}: {s['wall_median_s']:.1f} s (min {s['wall_min_s']:.1f}, max {s['wall_max_s']:.1f})")
    for r in ratios:
        print(f"{r['arm']} / {r['reference']}: x{r['wall_ratio']:.2f}")


if __name__ == "__main__":
    main()
