// quantize_gguf end to end: a small GGUF written with GgufWriter is quantised, reopened
// with the packed-type resolver, and checked tensor by tensor against its source.
#include "quant/quantize_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "core/half.h"
#include "formats/formats_test_util.h"
#include "formats/gguf.h"
#include "formats/llama2c.h"
#include "quant/block_builders.h"
#include "quant/quantize.h"
#include "quant/repack.h"
#include "quant/quantize_file_test_util.h"

namespace edge {
namespace {

using testing_util::TempDir;
using test::gaussian;

// The source model: float matrices of several shapes, a Q4_0 matrix, 1-D and non-weight
// tensors, and assorted metadata.
struct Source {
  std::vector<float> embd = gaussian(37 * 256, 1);    // token_embd.weight [37, 256]
  std::vector<float> norm = gaussian(256, 2);         // blk.0.attn_norm.weight [256]
  std::vector<float> down = gaussian(40 * 96, 3);     // blk.0.ffn_down.weight [40, 96] F16
  std::vector<float> odd = gaussian(8 * 20, 4);       // blk.0.odd.weight [8, 20]
  std::vector<float> out = gaussian(48 * 128, 5);     // output.weight [48, 128] BF16
  std::vector<float> freqs = gaussian(8, 6);          // rope_freqs [8] (not a .weight)
  test::Built q4 = test::build_blocks(DType::Q4_0, 16 * 2, 7);  // blk.0.attn_q.weight [16, 64]
  std::vector<uint16_t> down16, out_bf16;

  Status write(const std::string& path) {
    for (float v : down) down16.push_back(f32_to_f16(v));
    for (float v : out) out_bf16.push_back(f32_to_bf16(v));
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_u32("llama.embedding_length", 256);
    w.set_f32("llama.rope.freq_base", 10000.0f);
    w.set_string_array("tokenizer.ggml.tokens", {"a", "b", "c"});
    RETURN_IF_ERROR(w.add_tensor("token_embd.weight", DType::F32, {37, 256}, embd.data(), embd.size() * 4));
    RETURN_IF_ERROR(w.add_tensor("blk.0.attn_norm.weight", DType::F32, {256}, norm.data(), norm.size() * 4));
    RETURN_IF_ERROR(w.add_tensor("blk.0.ffn_down.weight", DType::F16, {40, 96}, down16.data(), down16.size() * 2));
    RETURN_IF_ERROR(w.add_tensor("blk.0.odd.weight", DType::F32, {8, 20}, odd.data(), odd.size() * 4));
    RETURN_IF_ERROR(w.add_tensor("blk.0.attn_q.weight", DType::Q4_0, {16, 64}, q4.bytes.data(), q4.bytes.size()));
    RETURN_IF_ERROR(w.add_tensor("output.weight", DType::BF16, {48, 128}, out_bf16.data(), out_bf16.size() * 2));
    RETURN_IF_ERROR(w.add_tensor("rope_freqs", DType::F32, {8}, freqs.data(), freqs.size() * 4));
    return w.write(path);
  }
};

// Every row of the packed tensor within the per-group bound of its kind.
void expect_packed_close(const GgufFile& f, const std::string& name, const std::vector<float>& src,
                         const std::string& want_format) {
  const TensorView* t = f.tensors().find(name);
  ASSERT_NE(t, nullptr) << name;
  auto fmt = check_packed_tensor(*t, f.mapped());
  ASSERT_TRUE(fmt.ok()) << fmt.status().to_string();
  EXPECT_EQ(fmt->name(), want_format) << name;
  const int64_t n = t->shape[0], k = t->shape[1];
  if (n % 16 == 0) {
    EXPECT_EQ(t->nbytes, static_cast<uint64_t>(fmt->matrix_bytes(n, k)));
  }
  std::vector<float> row(static_cast<size_t>(k));
  for (int64_t r = 0; r < n; ++r) {
    dequantize_row(*fmt, t->data, n, k, r, row.data());
    for (int64_t g = 0; g < k; g += fmt->group) {
      float amax = 0;
      for (int64_t i = g; i < g + fmt->group; ++i) amax = std::max(amax, std::fabs(src[r * k + i]));
      // Half a step at most, loosely: 4-bit, 6-bit (codes -32..31), 8-bit.
      const float bound = fmt->is_w4()                  ? 0.25f * amax
                          : fmt->kind == PackedKind::kW6 ? amax / 30.0f
                                                         : amax / 254.0f * 1.002f;
      for (int64_t i = g; i < g + fmt->group; ++i)
        ASSERT_LE(std::fabs(row[i] - src[r * k + i]), bound) << name << " row " << r << " col " << i;
    }
  }
}

TEST(QuantizeGguf, W4A16RoundTrip) {
  TempDir dir;
  Source s;
  ASSERT_TRUE(s.write(dir.file("in.gguf")).ok());
  std::vector<QuantizeProgressInfo> calls;
  QuantizeOptions o;  // w4a16, group 128, symmetric
  Status st = quantize_gguf(dir.file("in.gguf"), dir.file("out.gguf"), o,
                            [&](const QuantizeProgressInfo& p) { calls.push_back(p); });
  ASSERT_TRUE(st.ok()) << st.to_string();

  // Without the resolver our type ids are unknown to the reader.
  EXPECT_EQ(GgufFile::open(dir.file("out.gguf")).status().code(), StatusCode::kUnsupported);
  auto f = GgufFile::open(dir.file("out.gguf"), packed_gguf_types());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 64u);

