// Streaming pre-packed output: GgufWriter's chunked producers, the batch-of-panels
// quantiser and repacker (same bytes as the whole-matrix functions, pieces bounded by a
// few panels), and add_quantized_tensors' row reordering and offsets.
#include "quant/quantize_file_stream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/half.h"
#include "formats/formats_test_util.h"
#include "formats/gguf.h"
#include "quant/block_builders.h"
#include "quant/quantize_file.h"
#include "quant/quantize_file_test_util.h"
#include "quant/repack.h"

namespace edge {
namespace {

using testing_util::TempDir;
using test::gaussian;

// Collects what a producer passes to the sink, and the largest piece.
struct Recorder {
  std::vector<uint8_t> bytes;
  uint64_t calls = 0, largest = 0;
  GgufWriter::ChunkSink sink() {
    return [this](const void* p, uint64_t n) {
      const auto* b = static_cast<const uint8_t*>(p);
      bytes.insert(bytes.end(), b, b + n);
      ++calls;
      largest = std::max(largest, n);
      return Status();
    };
  }
};

TEST(GgufWriterChunked, PiecesAreWrittenInOrder) {
  TempDir dir;
  std::vector<float> v = gaussian(10 * 33, 1);
  GgufWriter w;
  // Pieces of 7 floats (the last shorter): the file holds the concatenation.
  ASSERT_TRUE(w.add_tensor_chunked("a.weight", DType::F32, {10, 33}, v.size() * 4,
                                   [&](const GgufWriter::ChunkSink& sink) {
                                     for (size_t i = 0; i < v.size(); i += 7)
                                       RETURN_IF_ERROR(sink(v.data() + i, std::min<size_t>(7, v.size() - i) * 4));
                                     return Status();
                                   }).ok());
  ASSERT_TRUE(w.add_tensor("b", DType::F32, {4}, v.data(), 16).ok());
  ASSERT_TRUE(w.write(dir.file("c.gguf")).ok());
  auto f = GgufFile::open(dir.file("c.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const TensorView* a = f->tensors().find("a.weight");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->nbytes, v.size() * 4);
  EXPECT_EQ(std::memcmp(a->data, v.data(), a->nbytes), 0);
  EXPECT_EQ(std::memcmp(f->tensors().find("b")->data, v.data(), 16), 0);
}

// A producer that gives too few or too many bytes fails the write, leaving no file.
TEST(GgufWriterChunked, WrongTotalFailsWithoutFile) {
  TempDir dir;
  std::vector<uint8_t> data(64, 1);
  for (uint64_t give : {60u, 68u}) {
    GgufWriter w;
    ASSERT_TRUE(w.add_tensor_chunked("t", DType::I8, {64}, 64, [&](const GgufWriter::ChunkSink& sink) {
                   RETURN_IF_ERROR(sink(data.data(), 32));
                   std::vector<uint8_t> more(give - 32, 2);
                   return sink(more.data(), more.size());
                 }).ok());
    Status st = w.write(dir.file("x.gguf"));
    EXPECT_EQ(st.code(), StatusCode::kInternal) << give;
    EXPECT_NE(st.message().find("'t'"), std::string::npos) << st.message();
    EXPECT_FALSE(std::filesystem::exists(dir.file("x.gguf")));
    EXPECT_FALSE(std::filesystem::exists(dir.file("x.gguf.tmp")));
  }
  GgufWriter w;
  EXPECT_EQ(w.add_tensor_chunked("t", DType::F32, {4}, 15, [](const GgufWriter::ChunkSink&) {
               return Status();
             }).code(), StatusCode::kInvalidArgument);  // F32 [4] is 16 bytes
}

// The streamed quantiser writes exactly quantize_matrix's bytes, in pieces of at most
// threads * kStreamPanelsPerThread panels: the writer never needs a tensor-sized buffer.
TEST(QuantizeStream, SameBytesInBoundedPieces) {
  const int64_t n = 16 * 13 + 5, k = 256;  // a padded last panel
  std::vector<float> m = gaussian(n * k, 2);
  RowSource rows = [&](int64_t r, float* out) {
    std::memcpy(out, m.data() + r * k, k * 4);
    return Status();
  };
  for (PackedFormat f : {PackedFormat{PackedKind::kW4Sym, 128}, PackedFormat{PackedKind::kW4Asym, 64},
                         PackedFormat{PackedKind::kW8, 32}}) {
    std::vector<uint8_t> whole(static_cast<size_t>(f.matrix_bytes(n, k)));
    ASSERT_TRUE(quantize_matrix(f, n, k, rows, whole.data(), whole.size(), 1).ok());
    const int64_t panel_bytes = (k / f.group) * f.group_bytes();
    for (int threads : {1, 3}) {
      Recorder rec;
      std::vector<std::pair<int64_t, int64_t>> done;
      ASSERT_TRUE(quantize_matrix_stream(f, n, k, rows, rec.sink(), threads,
                                         [&](int64_t a, int64_t b) { done.emplace_back(a, b); }).ok());
      EXPECT_EQ(rec.bytes, whole) << f.name() << " threads " << threads;
      EXPECT_LE(rec.largest, static_cast<uint64_t>(threads * kStreamPanelsPerThread * panel_bytes));
      EXPECT_GE(rec.calls, static_cast<uint64_t>((PackedFormat::panels(n) + threads * kStreamPanelsPerThread - 1) /
                                                 (threads * kStreamPanelsPerThread)));
      ASSERT_FALSE(done.empty());
      EXPECT_EQ(done.front().first, 0);
      EXPECT_EQ(done.back().second, PackedFormat::panels(n));
      for (size_t i = 1; i < done.size(); ++i) EXPECT_EQ(done[i].first, done[i - 1].second);
    }
  }
}

TEST(QuantizeStream, RowErrorStopsTheStream) {
  const int64_t n = 100, k = 64;
  RowSource rows = [&](int64_t r, float* out) {
    if (r == 70) return Status::invalid_format("bad row 70");
    for (int64_t i = 0; i < k; ++i) out[i] = 0.01f * static_cast<float>(i);
    return Status();
  };
  Recorder rec;
  Status st = quantize_matrix_stream(PackedFormat{PackedKind::kW4Sym, 64}, n, k, rows, rec.sink(), 2);
  EXPECT_EQ(st.code(), StatusCode::kInvalidFormat);
  EXPECT_NE(st.message().find("bad row 70"), std::string::npos);
}

TEST(QuantizeStream, RepackSameBytes) {
  for (DType t : {DType::Q4_0, DType::Q4_K, DType::Q6_K}) {
    int64_t be = 0, bb = 0;
    ASSERT_TRUE(dtype_block_info(t, &be, &bb));
    const int64_t n = 37, k = be * 2;
    test::Built b = test::build_blocks(t, n * 2, 5);
    TensorView v{"blk.0.ffn_up.weight", t, {n, k}, b.bytes.data(), b.bytes.size()};
    auto f = repack_format(t);
    ASSERT_TRUE(f.ok());
    std::vector<uint8_t> whole(static_cast<size_t>(f->matrix_bytes(n, k)));
    ASSERT_TRUE(repack_matrix(v, whole.data(), whole.size(), 1).ok());
    Recorder rec;
    ASSERT_TRUE(repack_matrix_stream(v, rec.sink(), 2).ok());
    EXPECT_EQ(rec.bytes, whole) << dtype_name(t);
    EXPECT_LE(rec.largest, static_cast<uint64_t>(2 * kStreamPanelsPerThread * (k / f->group) * f->group_bytes()));
  }
}

// Row reordering and offsets, as the HF conversion uses them: output row r is source row
// order[r]; a 1-D tensor with an offset is written as F32 x + offset; BF16 norms as F32.
TEST(AddQuantizedTensors, RowOrderAndOffset) {
  TempDir dir;
  const int64_t n = 32, k = 64;
  std::vector<float> m = gaussian(n * k, 3);
  std::vector<uint16_t> m16;
  for (float x : m) m16.push_back(f32_to_f16(x));
  std::vector<uint16_t> norm = {f32_to_bf16(0.5f), f32_to_bf16(-1.0f), f32_to_bf16(2.0f)};
  std::vector<int64_t> order(n);
  for (int64_t r = 0; r < n; ++r) order[r] = (r * 7) % n;  // 7 is coprime with 32
  std::vector<QuantizeInput> in;
  in.push_back({"blk.0.attn_q.weight", {"q", DType::F32, {n, k}, reinterpret_cast<uint8_t*>(m.data()), m.size() * 4}, order});
  in.push_back({"blk.0.attn_k.weight", {"k", DType::F32, {n, k}, reinterpret_cast<uint8_t*>(m.data()), m.size() * 4}});
  in.push_back({"blk.0.odd", {"o", DType::F16, {n, k}, reinterpret_cast<uint8_t*>(m16.data()), m16.size() * 2}, order});
  in.push_back({"blk.0.attn_norm.weight", {"n", DType::BF16, {3}, reinterpret_cast<uint8_t*>(norm.data()), 6}, {}, 1.0f});
  in.push_back({"output_norm.weight", {"n", DType::BF16, {3}, reinterpret_cast<uint8_t*>(norm.data()), 6}});
  QuantizeOptions o;
  o.type = QuantType::kW8;
  o.threads = 2;
  GgufWriter w;
  ASSERT_TRUE(add_quantized_tensors(w, in, o).ok());
  ASSERT_TRUE(w.write(dir.file("o.gguf"), kPackedFileAlignment).ok());
  auto f = GgufFile::open(dir.file("o.gguf"), packed_gguf_types());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const TensorView* q = f->tensors().find("blk.0.attn_q.weight");
  const TensorView* kk = f->tensors().find("blk.0.attn_k.weight");
  ASSERT_TRUE(q && kk);
  auto fmt = check_packed_tensor(*q, f->mapped());
  ASSERT_TRUE(fmt.ok());
  std::vector<float> a(k), b(k);
  for (int64_t r = 0; r < n; ++r) {  // quantising a row depends only on that row
    dequantize_row(*fmt, q->data, n, k, r, a.data());
    dequantize_row(*fmt, kk->data, n, k, order[r], b.data());
    ASSERT_EQ(a, b) << r;
  }
  const TensorView* odd = f->tensors().find("blk.0.odd");  // not a weight: copied, reordered
  ASSERT_EQ(odd->dtype, DType::F16);
  for (int64_t r = 0; r < n; ++r)
    ASSERT_EQ(std::memcmp(odd->data + r * k * 2, m16.data() + order[r] * k, k * 2), 0) << r;
  for (auto [name, add] : {std::pair{"blk.0.attn_norm.weight", 1.0f}, std::pair{"output_norm.weight", 0.0f}}) {
    const TensorView* t = f->tensors().find(name);
    ASSERT_EQ(t->dtype, DType::F32) << name;
    float v[3];
    std::memcpy(v, t->data, 12);
    EXPECT_EQ(v[0], 0.5f + add);
    EXPECT_EQ(v[1], -1.0f + add);
    EXPECT_EQ(v[2], 2.0f + add);
  }
  // A bad order or an offset on a matrix is refused before anything is added.
  GgufWriter w2;
  in[0].row_order[3] = n;
  EXPECT_EQ(add_quantized_tensors(w2, in, o).code(), StatusCode::kInvalidArgument);
  in[0].row_order[3] = 0;
  in[1].offset = 1.0f;
  EXPECT_EQ(add_quantized_tensors(w2, in, o).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace edge
