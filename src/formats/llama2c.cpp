// llama2.c legacy checkpoint. After the header the float32 arrays follow in this order:
//   token_embedding_table [vocab, dim]
//   rms_att_weight [L, dim]
//   wq [L, dim, dim]  wk [L, kv_dim, dim]  wv [L, kv_dim, dim]  wo [L, dim, dim]
//   rms_ffn_weight [L, dim]
//   w1 [L, hidden, dim]  w2 [L, dim, hidden]  w3 [L, hidden, dim]
//   rms_final_weight [dim]
//   freq_cis_real [seq_len, head_size/2]  freq_cis_imag [seq_len, head_size/2]  (unused)
//   wcls [vocab, dim]  (only when the header's vocab_size is negative)
#include "formats/llama2c.h"

#include <cstring>

namespace edge {

namespace {

constexpr int32_t kMaxDim = 1 << 16;
constexpr int32_t kMaxLayers = 1024;
constexpr int32_t kMaxVocab = 1 << 22;
constexpr int32_t kMaxSeq = 1 << 22;
constexpr uint32_t kVersionedMagic = 0x616b3432;  // "ak42": the newer llama2.c export

Status check_header(const std::string& path, const Llama2cFile::Header& h) {
  auto bad = [&](const std::string& what) {
    return Status::invalid_format(path + ": bad llama2.c header: " + what);
  };
  auto in = [](int32_t v, int32_t hi) { return v > 0 && v <= hi; };
  if (!in(h.dim, kMaxDim)) return bad("dim " + std::to_string(h.dim));
  if (!in(h.hidden_dim, 16 * kMaxDim)) return bad("hidden_dim " + std::to_string(h.hidden_dim));
  if (!in(h.n_layers, kMaxLayers)) return bad("n_layers " + std::to_string(h.n_layers));
  if (!in(h.n_heads, h.dim)) return bad("n_heads " + std::to_string(h.n_heads));
  if (!in(h.n_kv_heads, h.n_heads))
    return bad("n_kv_heads " + std::to_string(h.n_kv_heads) + " (n_heads " +
               std::to_string(h.n_heads) + ")");
  if (!in(h.vocab_size, kMaxVocab)) return bad("vocab_size " + std::to_string(h.vocab_size));
  if (!in(h.seq_len, kMaxSeq)) return bad("seq_len " + std::to_string(h.seq_len));
  if (h.dim % h.n_heads != 0)
    return bad("n_heads " + std::to_string(h.n_heads) + " does not divide dim " +
               std::to_string(h.dim));
  if (h.n_heads % h.n_kv_heads != 0)
    return bad("n_kv_heads " + std::to_string(h.n_kv_heads) + " does not divide n_heads " +
               std::to_string(h.n_heads));
  if (h.head_size() % 2 != 0)
    return bad("head size " + std::to_string(h.head_size()) + " is odd (RoPE needs pairs)");
  return {};
}

// Float counts of the arrays in file order; all fit in int64 given the header limits.
struct Layout {
  int64_t embd, att_norm, wq, wk, wv, wo, ffn_norm, w1, w2, w3, final_norm, freq, wcls;
  int64_t total() const {
    return embd + att_norm + wq + wk + wv + wo + ffn_norm + w1 + w2 + w3 + final_norm +
           2 * freq + wcls;
  }
};

Layout layout_of(const Llama2cFile::Header& h) {
  const int64_t d = h.dim, hd = h.hidden_dim, L = h.n_layers, v = h.vocab_size;
  const int64_t kv = h.kv_dim();
  Layout l{};
  l.embd = v * d;
  l.att_norm = L * d;
  l.wq = L * d * d;
  l.wk = L * kv * d;
  l.wv = L * kv * d;
  l.wo = L * d * d;
  l.ffn_norm = L * d;
  l.w1 = L * hd * d;
  l.w2 = L * d * hd;
  l.w3 = L * hd * d;
  l.final_norm = d;
  l.freq = static_cast<int64_t>(h.seq_len) * (h.head_size() / 2);
  l.wcls = h.shared_classifier ? 0 : v * d;
  return l;
}

// Hands out consecutive F32 views from the float array that follows the header.
class Slicer {
 public:
  Slicer(const uint8_t* base, TensorSet* set) : p_(base), set_(set) {}
  // n_layers consecutive [shape] tensors named blk.N.<name> (llama2.c stacks layers).
  Status layers(const char* name, int32_t n_layers, std::vector<int64_t> shape) {
    for (int32_t l = 0; l < n_layers; ++l)
      RETURN_IF_ERROR(one("blk." + std::to_string(l) + "." + name, shape));
    return {};
  }
  Status one(const std::string& name, std::vector<int64_t> shape) {
    TensorView v;
    v.name = name;
    v.dtype = DType::F32;
    v.shape = std::move(shape);
    v.data = p_;
    v.nbytes = static_cast<uint64_t>(v.numel()) * 4;
    p_ += v.nbytes;
    return set_->add(std::move(v));
  }
  void skip(int64_t floats) { p_ += floats * 4; }