  // Metadata copied, quantisation recorded.
  EXPECT_EQ(f->get_string_or("general.architecture", ""), "llama");
  EXPECT_EQ(f->get_int_or("llama.embedding_length", 0), 256);
  EXPECT_EQ(f->get_float_or("llama.rope.freq_base", 0), 10000.0);
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens")->size(), 3u);
  EXPECT_EQ(f->get_string_or("edge.quant.type", ""), "w4a16");
  EXPECT_EQ(f->get_int_or("edge.quant.group", 0), 128);
  EXPECT_EQ(f->get_bool_or("edge.quant.asym", true), false);
  EXPECT_EQ(f->get_string_or("edge.quant.activations", ""), "f32");

  expect_packed_close(*f, "token_embd.weight", s.embd, "w4s_g128");  // N = 37: padded panel
  std::vector<float> out_f;
  for (uint16_t h : s.out_bf16) out_f.push_back(bf16_to_f32(h));
  expect_packed_close(*f, "output.weight", out_f, "w4s_g128");
  std::vector<float> down_f;
  for (uint16_t h : s.down16) down_f.push_back(f16_to_f32(h));
  expect_packed_close(*f, "blk.0.ffn_down.weight", down_f, "w8_g32");  // K = 96: fallback

  // Q4_0 repacked losslessly.
  const TensorView* q = f->tensors().find("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  auto qf = check_packed_tensor(*q, f->mapped());
  ASSERT_TRUE(qf.ok());
  EXPECT_EQ(qf->name(), "w4s_g32");
  std::vector<float> qrow(64);
  for (int r = 0; r < 16; ++r) {
    dequantize_row(*qf, q->data, 16, 64, r, qrow.data());
    for (int i = 0; i < 64; ++i) ASSERT_EQ(qrow[i], s.q4.values[r * 64 + i]);
  }

  // K = 20: F16; 1-D and non-weight tensors byte-identical.
  const TensorView* odd = f->tensors().find("blk.0.odd.weight");
  ASSERT_NE(odd, nullptr);
  EXPECT_EQ(odd->dtype, DType::F16);
  for (int i = 0; i < 160; ++i) {
    uint16_t h;
    std::memcpy(&h, odd->data + 2 * i, 2);
    ASSERT_EQ(h, f32_to_f16(s.odd[i]));
  }
  for (auto [name, src] : {std::pair{"blk.0.attn_norm.weight", &s.norm}, std::pair{"rope_freqs", &s.freqs}}) {
    const TensorView* t = f->tensors().find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->dtype, DType::F32);
    ASSERT_EQ(t->nbytes, src->size() * 4);
    EXPECT_EQ(std::memcmp(t->data, src->data(), t->nbytes), 0) << name;
  }
  EXPECT_EQ(f->tensors().size(), 7u);

