#!/usr/bin/env python3
"""Writes bert_llama_cpp.json: what llama.cpp's llama-embedding gives for tiny random BERT-family
files made by `edge-infer make-model` (bert with CLS and mean pooling, nomic-bert, and a bert
cross-encoder's rank scores), the reference tests/runtime/embedding_reference_test.cpp holds
our encoder engine to.

  python3 bert_llama_cpp.py EDGE_INFER LLAMA_EMBEDDING > bert_llama_cpp.json

Pooled values are printed raw (--embd-normalize -1) with 7 decimals; the tokens from
--verbose-prompt. llama.cpp adds [CLS] ... [SEP] around each prompt; a rank prompt is
"query[SEP][SEP]document" (the [SEP] text parsed as the special token), the layout llama.cpp's
server gives a (query, document) pair.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

EDGE, EMBED = sys.argv[1], sys.argv[2]
LLAMA_CPP = "ggerganov/llama.cpp c392e5094, built outside the tree: cmake -B build -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DCMAKE_BUILD_TYPE=Release; cmake --build build --target llama-embedding"
SIZE = "--layers 2 --dim 64 --heads 4 --vocab 400 --ctx 512 --seed 11"
PROMPTS = ["The cat sat on the mat.", "Phones need a battery!", "hello world", "a little girl played in the park with her friend"]
PAIRS = [["where is the cat?", "the cat sat on the mat"], ["where is the cat?", "phones need a battery"],
         ["is the sky blue?", "the sky is blue on a happy day"]]
MODELS = [("bert-cls", "--arch bert", "cls", PROMPTS), ("bert-mean", "--arch bert --pooling 1", "mean", PROMPTS),
          ("nomic-bert", "--arch nomic-bert", "mean", PROMPTS),
          ("bert-rerank", "--arch bert --rerank", "rank", ["[SEP][SEP]".join(p) for p in PAIRS])]

out = {"what": __doc__.strip().split("\n\n")[0], "reference": LLAMA_CPP, "models": []}
tmp = tempfile.mkdtemp()
for name, flags, pooling, prompts in MODELS:
    path = os.path.join(tmp, name + ".gguf")
    make = f"edge-infer make-model {flags} {SIZE} -o {name}.gguf"
    subprocess.run([EDGE] + make.split()[1:-1] + [path], check=True, capture_output=True)
    cmd = [EMBED, "-m", path, "-p", "\n".join(prompts), "--pooling", pooling, "--embd-normalize", "-1",
           "--embd-output-format", "json", "--verbose-prompt", "-c", "512", "-b", "512", "-t", "2"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=True)
    log = r.stdout  # one stream, in order: the token lines follow their prompt's header
    # --verbose-prompt: per prompt a header, then "   101 -> '[CLS]'" lines.
    toks, cur = [], None
    for line in log.splitlines():
        if re.search(r"main: prompt \d+: '", line):
            cur = []
            toks.append(cur)
        m = re.match(r"^\s*(\d+) -> '", line)
        if m and cur is not None:
            cur.append(int(m.group(1)))
    js = json.loads(log[log.index('{\n  "object"'):log.rindex("}") + 1])
    entries = []
    for i, p in enumerate(prompts):
        emb = js["data"][i]["embedding"]
        e = {"text": p, "tokens": toks[i]}
        if pooling == "rank":
            e["score"] = emb[0]
        else:
            e["embedding"] = emb
        entries.append(e)
    out["models"].append({"name": name, "pooling": pooling, "make_model": make,
                          "command": f"llama-embedding -m {name}.gguf -p \"<the prompts joined by newlines>\" --pooling {pooling} "
                                     "--embd-normalize -1 --embd-output-format json --verbose-prompt -c 512 -b 512 -t 2",
                          "prompts": entries})
print(json.dumps(out, indent=1))
