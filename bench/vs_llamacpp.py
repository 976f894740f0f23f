#!/usr/bin/env python3
"""Side-by-side pp/tg throughput of edge-infer and llama.cpp's llama-bench (MEASURING.md):
arms interleaved, pass p starts at arm (p-1) mod n, medians and spread per arm, ratios
computed within this one run, and a pre-flight that labels passes taken under load.

  bench/vs_llamacpp.py --llama-bench PATH --edge build/release/edge-infer \
      --arm llama:q4_0:MODEL.gguf --arm edge:q4_0:MODEL.gguf --arm edge:w4a8:PACKED.gguf \
      -p 512 -n 128 -t 2 --passes 3 --out bench/results/NAME.json

Each arm is runner:label:model; runner is llama, ik (the --ik-bench binary, ik_llama.cpp's
llama-bench, run with -rtr 1: run-time repacking, its fastest CPU path), edge (the --edge
binary) or edge@PATH (another edge-infer binary, e.g. a build of the previous commit for a
before/after comparison in the same interleaved run). Ratios are reported for every edge arm
against every llama and ik arm; edge tg records carry decode's fraction of the bandwidth
ceiling measured in the same run. llama.cpp and ik_llama.cpp are never part of this
repository: build them elsewhere."""
import argparse, json, os, statistics, subprocess, sys, time


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def cpu_busy(seconds=0.5):
    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]
    t0, i0 = snap(); time.sleep(seconds); t1, i1 = snap()
    return 1.0 - (i1 - i0) / max(1, t1 - t0)


def run_arm(arm, a):
    runner, label, model = arm
    if runner in ("llama", "ik"):
        binary = a.llama_bench if runner == "llama" else a.ik_bench
        cmd = [binary, "-m", model, "-p", str(a.p), "-n", str(a.n), "-r", str(a.r), "-t", str(a.t), "-o", "json"]
        if runner == "ik":
            cmd += ["-rtr", "1"]
    else:
        binary = runner[len("edge@"):] if runner.startswith("edge@") else a.edge
        cmd = [binary, "bench", "-m", model, "-p", str(a.p), "-n", str(a.n), "-r", str(a.r), "-t", str(a.t), "-o", "json"]
    busy = cpu_busy()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    recs = json.loads(out[out.index("["):])
    res = {"busy_before": busy, "cmd": " ".join(cmd)}
    for r in recs:
        key = "pp" if r["n_prompt"] > 0 else "tg"
        res[key] = r["avg_ts"]
        if runner.startswith("edge"):
            res["provenance"] = r.get("provenance")
            if key == "tg" and "roofline" in r:
                res["tg_fraction_of_ceiling"] = r["roofline"]["fraction_of_ceiling"]
                res["tg_bytes_per_token"] = r["roofline"]["bytes_per_token"]
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-bench", required=True)
    ap.add_argument("--ik-bench", help="ik_llama.cpp's llama-bench (for ik arms)")
    ap.add_argument("--edge", required=True)
    ap.add_argument("--arm", action="append", required=True)
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-r", type=int, default=3)
    ap.add_argument("-t", type=int, default=2)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--max-busy", type=float, default=0.25, help="label passes started above this CPU use")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    arms = [tuple(x.split(":", 2)) for x in a.arm]
    results = {i: [] for i in range(len(arms))}
    for p in range(a.passes):
        order = [(p + i) % len(arms) for i in range(len(arms))]
        for i in order:
            r = run_arm(arms[i], a)
            r["pass"] = p
            r["contended"] = r["busy_before"] > a.max_busy
            results[i].append(r)
            print(f"pass {p} {arms[i][0]}:{arms[i][1]} pp={r.get('pp', 0):.2f} tg={r.get('tg', 0):.2f} busy={r['busy_before']:.2f}", file=sys.stderr)
    summary = []
    for i, arm in enumerate(arms):
        s = {"runner": arm[0], "label": arm[1], "model": arm[2]}
        for k in ("pp", "tg"):
            v = [r[k] for r in results[i] if k in r]
            s[k + "_median"] = statistics.median(v)
            s[k + "_min"], s[k + "_max"] = min(v), max(v)
        f = [r["tg_fraction_of_ceiling"] for r in results[i] if "tg_fraction_of_ceiling" in r]
        if f:
            s["tg_fraction_of_ceiling_median"] = statistics.median(f)
        s["contended_passes"] = sum(r["contended"] for r in results[i])
        summary.append(s)
    ratios = []
    for e in summary:
        if not e["runner"].startswith("edge"):
            continue
        for l in summary:
            if l["runner"] not in ("llama", "ik"):
                continue
            ratios.append({"edge": e["label"], "llama": l["label"], "against": l["runner"],
                           "pp_ratio": e["pp_median"] / l["pp_median"],
                           "tg_ratio": e["tg_median"] / l["tg_median"]})
    doc = {"command": " ".join(sys.argv), "p": a.p, "n": a.n, "r": a.r, "threads": a.t,
           "passes": a.passes, "summary": summary, "ratios": ratios, "runs": results,
           "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    for r in ratios:
        print(f"{r['edge']} vs {r['against']} {r['llama']}: pp x{r['pp_ratio']:.2f}  tg x{r['tg_ratio']:.2f}")
    for s in summary:
        if "tg_fraction_of_ceiling_median" in s:
            print(f"{s['label']}: decode at {100 * s['tg_fraction_of_ceiling_median']:.1f}% of the ceiling")


if __name__ == "__main__":
    main()