  // Progress: at least once per tensor, never backwards, ending at the totals.
  ASSERT_GE(calls.size(), 7u);
  uint64_t in_bytes = 0;
  {
    auto in = GgufFile::open(dir.file("in.gguf"));
    ASSERT_TRUE(in.ok());
    for (const TensorView& t : in->tensors().all()) in_bytes += t.nbytes;
  }
  int tensor_steps = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].tensors_total, 7);
    EXPECT_EQ(calls[i].bytes_total, in_bytes);
    EXPECT_LE(calls[i].bytes_done, calls[i].bytes_total);
    if (i == 0) continue;
    EXPECT_GE(calls[i].bytes_done, calls[i - 1].bytes_done);
    EXPECT_GE(calls[i].tensors_done, calls[i - 1].tensors_done);
    tensor_steps += calls[i].tensors_done != calls[i - 1].tensors_done;
  }
  EXPECT_EQ(tensor_steps + (calls[0].tensors_done == 1), 7);
  EXPECT_EQ(calls.back().tensors_done, 7);
  EXPECT_EQ(calls.back().bytes_done, in_bytes);
}

TEST(QuantizeGguf, W4A8AsymGroup64) {
  TempDir dir;
  Source s;
  ASSERT_TRUE(s.write(dir.file("in.gguf")).ok());
  QuantizeOptions o;
  o.type = QuantType::kW4A8;
  o.group = 64;
  o.asym = true;
  o.threads = 2;
  ASSERT_TRUE(quantize_gguf(dir.file("in.gguf"), dir.file("out.gguf"), o).ok());
  auto f = GgufFile::open(dir.file("out.gguf"), packed_gguf_types());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->get_string_or("edge.quant.type", ""), "w4a8");
  EXPECT_EQ(f->get_int_or("edge.quant.group", 0), 64);
  EXPECT_TRUE(f->get_bool_or("edge.quant.asym", false));
  EXPECT_EQ(f->get_string_or("edge.quant.activations", ""), "int8");
  expect_packed_close(*f, "token_embd.weight", s.embd, "w4a_g64");
  std::vector<float> down_f;
  for (uint16_t h : s.down16) down_f.push_back(f16_to_f32(h));
  expect_packed_close(*f, "blk.0.ffn_down.weight", down_f, "w8_g32");  // 96 % 64 != 0

  // Quantising an already packed file is refused.
  Status again = quantize_gguf(dir.file("out.gguf"), dir.file("again.gguf"), o);
  EXPECT_EQ(again.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(again.message().find("already packed"), std::string::npos) << again.message();
}

// --output-type: the head (output.weight) alone takes 6- or 8-bit groups of 32, the other
// weights keep --type; the choice is recorded, and f16 (conversion only) refuses it.
TEST(QuantizeGguf, OutputHeadTypeOverridesTheHeadOnly) {
  TempDir dir;
  Source s;
  ASSERT_TRUE(s.write(dir.file("in.gguf")).ok());
  std::vector<float> out_f;
  for (uint16_t h : s.out_bf16) out_f.push_back(bf16_to_f32(h));
  for (auto [head, format] : {std::pair{HeadQuant::kW6, "w6_g32"}, std::pair{HeadQuant::kW8, "w8_g32"},
                              std::pair{HeadQuant::kSame, "w4s_g128"}}) {
    QuantizeOptions o;
    o.type = QuantType::kW4A8;
    o.head = head;
    const std::string out = dir.file(std::string("out-") + head_quant_name(head) + ".gguf");
    ASSERT_TRUE(quantize_gguf(dir.file("in.gguf"), out, o).ok());
    auto f = GgufFile::open(out, packed_gguf_types());
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->get_string_or("edge.quant.output", ""), head_quant_name(head));
    expect_packed_close(*f, "output.weight", out_f, format);
    expect_packed_close(*f, "token_embd.weight", s.embd, "w4s_g128");
  }
  QuantizeOptions f16;
  f16.type = QuantType::kF16;
  f16.head = HeadQuant::kW6;
  Status st = quantize_gguf(dir.file("in.gguf"), dir.file("f16.gguf"), f16);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("--output-type"), std::string::npos) << st.message();
  EXPECT_EQ(head_quant_from_name("w5").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*head_quant_from_name("w6"), HeadQuant::kW6);
}

