#!/usr/bin/env python3
"""Tables the runs of run.sh: per pair and engine, plain and draft decode speeds per rep, the
median of the per-rep ratios, and the drafts' acceptance."""
import glob, json, os, re, statistics, sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))

def edge(path):
    j = json.load(open(path))
    s = j.get("speculative", {})
    return j["timings"]["generate_tokens_per_s"], s.get("drafted"), s.get("accepted")

def lcpp(path):
    t = open(path, errors="replace").read()
    m = re.search(r"decoded\s+\d+ tokens in\s+[\d.]+ seconds, speed:\s+([\d.]+) t/s", t)
    if not m:  # llama-lookup prints its speed the same way; fall back to eval time
        m = re.search(r"eval time =.*?([\d.]+) tokens per second", t)
    drafted = re.search(r"n_drafted\s*=\s*(\d+)", t)
    accepted = re.search(r"n_accept\s*=\s*(\d+)", t)
    return (float(m.group(1)) if m else float("nan"),
            int(drafted.group(1)) if drafted else None, int(accepted.group(1)) if accepted else None)

rows = []
for pair in ["agree_w4a8", "agree_q4_0", "none_w4a8", "none_q4_0"]:
    for eng, read, ext in [("edge-infer", edge, "json"), ("llama.cpp", lcpp, "txt")]:
        tag = "edge" if eng == "edge-infer" else "lcpp"
        reps = sorted(glob.glob(f"{out}/{tag}_plain_{pair}_*.{ext}"))
        if not reps:
            continue
        plain, draft, ratios, acc = [], [], [], []
        for p in reps:
            d = p.replace("_plain_", "_draft_")
            if not os.path.exists(d):
                continue
            a, b = read(p)[0], read(d)
            plain.append(a), draft.append(b[0]), ratios.append(b[0] / a)
            acc.append(f"{b[1]}/{b[2]}")
        rows.append((pair, eng, plain, draft, statistics.median(ratios), acc))

print("| pair | engine | plain t/s | draft t/s | median ratio | drafted/accepted |")
print("| ---- | ------ | --------- | --------- | -----------: | ---------------- |")
for pair, eng, plain, draft, r, acc in rows:
    f = lambda v: " ".join(f"{x:.2f}" for x in v)
    print(f"| {pair} | {eng} | {f(plain)} | {f(draft)} | {r:.3f}x | {', '.join(acc)} |")
