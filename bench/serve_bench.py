#!/usr/bin/env python3
"""Serving latency and throughput of OpenAI-compatible servers, side by side (MEASURING.md):
for each concurrency level, every arm (a server command) is started, warmed up and given the
same streaming /v1/completions requests; arms are interleaved and rotated per pass; the
report has, per arm and level, medians over passes of aggregate throughput (generated tokens
per second), TTFT p50/p99 and inter-token latency p50/p99, and the ratios edge/llama.

  bench/serve_bench.py --arm edge:"build/release/edge-infer serve -m M.gguf --port {port} -t 2" \
      --arm llama:"/path/llama-server -m M.gguf --port {port} -t 2 -c 4096 -np 4" \
      --concurrency 1,2,4 --requests 8 --max-tokens 64 --passes 3 --out bench/results/X.json

Token timing comes from SSE chunks (one chunk per generated token in both servers; chunks
with empty text still count). Only the Python standard library is used. llama.cpp is never
part of this repository: build it elsewhere."""
import argparse, http.client, json, os, shlex, socket, statistics, subprocess, sys, threading, time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_ready(port, proc, timeout=300):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError("server exited with %d" % proc.returncode)
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return time.time() - t0
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("server not ready after %ds" % timeout)


def stop_server(proc):
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def model_id(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/v1/models")
    return json.loads(c.getresponse().read())["data"][0]["id"]


MODEL = {}
UNIQUE = [False]
LEVEL = [0]


def one_request(port, prompt, max_tokens, seed, out):
    body = json.dumps({"model": MODEL.get(port, "m"), "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                       "stream": True, "seed": seed, "ignore_eos": True})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t0 = time.perf_counter()
    c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        out.append({"error": r.status, "body": r.read()[:300].decode(errors="replace")})
        return
    stamps = []
    buf = b""
    while True:
        line = r.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            break
        try:
            j = json.loads(data)
        except ValueError:
            continue
        if j.get("choices"):
            stamps.append(time.perf_counter())
    out.append({"t0": t0, "stamps": stamps, "end": time.perf_counter()})


def run_level(port, conc, n_requests, prompt, max_tokens):
    results, threads = [], []
    sem = threading.Semaphore(conc)

    def worker(i):
        with sem:
            # --unique-prompts: a different first word per request, so no prefix cache
            # (ours or llama-server's slot cache) can serve the prompt: TTFT includes prefill.
            p = ("request %d " % (i + 1000 * LEVEL[0]) + prompt) if UNIQUE[0] else prompt
            one_request(port, p, max_tokens, 1000 + i, results)

    t0 = time.perf_counter()
    for i in range(n_requests):
        th = threading.Thread(target=worker, args=(i,))
        th.start()
        threads.append(th)
    for th in threads:
        th.join()
    wall = time.perf_counter() - t0
    errors = [r for r in results if "error" in r]
    ok = [r for r in results if "error" not in r and r["stamps"]]
    ttft = sorted((r["stamps"][0] - r["t0"]) * 1000 for r in ok)
    itl = sorted((b - a) * 1000 for r in ok for a, b in zip(r["stamps"], r["stamps"][1:]))
    toks = sum(len(r["stamps"]) for r in ok)

    def pct(v, q):
        return v[min(len(v) - 1, int(q * len(v)))] if v else None

    return {"throughput_tok_s": toks / wall, "tokens": toks, "wall_s": wall, "errors": len(errors),
            "error_samples": errors[:2], "ttft_ms_p50": pct(ttft, 0.5), "ttft_ms_p99": pct(ttft, 0.99),
            "itl_ms_p50": pct(itl, 0.5), "itl_ms_p99": pct(itl, 0.99)}


def run_arm(label, cmd_tpl, levels, a, prompt):
    port = free_port()
    cmd = shlex.split(cmd_tpl.replace("{port}", str(port)))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ready = wait_ready(port, proc)
        MODEL[port] = model_id(port)
        one_request(port, prompt, 4, 1, [])  # warm-up
        out = {"ready_s": ready, "cmd": " ".join(cmd)}
        for conc in levels:
            LEVEL[0] += 1
            out["c%d" % conc] = run_level(port, conc, max(a.requests, conc), prompt, a.max_tokens)
        return out
    finally:
        stop_server(proc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arm", action="append", required=True, help="label:command with {port}")
    ap.add_argument("--concurrency", default="1,2,4")
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--prompt-words", type=int, default=100)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--unique-prompts", action="store_true")
    ap.add_argument("--out")
    a = ap.parse_args()
    UNIQUE[0] = a.unique_prompts
    levels = [int(x) for x in a.concurrency.split(",")]
    arms = [x.split(":", 1) for x in a.arm]
    words = "the quick brown fox jumps over a lazy dog while seven wizards quietly judge".split()
    prompt = " ".join(words[i % len(words)] for i in range(a.prompt_words))
    passes = []
    for p in range(a.passes):
        order = arms[p % len(arms):] + arms[:p % len(arms)]
        res = {}
        for label, cmd in order:
            with open("/proc/loadavg") as f:
                load = float(f.read().split()[0])
            res[label] = run_arm(label, cmd, levels, a, prompt)
            res[label]["loadavg_before"] = load
            print(json.dumps({"pass": p, "arm": label, **{k: v for k, v in res[label].items() if k.startswith("c")}}),
                  file=sys.stderr)
        passes.append(res)
    summary = {}
    for label, _ in arms:
        summary[label] = {}
        for conc in levels:
            key = "c%d" % conc
            s = {}
            for metric in ("throughput_tok_s", "ttft_ms_p50", "ttft_ms_p99", "itl_ms_p50", "itl_ms_p99"):
                vals = [ps[label][key][metric] for ps in passes if ps[label][key][metric] is not None]
                s[metric] = statistics.median(vals) if vals else None
                s[metric + "_spread"] = [min(vals), max(vals)] if vals else None
            summary[label][key] = s
    ratios = {}
    if "edge" in summary and "llama" in summary:
        for conc in levels:
            key = "c%d" % conc
            e, l = summary["edge"][key], summary["llama"][key]
            ratios[key] = {m: (e[m] / l[m] if e[m] and l[m] else None)
                           for m in ("throughput_tok_s", "ttft_ms_p50", "itl_ms_p50", "itl_ms_p99")}
    report = {"summary": summary, "ratios_edge_over_llama": ratios, "passes": passes,
              "args": vars(a), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "host": {"nproc": os.cpu_count(), "uname": " ".join(os.uname())}}
    text = json.dumps(report, indent=2)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    print(json.dumps({"summary": summary, "ratios": ratios}, indent=2))


if __name__ == "__main__":
    main()