// A real trained model (stories260K: dim 64, hidden 172) through GGUF and quantize_gguf:
// K = 64 packs as w4s_g64, ffn_down (K = 172, not a multiple of 32) falls back to F16, and
// the real weights come back within the per-group bound with a small overall error.
TEST(QuantizeGguf, RealModelStories260K) {
  const std::string bin = std::string(EDGE_TEST_DATA) + "/stories260K/stories260K.bin";
  if (!std::filesystem::exists(bin)) GTEST_SKIP() << bin << " not present";
  auto model = Llama2cFile::open(bin);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  TempDir dir;
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  for (const TensorView& t : model->tensors().all())
    ASSERT_TRUE(w.add_tensor(t.name, t.dtype, t.shape, t.data, t.nbytes).ok()) << t.name;
  ASSERT_TRUE(w.write(dir.file("f32.gguf")).ok());
  QuantizeOptions o;
  o.group = 64;
  ASSERT_TRUE(quantize_gguf(dir.file("f32.gguf"), dir.file("q.gguf"), o).ok());
  auto q = GgufFile::open(dir.file("q.gguf"), packed_gguf_types());
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  ASSERT_EQ(q->tensors().size(), model->tensors().size());
  double sse = 0, ss = 0;
  for (const TensorView& src : model->tensors().all()) {
    const TensorView* t = q->tensors().find(src.name);
    ASSERT_NE(t, nullptr) << src.name;
    std::vector<float> v(src.numel());
    std::memcpy(v.data(), src.data, src.nbytes);
    if (src.shape.size() == 1) {
      EXPECT_EQ(t->dtype, DType::F32) << src.name;
    } else if (src.shape[1] % 64 != 0) {
      EXPECT_EQ(t->dtype, DType::F16) << src.name;  // ffn_down: K = 172
    } else {
      expect_packed_close(*q, src.name, v, "w4s_g64");
      auto f = check_packed_tensor(*t, q->mapped());
      ASSERT_TRUE(f.ok());
      std::vector<float> y = dequantize_matrix(*f, t->data, src.shape[0], src.shape[1]);
      for (size_t i = 0; i < y.size(); ++i) {
        sse += (y[i] - v[i]) * (y[i] - v[i]);
        ss += v[i] * v[i];
      }
    }
  }
  EXPECT_LT(std::sqrt(sse / ss), 0.12);  // measured 0.102
}

