#!/usr/bin/env python3
"""Summary of the run_ab.py files in this folder -> summary.json (medians and spread per arm).

A run counts as clean when other processes used < 5% of the two cores while it ran
(`during.foreign_cpu_share`); contended runs are listed and left out of the medians. One-thread
tile figures are CPU time of the benchmark thread, so preemption does not enter them; they are
kept from every run, with the foreign share beside them.
"""
import glob
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
CLEAN = 0.05


def spread(v):
    return {"median": round(statistics.median(v), 1), "min": round(min(v), 1),
            "max": round(max(v), 1), "n": len(v)} if v else None


def tile_summary(files):
    out = {}
    for f in files:
        d = json.load(open(f))
        for r in d["runs"]:
            share = r["during"]["foreign_cpu_share"]
            for x in r["results"]:
                key = f"{x['kind']}_g{x['group']}_M{x['M']}_K{x['K']}_N{x['N']}_t{x['threads']}"
                slot = out.setdefault(key, {}).setdefault(r["arm"], {"all": [], "clean": [],
                                                                      "pct": [], "peak": []})
                slot["all"].append((x["tile_gops_median"], share))
                if x["threads"] == 1 or share < CLEAN:
                    slot["clean"].append(x["tile_gops_median"])
                    slot["pct"].append(x["pct_of_measured_peak"])
                slot["peak"].append(x["peak_gops_per_core"])
    res = {}
    for key, arms in out.items():
        res[key] = {arm: {"tile_gops": spread(s["clean"]), "pct_of_measured_peak": spread(s["pct"]),
                          "peak_gops_per_core": spread(s["peak"]),
                          "every_run_gops_and_foreign_share": s["all"]}
                    for arm, s in arms.items()}
        b, n = res[key].get("base", {}).get("tile_gops"), res[key].get("new", {}).get("tile_gops")
        if b and n:
            res[key]["ratio_new_over_base"] = round(n["median"] / b["median"], 2)
    return res


def pp_summary(files):
    arms = {}
    for f in files:
        d = json.load(open(f))
        for r in d["runs"]:
            share = r["during"]["foreign_cpu_share"]
            for x in r["results"]:
                run_median = statistics.median(x["samples_ts"])
                e = x["provenance"]["engine"]
                a = arms.setdefault(r["arm"], {"clean": [], "all": [], "provenance": set()})
                a["all"].append((round(run_median, 1), share, os.path.basename(f), r["pass"]))
                if share < CLEAN:
                    a["clean"].append(run_median)
                a["provenance"].add(json.dumps({
                    "commit": x["build_commit"], "kernel_path": e["kernel_path"],
                    "weight_types": sorted(e["weight_types"]),
                    "capped_by": x["provenance"].get("cpu_features_capped_by"),
                    "n_threads": x["n_threads"], "n_prompt": x["n_prompt"]}))
    res = {arm: {"pp512_ts_clean": spread(a["clean"]), "every_run": a["all"],
                 "provenance": [json.loads(p) for p in sorted(a["provenance"])]}
           for arm, a in arms.items()}
    if res.get("base", {}).get("pp512_ts_clean") and res.get("new", {}).get("pp512_ts_clean"):
        res["ratio_new_over_base"] = round(res["new"]["pp512_ts_clean"]["median"] /
                                           res["base"]["pp512_ts_clean"]["median"], 2)
    return res


def main():
    tiles = sorted(glob.glob(os.path.join(HERE, "tile_*.json")))
    pps = sorted(glob.glob(os.path.join(HERE, "pp512_*.json")))
    summary = {"clean_rule": f"foreign_cpu_share < {CLEAN}", "tile": tile_summary(tiles),
               "pp512": pp_summary(pps), "files": [os.path.basename(f) for f in tiles + pps]}
    with open(os.path.join(HERE, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
