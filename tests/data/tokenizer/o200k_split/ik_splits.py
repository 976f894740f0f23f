#!/usr/bin/env python3
# Runs the ik_split driver (argv[1]) on strings.json and writes ik_splits.json.
import json
import subprocess
import sys

strings = json.load(open("strings.json", encoding="utf-8"))
data = b"\0".join(s.encode("utf-8") for s in strings) + b"\0"
out = subprocess.run([sys.argv[1]], input=data, capture_output=True, check=True).stdout
records = out.split(b"\0")[:-1]
assert len(records) == len(strings), (len(records), len(strings))
splits = [[p.decode("utf-8") for p in r.split(b"\x01")] if r else [] for r in records]
with open("ik_splits.json", "w", encoding="utf-8") as f:
    json.dump(splits, f, ensure_ascii=True)
    f.write("\n")
