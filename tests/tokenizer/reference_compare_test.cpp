// Token ids identical to the reference implementation (@lenml/tokenizers, a port of
// transformers.js) on the real Qwen3, Llama-3 and Gemma-3 tokenizer.json files, over a
// deterministic set of varied strings. Needs node and tests/node/node_modules
// (`cd tests/node && npm ci`); skipped loudly otherwise.
#include <gtest/gtest.h>

#include "test_support.h"

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "tok_test_util.h"
#include "tokenizer/tokenizer.h"

namespace edge {
namespace {

// Small deterministic generator (no <random>: its distributions differ across libraries).
struct Lcg {
  uint64_t s;
  uint32_t next() { s = s * 6364136223846793005ULL + 1442695040888963407ULL; return static_cast<uint32_t>(s >> 33); }
  size_t below(size_t n) { return next() % n; }
};

std::vector<std::string> make_strings() {
  const std::vector<std::string> fixed = {
      "Hello world", " Hello world", "Hello  world", "hello\n\nworld", "\n", "\n\n\n", "\t\tx", "   ",
      "I'm sure you'll see they've done it. I'D SAY WE'LL", "3.14159 and 1234567890 and 1,000,000",
      "int main() {\n    return 0;\n}\n", "def f(x):\n\treturn x**2  # square\n",
      "for (int i = 0; i < n; ++i) { a[i] += b[i]; }", "<html><body><div class=\"x\">hi</div></body></html>",
      "日本語のテキストです。漢字とかな。", "中文测试：你好，世界！", "한국어 텍스트입니다", "Привет, мир! Как дела?",
      "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "ελληνικά γράμματα", "Ünïcödé àccénts çà et là",
      "e\xCC\x81t\xC3\xA9 cafe\xCC\x81",  // decomposed and composed accents (NFC matters)
      "🤗 emoji 🚀🔥 and 👨‍👩‍👧‍👦 family, flags 🇫🇷🇯🇵", "mixed: abc123def ４５６ ｆｕｌｌ", "$$$ +++ <=> ^^^ ~~~ |||",
      "a\r\nb\rc", "   leading and trailing   ", "tab\there", "...!!!???", "\xC2\xA0non-breaking\xE2\x80\x83space",
      "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "<think>\nhmm\n</think>\n\nanswer",
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhello<|eot_id|>",
      "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n", "<bos>text<eos>", "<|endoftext|>",
      "not special: <|im_start |> <| eot_id|> <start_of_turn", "▁▁already▁marked", "x\n\n\n\n\ny", "    indented code",
      "", " ", "a", "12", "123", "1234", "12345", "1 2 3", "0.5%", "$1,299.99", "2024-01-15T10:30:00Z",
  };
  const std::vector<std::string> atoms = {
      "the", " quick", " brown", " fox", "Hello", "World", "'s", "'ll", "'VE", " ", "  ", "   ", "\n", "\n\n",
      "\t", "\r\n", "123", "4567", "3.14", "-42", "x=y+z;", "{", "}", "()", "[]", "=>", "->", "::", "//", "/*",
      "*/", "#include", "std::vector<int>", "printf(\"%d\\n\", x);", "日本", "語", "中文", "한국", "Привет",
      "мир", "مرحبا", "🤗", "🚀", "👍🏽", "é", "e\xCC\x81", "ñ", "ß", "İ", "ﬁ", "…", "—", "“quoted”", "«»", "¿?",
      "¡!", "@user", "#tag", "http://example.com/path?q=1&r=2", "snake_case", "camelCase", "UPPER",
      "<|im_start|>", "<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<start_of_turn>", "<think>", "</think>",
      "<div>", "</div>", "<0x41>", "▁", "Ġ", "ĉ", "\xE2\x80\x8B", "\xEF\xBB\xBF", "0", "00", "000",
  };
  std::vector<std::string> out = fixed;
  Lcg rng{0x5eedULL};
  while (out.size() < 260) {
    std::string s;
    const size_t n = 1 + rng.below(12);
    for (size_t i = 0; i < n; ++i) s += atoms[rng.below(atoms.size())];
    out.push_back(s);
  }
  return out;
}

bool have_node() { return std::system("node --version > /dev/null 2>&1") == 0; }

// Runs the reference; one JSON array of ids per input string.
std::vector<std::vector<int32_t>> reference_ids(const std::string& name, const std::vector<std::string>& texts,
                                                bool special) {
  std::string path = (std::filesystem::temp_directory_path() / "edge_tok_ref_XXXXXX").string();
  const int fd = mkstemp(path.data());
  EXPECT_GE(fd, 0);
  const std::string body = nlohmann::json(texts).dump();
  EXPECT_EQ(write(fd, body.data(), body.size()), static_cast<ssize_t>(body.size()));
  close(fd);
  const std::string script = std::string(EDGE_SOURCE_DIR) + "/tests/tokenizer/ref_encode.mjs";
  const std::string cmd = "node '" + script + "' '" + testing::node_dir() + "' '" + path + "' " + name +
                          (special ? " 1" : " 0");
  std::vector<std::vector<int32_t>> result;
  FILE* p = popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  std::string out;
  char buf[65536];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  if (p) {
    EXPECT_EQ(pclose(p), 0) << cmd;
  }
  std::remove(path.c_str());
  size_t pos = 0;
  while (pos < out.size()) {
    size_t e = out.find('\n', pos);
    if (e == std::string::npos) e = out.size();
    auto j = nlohmann::json::parse(out.substr(pos, e - pos), nullptr, false);
    if (!j.is_discarded()) result.push_back(j.get<std::vector<int32_t>>());
    pos = e + 1;
  }
  return result;
}

void compare(const std::string& name) {
  const std::string dir = testing::lenml_model_dir(name);
  if (!have_node() || !testing::file_exists(dir + "/tokenizer.json") ||
      !testing::file_exists(testing::node_dir() + "/node_modules/@lenml/tokenizers/package.json")) {
    EDGE_SKIP_UNLESS_REQUIRED("\n\n*** REFERENCE TOKENIZER COMPARISON SKIPPED: node or tests/node/node_modules is "
                    "missing. Run `cd tests/node && npm ci`. ***\n");
  }
  const auto* cached = testing::cached_lenml_tokenizer(name);
  ASSERT_NE(cached, nullptr);
  ASSERT_TRUE(cached->ok()) << cached->status().to_string();
  const Tokenizer* tok = &cached->value();
  const auto texts = make_strings();
  ASSERT_GE(texts.size(), 200u);
  for (bool special : {false, true}) {
    const auto ref = reference_ids(name, texts, special);
    ASSERT_EQ(ref.size(), texts.size()) << "reference output incomplete for " << name;
    size_t total_ids = 0;
    for (const auto& r : ref) total_ids += r.size();
    EXPECT_GT(total_ids, 2000u) << "reference produced suspiciously few ids";
    int mismatches = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      const auto got = tok->encode(texts[i], /*add_special=*/special, /*parse_special=*/true);
      if (got != ref[i] && ++mismatches <= 10) {
        ADD_FAILURE() << name << (special ? " (with specials)" : "") << " mismatch on ["
                      << texts[i] << "]\n ours: " << nlohmann::json(got).dump()
                      << "\n  ref: " << nlohmann::json(ref[i]).dump();
      }
    }
    EXPECT_EQ(mismatches, 0) << name;
  }
}

TEST(ReferenceCompare, Qwen3) { compare("qwen3"); }
TEST(ReferenceCompare, Llama3) { compare("llama3"); }
TEST(ReferenceCompare, Gemma3) { compare("gemma3"); }

}  // namespace
}  // namespace edge
