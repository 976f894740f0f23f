// Regex pre-tokenisation (PCRE2, UTF + UCP) and UTF-8 helpers.
#include "tokenizer/pretokenize.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <cstdlib>
#include <map>

namespace edge {

int utf8_seq_len(uint8_t c) {
  if (c < 0x80) return 1;
  if (c < 0xC2) return 0;  // continuation byte or overlong lead
  if (c < 0xE0) return 2;
  if (c < 0xF0) return 3;
  if (c < 0xF5) return 4;
  return 0;
}

namespace {

// Valid range of the second byte after a lead (excludes overlongs, surrogates, > U+10FFFF).
bool second_byte_ok(uint8_t lead, uint8_t b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
  }
}

// 0: invalid at `i`; >0: length of a complete valid sequence; <0: valid but incomplete
// (that many bytes present).
int classify(std::string_view s, size_t i) {
  const uint8_t lead = static_cast<uint8_t>(s[i]);
  const int len = utf8_seq_len(lead);
  if (len <= 1) return len;
  for (int k = 1; k < len; ++k) {
    if (i + k >= s.size()) return -k;
    const uint8_t b = static_cast<uint8_t>(s[i + k]);
    const bool ok = k == 1 ? second_byte_ok(lead, b) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return 0;
  }
  return len;
}

const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

std::vector<std::string_view> utf8_chars(std::string_view s) {
  std::vector<std::string_view> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const int c = classify(s, i);
    const size_t n = c > 0 ? static_cast<size_t>(c) : 1;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

size_t utf8_sanitize(std::string_view in, bool final, std::string& out) {
  size_t i = 0;
  while (i < in.size()) {
    const int c = classify(in, i);
    if (c > 0) {
      out.append(in.substr(i, c));
      i += c;
    } else if (c < 0 && !final) {
      break;  // hold back: the rest of the character may come with the next token
    } else {
      out.append(kReplacement);
      i += c < 0 ? static_cast<size_t>(-c) : 1;
    }
  }
  return i;
}

std::string utf8_nfc(std::string_view s) {
  bool ascii = true;
  for (char ch : s) ascii = ascii && static_cast<uint8_t>(ch) < 0x80;
  if (ascii) return std::string(s);
  utf8proc_uint8_t* res = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                          static_cast<utf8proc_ssize_t>(s.size()), &res,
                                          static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0 || res == nullptr) return std::string(s);
  std::string out(reinterpret_cast<const char*>(res), static_cast<size_t>(n));
  std::free(res);
  return out;
}

namespace {

// Split regexes per pre-tokenizer name, as the reference tokenizers define them. The
// contraction alternatives are spelled with explicit case classes instead of (?i:...)
// so Unicode case folding (e.g. U+017F matching "s") cannot widen them.
const char kGpt2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char kContractions[] = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
const char kContractionsHf[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
const char kLlama3Tail[] =
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char kQwen2Tail[] =
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// o200k (GPT-4o, GPT-OSS, Llama-4): letter runs split by case with real Unicode categories.
// A word is an optional lead character, then upper/title/modifier/other letters or marks,
// then lower/modifier/other letters or marks (first alternative: "Hello", "über", "e" +
// U+0301); or a run of capitals with optional lower case after it (second: "HTML",
// "ÉCOLE"); either may end in a contraction. Numbers go in groups of up to three digits;
// a punctuation run takes the newlines and slashes right after it. llama.cpp runs this
// regex through std::regex on a "collapsed" text where every non-ASCII letter is one
// placeholder byte, so it loses the case of non-ASCII letters and does not count marks as
// letters; we follow the tokenizer.json regex (tests/data/tokenizer/o200k_split/README.md
// says where the two differ).
const char kO200kUpper[] = "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]";
const char kO200kLower[] = "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]";
const char kO200kLead[] = "[^\\r\\n\\p{L}\\p{N}]?";
const char kO200kTail[] =
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

std::string o200k_regex(const std::string& contr) {
  const std::string lead = kO200kLead, upper = kO200kUpper, lower = kO200kLower;
  return lead + upper + "*" + lower + "+" + contr + "?|" + lead + upper + "+" + lower + "*" +
         contr + "?" + kO200kTail;
}

// " ?[^(\s|.,!?…。，、।۔،)]+" (BLOOM family), non-ASCII escaped.
const char kBloom[] = " ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{0964}\\x{06D4}\\x{060C})]+";
const char kCjk[] = "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+";
// Original code points (some are NFC singletons, e.g. U+1F7D, U+2126, U+212A), escaped
// so no editor or tool can normalise them into an out-of-order range.
const char kDeepseekLlmLatin[] =
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-"
    "\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}"
    "\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}"
    "\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}"
    "\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}"
    "\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}"
    "\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}"
    "\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}"
    "\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}"
    "\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-"
    "\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}"
    "\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}"
    "\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}"
    "\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-"
    "\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+";

std::vector<std::string> regexes_for(const std::string& pre, bool hf_spelling) {
  const std::string contr = hf_spelling ? kContractionsHf : kContractions;
  // llama.cpp's fallback for GGUFs without a known pre-tokenizer.
  if (pre == "default") return {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"};
  if (pre == "gpt-2" || pre == "gpt2" || pre == "phi-2" || pre == "roberta-bpe" || pre == "mpt" || pre == "olmo" ||
      pre == "jais" || pre == "jina-es" || pre == "jina-de" || pre == "jina-v1-en" || pre == "jina-v2-es" ||
      pre == "jina-v2-de" || pre == "jina-v2-code")
    return {kGpt2};
  if (pre == "falcon") return {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"};
  if (pre == "llama3" || pre == "llama-bpe" || pre == "llama-v3" || pre == "falcon3" || pre == "pixtral" ||
      pre == "smaug-bpe" || pre == "dbrx" || pre == "chatglm-bpe")
    return {contr + kLlama3Tail};
  if (pre == "gpt-4o" || pre == "llama4" || pre == "kanana2" || pre == "minimax-m2")
    return {o200k_regex(contr)};
  if (pre == "bloom" || pre == "poro-chat" || pre == "gpt3-finnish") return {kBloom};
  if (pre == "viking") return {kBloom, "\\p{N}"};
  if (pre == "qwen2" || pre == "deepseek-r1-qwen" || pre == "stablelm2" || pre == "megrez" || pre == "qwen3")
    return {contr + kQwen2Tail};
  if (pre == "deepseek-coder") return {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"};
  if (pre == "deepseek-llm")
    return {"[\r\n]", kDeepseekLlmLatin,
            "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+", "\\s+$",
            kCjk, "\\p{N}+"};
  if (pre == "starcoder" || pre == "refact" || pre == "command-r" || pre == "smollm" || pre == "codeshell")
    return {"\\p{N}", kGpt2};
  return {};
}

}  // namespace

std::vector<std::string> pretokenizer_regexes(const std::string& pre) { return regexes_for(pre, false); }

std::string pretokenizer_name_for(const std::vector<std::string>& regexes) {
  // Canonical name per distinct regex list (the first alias above).
  static const char* kNames[] = {"gpt-2",        "llama3",    "qwen2",   "deepseek-coder",
                                 "deepseek-llm", "starcoder", "default", "falcon",
                                 "bloom",        "viking",    "gpt-4o"};
  for (const char* name : kNames) {
    if (regexes == regexes_for(name, false) || regexes == regexes_for(name, true)) return name;
  }
  return "";
}

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { if (code) pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

Expected<PreTokenizer> PreTokenizer::compile(const std::vector<std::string>& patterns) {
  PreTokenizer pt;
  for (const std::string& p : patterns) {
    int err = 0;
    PCRE2_SIZE err_off = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &err_off, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof(msg));
      return Status::invalid_argument("pre-tokenizer regex '" + p + "' at offset " + std::to_string(err_off) +
                                      ": " + reinterpret_cast<const char*>(msg));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort: falls back to the interpreter
    auto r = std::make_unique<Regex>();
    r->code = code;
    pt.regexes_.push_back(std::move(r));
  }
  return pt;
}

namespace {

// Isolated split of one piece by one regex: matches and the gaps between them.
void split_one(pcre2_code* code, pcre2_match_data* md, std::string_view piece,
               std::vector<std::string_view>& out) {
  size_t pos = 0, gap_start = 0;
  while (pos < piece.size()) {
    const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(piece.data()), piece.size(), pos, 0, md,
                               nullptr);
    if (rc < 0) break;  // no more matches (or a match error: keep the rest whole)
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t b = ov[0], e = ov[1];
    if (e == b) {  // empty match: step over one character, it stays in the gap
      const int n = utf8_seq_len(static_cast<uint8_t>(piece[b < piece.size() ? b : piece.size() - 1]));
      pos = b + (n > 0 ? n : 1);
      continue;
    }
    if (b > gap_start) out.push_back(piece.substr(gap_start, b - gap_start));
    out.push_back(piece.substr(b, e - b));
    pos = gap_start = e;
  }
  if (gap_start < piece.size()) out.push_back(piece.substr(gap_start));
}

// PCRE2 in UTF mode refuses invalid UTF-8: split the text into valid runs and single
// invalid bytes (which pass through as their own pieces).
std::vector<std::pair<std::string_view, bool>> valid_runs(std::string_view text) {
  std::vector<std::pair<std::string_view, bool>> runs;
  size_t start = 0, i = 0;
  while (i < text.size()) {
    const int c = classify(text, i);
    if (c > 0) { i += c; continue; }
    if (i > start) runs.emplace_back(text.substr(start, i - start), true);
    runs.emplace_back(text.substr(i, 1), false);
    start = ++i;
  }
  if (i > start) runs.emplace_back(text.substr(start, i - start), true);
  return runs;
}

}  // namespace

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  for (const auto& [run, valid] : valid_runs(text)) {
    std::vector<std::string_view> cur{run};
    if (valid) {
      for (const auto& re : regexes_) {
        pcre2_match_data* md = pcre2_match_data_create_from_pattern(re->code, nullptr);
        std::vector<std::string_view> next;
        next.reserve(cur.size() * 2);
        for (std::string_view p : cur) split_one(re->code, md, p, next);
        pcre2_match_data_free(md);
        cur.swap(next);
      }
    }
    for (std::string_view p : cur) if (!p.empty()) pieces.push_back(p);
  }
  return pieces;
}

}  // namespace edge
