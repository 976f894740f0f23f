#!/usr/bin/env python3
"""Time to first token of a repeated system prompt: prefix-cache hit against miss, one server.

Each round sends, one after the other, two streaming /v1/completions requests (token ids,
greedy, max_tokens 1, nothing else running):
  shared: the same SYSTEM ids, then a user part never sent before: the prefix cache can
          serve SYSTEM (on a sliding-window model only where its window is still cached);
  unique: SYSTEM ids of the same length never sent before, then a user part: nothing to
          reuse, so TTFT is the whole prefill, what every request cost without the cache.
The arms alternate and swap order every round. The report has per arm the TTFT of every
round, the median and the spread, the server's prefix-cache counters from /metrics before
and after, /proc/loadavg before and after (other processes on the machine), nproc, the git
commit and the command.

  bench/prefix_ttft.py --server "build/release/edge-infer serve -m M.gguf --port {port} -t 2" \\
      --vocab 32000 --system-tokens 1000 --user-tokens 24 --rounds 12 --out DIR/ttft.json
"""
import argparse, http.client, json, os, random, shlex, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_bench  # noqa: E402  (free_port, wait_ready, model_id, one_request, stop_server)


def metrics(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    out = {}
    for line in c.getresponse().read().decode().splitlines():
        if line.startswith("edge_prefix_cache_"):
            name, value = line.split()
            out[name] = float(value)
    return out


def ttft_ms(port, ids):
    res = []
    serve_bench.one_request(port, ids, 1, 1, res)
    r = res[0]
    if "error" in r or not r["stamps"]:
        raise RuntimeError("request failed: %r" % r)
    return (r["stamps"][0] - r["t0"]) * 1000


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True, help="server command with {port}")
    ap.add_argument("--vocab", type=int, required=True, help="ids are drawn from [16, vocab)")
    ap.add_argument("--system-tokens", type=int, default=1000)
    ap.add_argument("--user-tokens", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--out")
    a = ap.parse_args()
    rng = random.Random(7)
    draw = lambda n: [rng.randrange(16, a.vocab) for _ in range(n)]
    system = draw(a.system_tokens)
    port = serve_bench.free_port()
    cmd = shlex.split(a.server.replace("{port}", str(port)))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        serve_bench.wait_ready(port, proc)
        serve_bench.MODEL[port] = serve_bench.model_id(port)
        ttft_ms(port, draw(64))  # warm-up (threads, pages of the weights)
        first_ms = ttft_ms(port, system + draw(a.user_tokens))  # fills the cache
        before = {"loadavg": loadavg(), "metrics": metrics(port)}
        arms = {"shared": [], "unique": []}
        for i in range(a.rounds):
            order = ["shared", "unique"] if i % 2 == 0 else ["unique", "shared"]
            for arm in order:
                head = system if arm == "shared" else draw(a.system_tokens)
                arms[arm].append(ttft_ms(port, head + draw(a.user_tokens)))
        after = {"loadavg": loadavg(), "metrics": metrics(port)}
    finally:
        serve_bench.stop_server(proc)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    report = {
        "command": " ".join(cmd), "argv": sys.argv, "nproc": os.cpu_count(), "commit": commit,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "first_request_ttft_ms": first_ms, "before": before, "after": after,
        "arms": {k: {"ttft_ms": v, "median_ms": statistics.median(v), "min_ms": min(v), "max_ms": max(v)}
                 for k, v in arms.items()},
    }
    report["speedup_median"] = report["arms"]["unique"]["median_ms"] / report["arms"]["shared"]["median_ms"]
    text = json.dumps(report, indent=1)
    if a.out:
        os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
        with open(a.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
