#!/usr/bin/env python3
# Splits each string of strings.json with the o200k pre-tokenizer regex exactly as GPT-OSS's
# tokenizer.json spells it, run by the Python `regex` module (Unicode categories, scoped
# case-insensitive contractions), and writes regex_splits.json: one list of pieces per
# string. Pieces are matches and, Hugging Face "Isolated" style, the gaps between them.
import json
import regex

O200K = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
         r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
         r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def split(text):
    pieces, gap = [], 0
    for m in regex.finditer(O200K, text):
        if m.start() > gap:
            pieces.append(text[gap:m.start()])
        if m.end() > m.start():
            pieces.append(m.group())
        gap = m.end()
    if gap < len(text):
        pieces.append(text[gap:])
    return pieces


def main():
    strings = json.load(open("strings.json", encoding="utf-8"))
    with open("regex_splits.json", "w", encoding="utf-8") as f:
        json.dump([split(s) for s in strings], f, ensure_ascii=True)
        f.write("\n")


if __name__ == "__main__":
    main()