// The reader sizes a packed [N, K] tensor as N rows of groups; with N % 16 != 0 the padded
// last panel lies beyond that, and check_packed_tensor must find it missing in a cut file.
TEST(QuantizeGguf, CheckPackedTensorRefusesMissingPadding) {
  TempDir dir;
  const PackedFormat f{PackedKind::kW4Sym, 32};
  const uint64_t full = static_cast<uint64_t>(f.matrix_bytes(20, 64));  // 2 panels
  GgufWriter w;
  ASSERT_TRUE(w.add_tensor_sized("blk.0.attn_q.weight", packed_dtype(f), {20, 64}, full,
                                 [](uint8_t* dst, uint64_t n) {
                                   std::memset(dst, 0x11, n);
                                   return Status();
                                 }).ok());
  ASSERT_TRUE(w.write(dir.file("p.gguf")).ok());
  auto whole = GgufFile::open(dir.file("p.gguf"), packed_gguf_types());
  ASSERT_TRUE(whole.ok()) << whole.status().to_string();
  const TensorView* t = whole->tensors().find("blk.0.attn_q.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->nbytes, 20u * 2 * (f.group_bytes() / 16));  // the reader's (unpadded) size
  ASSERT_TRUE(check_packed_tensor(*t, whole->mapped()).ok());
  const uint64_t cut = static_cast<uint64_t>(t->data - whole->mapped().data()) + t->nbytes;
  std::vector<uint8_t> bytes = testing_util::read_bytes(dir.file("p.gguf"));
  bytes.resize(cut);
  testing_util::write_bytes(dir.file("cut.gguf"), bytes);
  auto part = GgufFile::open(dir.file("cut.gguf"), packed_gguf_types());
  ASSERT_TRUE(part.ok()) << part.status().to_string();  // the reader cannot tell
  auto st = check_packed_tensor(*part->tensors().find("blk.0.attn_q.weight"), part->mapped());
  EXPECT_EQ(st.status().code(), StatusCode::kInvalidFormat);
  EXPECT_NE(st.status().message().find("blk.0.attn_q.weight"), std::string::npos);
  TensorView one_d = *t;
  one_d.shape = {1280};
  EXPECT_FALSE(check_packed_tensor(one_d, whole->mapped()).ok());
  one_d.dtype = DType::F32;
  EXPECT_EQ(check_packed_tensor(one_d, whole->mapped()).status().code(), StatusCode::kInvalidArgument);
}

// A Q6_K weight becomes a W6 g32 tensor (type id 1009) in the output file: the bytes the
// reader maps are exactly what repack_matrix makes, N = 20 with its padded last panel, and
// the reference kernel reads them back as the repacked values.
TEST(QuantizeGguf, Q6KRoundTripsAsW6) {
  TempDir dir;
  const int64_t n = 20, k = 512;
  test::Built q6 = test::build_blocks(DType::Q6_K, n * k / 256, 9);
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  ASSERT_TRUE(w.add_tensor("blk.0.ffn_down.weight", DType::Q6_K, {n, k}, q6.bytes.data(), q6.bytes.size()).ok());
  ASSERT_TRUE(w.write(dir.file("in.gguf")).ok());
  QuantizeOptions o;
  o.type = QuantType::kW4A8;
  ASSERT_TRUE(quantize_gguf(dir.file("in.gguf"), dir.file("out.gguf"), o).ok());
  auto f = GgufFile::open(dir.file("out.gguf"), packed_gguf_types());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const TensorView* t = f->tensors().find("blk.0.ffn_down.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(static_cast<uint32_t>(t->dtype), 1009u);
  auto fmt = check_packed_tensor(*t, f->mapped());
  ASSERT_TRUE(fmt.ok()) << fmt.status().to_string();
  EXPECT_EQ(fmt->name(), "w6_g32");
  TensorView src{"blk.0.ffn_down.weight", DType::Q6_K, {n, k}, q6.bytes.data(), q6.bytes.size()};
  std::vector<uint8_t> want(static_cast<size_t>(fmt->matrix_bytes(n, k)));
  ASSERT_TRUE(repack_matrix(src, want.data(), want.size()).ok());
  ASSERT_EQ(std::memcmp(t->data, want.data(), want.size()), 0);
  std::vector<float> row(static_cast<size_t>(k));
  for (int64_t r = 0; r < n; ++r) {
    dequantize_row(*fmt, t->data, n, k, r, row.data());
    for (int64_t g = 0; g < k; g += 32) {
      float amax = 0;
      for (int64_t i = g; i < g + 32; ++i) amax = std::max(amax, std::fabs(q6.values[r * k + i]));
      for (int64_t i = g; i < g + 32; ++i)
        ASSERT_LE(std::fabs(row[i] - q6.values[r * k + i]), 3.5f * amax / 32 + 1e-9f) << r << " " << i;
    }
  }
}

TEST(QuantizeGguf, TruncatedQuantisedTensorIsRefused) {
  TempDir dir;
  test::Built q4 = test::build_blocks(DType::Q4_0, 2 * 4, 3);  // [4, 64]
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  ASSERT_TRUE(w.add_tensor("blk.0.attn_v.weight", DType::Q4_0, {4, 64}, q4.bytes.data(), q4.bytes.size()).ok());
  ASSERT_TRUE(w.write(dir.file("in.gguf")).ok());
  std::vector<uint8_t> bytes = testing_util::read_bytes(dir.file("in.gguf"));
  {
    auto in = GgufFile::open(dir.file("in.gguf"));
    ASSERT_TRUE(in.ok());
    const TensorView* t = in->tensors().find("blk.0.attn_v.weight");
    ASSERT_NE(t, nullptr);
    // Cut the file 10 bytes into the tensor's last block.
    bytes.resize(static_cast<size_t>(t->data - in->mapped().data()) + t->nbytes - 10);
  }
  testing_util::write_bytes(dir.file("cut.gguf"), bytes);
  Status st = quantize_gguf(dir.file("cut.gguf"), dir.file("out.gguf"), QuantizeOptions());
  EXPECT_EQ(st.code(), StatusCode::kInvalidFormat);
  EXPECT_NE(st.message().find("blk.0.attn_v.weight"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(dir.file("out.gguf")));
}

TEST(QuantizeGguf, BadOptionsAndMissingInput) {
  TempDir dir;
  Source s;
  ASSERT_TRUE(s.write(dir.file("in.gguf")).ok());
  const std::string out = dir.file("out.gguf");
  QuantizeOptions o;
  o.group = 48;
  Status st = quantize_gguf(dir.file("in.gguf"), out, o);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("group 48"), std::string::npos) << st.message();
  o.group = 0;
  o.type = QuantType::kW8;
  o.asym = true;
  EXPECT_EQ(requested_format(o).status().code(), StatusCode::kInvalidArgument);
  o.asym = false;
  EXPECT_EQ(requested_format(o)->name(), "w8_g32");
  st = quantize_gguf(dir.file("missing.gguf"), out, o);
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.to_string();
  EXPECT_NE(st.message().find("missing.gguf"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
  EXPECT_EQ(*quant_type_from_name("w4a8"), QuantType::kW4A8);
  EXPECT_FALSE(quant_type_from_name("q4").ok());
}

// A weight matrix of an integer type has no float values to quantise: refused by name,
// before anything is written (no OUT, no OUT.tmp).
TEST(QuantizeGguf, NonFloatWeightIsRefusedWithoutOutput) {
  TempDir dir;
  std::vector<int32_t> ints(16 * 64, 3);
  std::vector<float> norm(64, 1.0f);
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  ASSERT_TRUE(w.add_tensor("blk.0.attn_norm.weight", DType::F32, {64}, norm.data(), norm.size() * 4).ok());
  ASSERT_TRUE(w.add_tensor("blk.0.attn_q.weight", DType::I32, {16, 64}, ints.data(), ints.size() * 4).ok());
  ASSERT_TRUE(w.write(dir.file("in.gguf")).ok());
  const std::string out = dir.file("out.gguf");
  Status st = quantize_gguf(dir.file("in.gguf"), out, QuantizeOptions());
  EXPECT_EQ(st.code(), StatusCode::kUnsupported) << st.to_string();
  EXPECT_NE(st.message().find("blk.0.attn_q.weight"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
}

TEST(QuantizeGguf, PlanRefusesUnrepackableBlockWeights) {
  std::vector<uint8_t> bytes(292 * 2, 0);  // Q8_K [2, 256]
  TensorView t{"blk.0.ffn_gate.weight", DType::Q8_K, {2, 256}, bytes.data(), bytes.size()};
  int64_t be = 0, bb = 0;
  ASSERT_TRUE(dtype_block_info(DType::Q8_K, &be, &bb));
  t.nbytes = static_cast<uint64_t>(2 * bb);
  auto p = plan_tensor(t, QuantizeOptions());
  EXPECT_EQ(p.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(p.status().message().find("blk.0.ffn_gate.weight"), std::string::npos);
}

}  // namespace
}  // namespace edge
