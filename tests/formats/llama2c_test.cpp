// llama2.c checkpoints: the real stories260K file and small synthetic ones.
#include "formats/llama2c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "formats/formats_test_util.h"

namespace edge {
namespace {

using testing_util::Bytes;
using testing_util::TempDir;

float at(const TensorView& v, int64_t i) {
  float x;
  std::memcpy(&x, v.data + i * 4, 4);
  return x;
}

TEST(Llama2c, OpensStories260K) {
  const std::string path = std::string(EDGE_TEST_DATA) + "/stories260K/stories260K.bin";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present";
  auto f = Llama2cFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const auto& h = f->header();
  EXPECT_EQ(h.dim, 64);
  EXPECT_EQ(h.hidden_dim, 172);
  EXPECT_EQ(h.n_layers, 5);
  EXPECT_EQ(h.n_heads, 8);
  EXPECT_EQ(h.n_kv_heads, 4);
  EXPECT_EQ(h.vocab_size, 512);
  EXPECT_EQ(h.seq_len, 512);
  EXPECT_TRUE(h.shared_classifier);
  EXPECT_EQ(h.kv_dim(), 32);
  EXPECT_EQ(h.head_size(), 8);
  const TensorSet& ts = f->tensors();
  EXPECT_EQ(ts.size(), 2u + 9u * 5u);  // embd + final norm + 9 per layer, no output.weight
  EXPECT_EQ(ts.find("output.weight"), nullptr);
  EXPECT_EQ(ts.find("token_embd.weight")->shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(ts.find("blk.4.attn_k.weight")->shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(ts.find("blk.0.ffn_down.weight")->shape, (std::vector<int64_t>{64, 172}));
  EXPECT_EQ(ts.find("blk.0.ffn_up.weight")->shape, (std::vector<int64_t>{172, 64}));
  // The embedding starts right after the 28-byte header; the final norm ends where the
  // two RoPE tables (2 * 512 * 4 floats) begin, which run to the end of the file.
  const auto bytes = testing_util::read_bytes(path);
  const TensorView& embd = *ts.find("token_embd.weight");
  EXPECT_EQ(std::memcmp(embd.data, bytes.data() + 28, embd.nbytes), 0);
  const TensorView& norm = *ts.find("output_norm.weight");
  const uint8_t* base = embd.data - 28;
  EXPECT_EQ(static_cast<size_t>(norm.data + norm.nbytes - base), bytes.size() - 2 * 512 * 4 * 4);
  // RMSNorm weights of a trained model are O(1) and positive-ish; a misplaced slice would
  // land in a matrix with values near zero.
  double sum = 0;
  for (int i = 0; i < 64; ++i) sum += at(norm, i);
  EXPECT_GT(sum / 64, 0.2);
}

// A synthetic checkpoint whose float k holds the value k, so every slice can be located.
struct Synth {
  int32_t dim = 8, hidden = 12, layers = 2, heads = 4, kv_heads = 2, vocab = 10, seq = 3;
  bool shared = false;
  int64_t n_floats() const {
    const int64_t kv = dim / heads * kv_heads, L = layers;
    return vocab * dim + L * dim + L * dim * dim + 2 * L * kv * dim + L * dim * dim + L * dim +
           3 * L * hidden * dim + dim + 2 * seq * (dim / heads / 2) + (shared ? 0 : vocab * dim);
  }
  std::vector<uint8_t> bytes(int64_t extra_floats = 0) const {
    Bytes b;
    b.i32(dim).i32(hidden).i32(layers).i32(heads).i32(kv_heads).i32(shared ? vocab : -vocab).i32(seq);
    for (int64_t k = 0; k < n_floats() + extra_floats; ++k) b.put<float>(static_cast<float>(k));
    return b.data;
  }
};

TEST(Llama2c, SlicesFollowTheFileOrder) {
  TempDir dir;
  Synth s;
  testing_util::write_bytes(dir.file("s.bin"), s.bytes());
  auto f = Llama2cFile::open(dir.file("s.bin"));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_FALSE(f->header().shared_classifier);
  EXPECT_EQ(f->header().vocab_size, 10);
  const TensorSet& ts = f->tensors();
  const int64_t d = 8, kv = 4, hd = 12, L = 2, v = 10;
  // First float of each view, by the layout in llama2c.cpp.
  int64_t k = v * d;  // after token_embd
  EXPECT_EQ(at(*ts.find("blk.0.attn_norm.weight"), 0), k);
  EXPECT_EQ(at(*ts.find("blk.1.attn_norm.weight"), 0), k + d);
  k += L * d;
  EXPECT_EQ(at(*ts.find("blk.1.attn_q.weight"), 0), k + d * d);
  k += L * d * d;
  EXPECT_EQ(at(*ts.find("blk.0.attn_k.weight"), 0), k);
  EXPECT_EQ(ts.find("blk.0.attn_k.weight")->shape, (std::vector<int64_t>{kv, d}));
  k += L * kv * d;
  EXPECT_EQ(at(*ts.find("blk.1.attn_v.weight"), 0), k + kv * d);
  k += L * kv * d;
  EXPECT_EQ(at(*ts.find("blk.0.attn_output.weight"), 0), k);
  k += L * d * d;
  EXPECT_EQ(at(*ts.find("blk.1.ffn_norm.weight"), 3), k + d + 3);
  k += L * d;
  EXPECT_EQ(at(*ts.find("blk.0.ffn_gate.weight"), 0), k);
  k += L * hd * d;
  EXPECT_EQ(at(*ts.find("blk.1.ffn_down.weight"), 0), k + d * hd);
  EXPECT_EQ(ts.find("blk.1.ffn_down.weight")->shape, (std::vector<int64_t>{d, hd}));
  k += L * d * hd;
  EXPECT_EQ(at(*ts.find("blk.0.ffn_up.weight"), 0), k);
  k += L * hd * d;
  EXPECT_EQ(at(*ts.find("output_norm.weight"), 0), k);
  k += d + 2 * 3 * 1;  // RoPE tables: seq 3 x head_size/2 = 1, twice
  const TensorView& out = *ts.find("output.weight");
  EXPECT_EQ(at(out, 0), k);
  EXPECT_EQ(out.shape, (std::vector<int64_t>{v, d}));
  EXPECT_EQ(k + v * d, s.n_floats());
}

void expect_bad(const std::vector<uint8_t>& bytes, std::initializer_list<const char*> parts) {
  TempDir dir;
  testing_util::write_bytes(dir.file("bad.bin"), bytes);
  auto f = Llama2cFile::open(dir.file("bad.bin"));
  ASSERT_FALSE(f.ok());
  const std::string msg = f.status().message();
  EXPECT_NE(msg.find(dir.file("bad.bin")), std::string::npos) << msg;
  for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << p << " in " << msg;
}

TEST(Llama2cBadInput, WrongFileSizeNamesExpectedAndFound) {
  Synth s;
  const uint64_t want = 28 + 4 * static_cast<uint64_t>(s.n_floats());
  const std::string exp = "expected " + std::to_string(want) + " bytes";
  expect_bad(s.bytes(1), {exp.c_str(), ("found " + std::to_string(want + 4)).c_str()});
  expect_bad(s.bytes(-1), {exp.c_str(), ("found " + std::to_string(want - 4)).c_str()});
  // A shared-classifier header over an unshared file: the classifier bytes are extra.
  Synth shared = s;
  shared.shared = true;
  auto b = s.bytes();
  std::memcpy(b.data() + 20, &shared.vocab, 4);
  expect_bad(b, {"expected", "shared classifier"});
}

TEST(Llama2cBadInput, BadHeaders) {
  auto with = [](int field, int32_t value) {
    auto b = Synth().bytes();
    std::memcpy(b.data() + 4 * field, &value, 4);
    return b;
  };
  expect_bad(with(0, 0), {"dim 0"});
  expect_bad(with(0, -8), {"dim -8"});
  expect_bad(with(1, 0), {"hidden_dim"});
  expect_bad(with(2, 100000), {"n_layers 100000"});
  expect_bad(with(3, 3), {"n_heads 3 does not divide dim 8"});
  expect_bad(with(4, 3), {"n_kv_heads 3"});
  expect_bad(with(4, 8), {"n_kv_heads 8"});
  expect_bad(with(5, 0), {"vocab_size"});
  expect_bad(with(5, INT32_MIN), {"vocab_size"});
  expect_bad(with(6, 0), {"seq_len"});
  expect_bad(with(3, 8), {"head size 1 is odd"});
  expect_bad({1, 2, 3}, {"too small"});
  expect_bad(with(0, 0x616b3432), {"ak42"});
}

TEST(Llama2cBadInput, TruncationAtEveryFewBytesIsReported) {
  Synth s;
  const auto full = s.bytes();
  TempDir dir;
  for (size_t cut = 0; cut < full.size(); cut += 3) {
    testing_util::write_bytes(dir.file("cut.bin"), {full.begin(), full.begin() + cut});
    auto f = Llama2cFile::open(dir.file("cut.bin"));
    ASSERT_FALSE(f.ok()) << cut;
  }
}

}  // namespace
}  // namespace edge