 private:
  const uint8_t* p_;
  TensorSet* set_;
};

}  // namespace

Expected<Llama2cFile> Llama2cFile::open(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped) return mapped.status();
  return from_mapped(std::move(mapped).value());
}

Expected<Llama2cFile> Llama2cFile::from_mapped(MappedFile file) {
  Llama2cFile f;
  f.map_ = std::make_unique<MappedFile>(std::move(file));
  const MappedFile& m = *f.map_;
  const std::string& path = m.path();
  if (m.size() < kHeaderBytes)
    return Status::invalid_format(path + ": too small for a llama2.c header (" +
                                  std::to_string(m.size()) + " bytes, need 28)");
  int32_t raw[7];
  std::memcpy(raw, m.data(), sizeof(raw));
  if (static_cast<uint32_t>(raw[0]) == kVersionedMagic)
    return Status::unsupported(path + ": versioned llama2.c export (magic ak42) is not supported; "
                               "use the legacy export");
  Header& h = f.header_;
  h.dim = raw[0], h.hidden_dim = raw[1], h.n_layers = raw[2], h.n_heads = raw[3];
  h.n_kv_heads = raw[4], h.seq_len = raw[6];
  h.shared_classifier = raw[5] > 0;
  h.vocab_size = raw[5] == INT32_MIN ? 0 : (raw[5] < 0 ? -raw[5] : raw[5]);
  RETURN_IF_ERROR(check_header(path, h));
  const Layout lay = layout_of(h);
  const uint64_t expected = kHeaderBytes + static_cast<uint64_t>(lay.total()) * 4;
  if (m.size() != expected)
    return Status::invalid_format(
        path + ": size does not match the llama2.c header: expected " + std::to_string(expected) +
        " bytes (" + (h.shared_classifier ? "shared" : "separate") + " classifier), found " +
        std::to_string(m.size()));
  const int64_t d = h.dim, hd = h.hidden_dim, kv = h.kv_dim(), v = h.vocab_size;
  const int32_t L = h.n_layers;
  Slicer s(m.data() + kHeaderBytes, &f.tensors_);
  RETURN_IF_ERROR(s.one("token_embd.weight", {v, d}));
  RETURN_IF_ERROR(s.layers("attn_norm.weight", L, {d}));
  RETURN_IF_ERROR(s.layers("attn_q.weight", L, {d, d}));
  RETURN_IF_ERROR(s.layers("attn_k.weight", L, {kv, d}));
  RETURN_IF_ERROR(s.layers("attn_v.weight", L, {kv, d}));
  RETURN_IF_ERROR(s.layers("attn_output.weight", L, {d, d}));
  RETURN_IF_ERROR(s.layers("ffn_norm.weight", L, {d}));
  RETURN_IF_ERROR(s.layers("ffn_gate.weight", L, {hd, d}));
  RETURN_IF_ERROR(s.layers("ffn_down.weight", L, {d, hd}));
  RETURN_IF_ERROR(s.layers("ffn_up.weight", L, {hd, d}));
  RETURN_IF_ERROR(s.one("output_norm.weight", {d}));
  s.skip(2 * lay.freq);  // freq_cis_real, freq_cis_imag: RoPE is recomputed
  if (!h.shared_classifier) RETURN_IF_ERROR(s.one("output.weight", {v, d}));
  return f;
}

}  // namespace edge
