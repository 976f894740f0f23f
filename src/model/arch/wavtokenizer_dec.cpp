// WavTokenizer decoder: hyper-parameters, tensor schema and weight binding. The forward
// pass is in wavtokenizer_dec_forward.cpp.
#include "model/arch/wavtokenizer_dec.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/api.h"
#include "model/arch/encoder_common.h"

namespace edge {

namespace {

std::string key(const char* what) {
  return fmt::format("{}.{}", kWavTokenizerArch, what);
}

// A positive integer hparam; the error names the key.
Expected<int64_t> positive(const GgufFile& f, const char* what) {
  auto v = f.get_int(key(what));
  if (!v) return Status(v.status().code(), key(what) + ": " + v.status().message());
  if (*v <= 0 || *v > (int64_t{1} << 31))
    return Status::invalid_format(fmt::format("{} = {}: out of range", key(what), *v));
  return *v;
}

Status check_hparams(const WavTokenizerHparams& h) {
  if (h.n_out < 6 || h.n_out % 2)
    return Status::invalid_format(fmt::format("{} = {}: the head must be n_fft + 2 (even)",
                                              key("embedding_length"), h.n_out));
  if (h.n_embd % h.n_groups)
    return Status::invalid_format(fmt::format("{} = {} does not divide {} = {}",
                                              key("attention.group_norm_groups"), h.n_groups,
                                              key("posnet.embedding_length"), h.n_embd));
  if (h.hop <= 0 || h.hop > h.n_fft || (h.n_fft - h.hop) % 2)
    return Status::invalid_format(
        fmt::format("{} = {}: must be in (0, n_fft = {}], n_fft - hop even", key("edge.hop_length"),
                    h.hop, h.n_fft));
  return Status();
}

}  // namespace

Expected<WavTokenizerHparams> read_wavtokenizer_hparams(const GgufFile& f) {
  const std::string arch = f.get_string_or("general.architecture", "");
  if (arch != kWavTokenizerArch)
    return Status::unsupported(
        fmt::format("general.architecture '{}': not {}", arch, kWavTokenizerArch));
  WavTokenizerHparams h;
  ASSIGN_OR_RETURN(h.n_out, positive(f, "embedding_length"));
  ASSIGN_OR_RETURN(h.n_features, positive(f, "features_length"));
  ASSIGN_OR_RETURN(h.n_ff, positive(f, "feed_forward_length"));
  ASSIGN_OR_RETURN(h.n_embd, positive(f, "posnet.embedding_length"));
  ASSIGN_OR_RETURN(int64_t posnet_blocks, positive(f, "posnet.block_count"));
  ASSIGN_OR_RETURN(int64_t convnext_embd, positive(f, "convnext.embedding_length"));
  ASSIGN_OR_RETURN(int64_t convnext_blocks, positive(f, "convnext.block_count"));
  ASSIGN_OR_RETURN(int64_t groups, positive(f, "attention.group_norm_groups"));
  if (posnet_blocks != kWavTokenizerPosnetBlocks)
    return Status::unsupported(fmt::format("{} = {}: the pos-net layout has {} blocks",
                                           key("posnet.block_count"), posnet_blocks,
                                           kWavTokenizerPosnetBlocks));
  if (convnext_embd != h.n_embd)
    return Status::unsupported(fmt::format("{} = {} differs from {} = {}",
                                           key("convnext.embedding_length"), convnext_embd,
                                           key("posnet.embedding_length"), h.n_embd));
  h.n_convnext = static_cast<int32_t>(convnext_blocks);
  h.n_groups = static_cast<int32_t>(groups);
  h.norm_eps = static_cast<float>(f.get_float_or(key("attention.layer_norm_epsilon"), 1e-6));
  h.group_norm_eps = static_cast<float>(f.get_float_or(key("attention.group_norm_epsilon"), 1e-6));
  // The code count is the embedding's row count unless the file states it.
  const TensorView* embd = f.tensors().find("token_embd.weight");
  h.n_vocab = f.get_int_or(key("vocab_size"), embd ? embd->shape.front() : 0);
  if (h.n_vocab <= 0) return Status::not_found("missing tensor token_embd.weight");
  h.n_fft = static_cast<int32_t>(h.n_out - 2);
  // llama.cpp's tts example fixes hop 320 for n_fft 1280; other sizes keep that ratio.
  h.hop = static_cast<int32_t>(f.get_int_or(key("edge.hop_length"), h.n_fft / 4));
  RETURN_IF_ERROR(check_hparams(h));
  return h;
}

void write_wavtokenizer_hparams(const WavTokenizerHparams& h, const std::string& name,
                                GgufWriter& w) {
  w.set_string("general.architecture", kWavTokenizerArch);
  w.set_string("general.name", name);
  w.set_string("tokenizer.ggml.model", "none");  // llama.cpp requires the key: no tokenizer
  w.set_u32(key("vocab_size"), static_cast<uint32_t>(h.n_vocab));
  w.set_u32(key("context_length"), 8192);
  w.set_u32(key("embedding_length"), static_cast<uint32_t>(h.n_out));
  // llama.cpp keeps pos-net and ConvNeXt blocks in one per-layer array sized block_count.
  w.set_u32(key("block_count"),
            static_cast<uint32_t>(std::max<int64_t>(h.n_convnext, kWavTokenizerPosnetBlocks)));
  w.set_u32(key("feed_forward_length"), static_cast<uint32_t>(h.n_ff));
  w.set_u32(key("features_length"), static_cast<uint32_t>(h.n_features));
  w.set_u32(key("attention.head_count"), 1);
  w.set_f32(key("attention.layer_norm_epsilon"), h.norm_eps);
  w.set_f32(key("attention.group_norm_epsilon"), h.group_norm_eps);
  w.set_u32(key("attention.group_norm_groups"), static_cast<uint32_t>(h.n_groups));
  w.set_bool(key("attention.causal"), false);
  w.set_u32(key("posnet.embedding_length"), static_cast<uint32_t>(h.n_embd));
  w.set_u32(key("posnet.block_count"), kWavTokenizerPosnetBlocks);
  w.set_u32(key("convnext.embedding_length"), static_cast<uint32_t>(h.n_embd));
  w.set_u32(key("convnext.block_count"), static_cast<uint32_t>(h.n_convnext));
  w.set_u32(key("edge.hop_length"), static_cast<uint32_t>(h.hop));
}

TensorSchema wavtokenizer_schema(const WavTokenizerHparams& h) {
  // Shapes are llama.cpp's ne[] reversed. Its converter stores the pos-net's norms and
  // biases and the depthwise bias as [C, 1] columns (so ggml can broadcast over time).
  const int64_t c = h.n_embd;
  TensorSchema s;
  s.require("token_embd.weight", {h.n_vocab, h.n_features});  // [vocab, F]
  s.require("conv1d.weight", {c, h.n_features, 7});           // [C, F, 7]
  s.require("conv1d.bias", {c, 1});
  for (int i = 0; i < kWavTokenizerPosnetBlocks; ++i) {
    auto p = [i](const char* what, const char* suffix) {
      return fmt::format("posnet.{}.{}.{}", i, what, suffix);
    };
    if (i == 2 || i == 5) {  // 2: attention block, 5: the closing group norm
      s.require(p("attn_norm", "weight"), {c, 1});
      s.require(p("attn_norm", "bias"), {c, 1});
      if (i == 5) continue;
      for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
        s.require(p(m, "weight"), {c, c, 1});  // [C, C, 1]: a k=1 conv, i.e. a linear map
        s.require(p(m, "bias"), {c, 1});
      }
      continue;
    }
    for (const char* n : {"norm1", "norm2"}) {
      s.require(p(n, "weight"), {c, 1});
      s.require(p(n, "bias"), {c, 1});
    }
    for (const char* k : {"conv1", "conv2"}) {
      s.require(p(k, "weight"), {c, c, 3});  // [C, C, 3]
      s.require(p(k, "bias"), {c, 1});
    }
  }
  s.require("token_embd_norm.weight", {c});
  s.require("token_embd_norm.bias", {c});
  for (int i = 0; i < h.n_convnext; ++i) {
    auto p = [i](const char* what) { return fmt::format("convnext.{}.{}", i, what); };
    s.require(p("dw.weight"), {c, 1, 7});  // [C, 1, 7]: depthwise
    s.require(p("dw.bias"), {c, 1});
    s.require(p("norm.weight"), {c});
    s.require(p("norm.bias"), {c});
    s.require(p("pw1.weight"), {h.n_ff, c});  // [n_ff, C]
    s.require(p("pw1.bias"), {h.n_ff});
    s.require(p("pw2.weight"), {c, h.n_ff});  // [C, n_ff]
    s.require(p("pw2.bias"), {c});
    s.require(p("gamma.weight"), {c});
  }
  s.require("output_norm.weight", {c});
  s.require("output_norm.bias", {c});
  s.require("output.weight", {h.n_out, c});  // [n_fft + 2, C]
  s.require("output.bias", {h.n_out});
  return s;
}

namespace {

Status bind_resnet(const WeightBinder& b, int i, WavTokenizerWeights::Resnet* r) {
  auto p = [i](const char* what) { return fmt::format("posnet.{}.{}", i, what); };
  RETURN_IF_ERROR(b(p("norm1.weight"), &r->norm1_w));
  RETURN_IF_ERROR(b(p("norm1.bias"), &r->norm1_b));
  RETURN_IF_ERROR(b(p("conv1.weight"), &r->conv1_w));
  RETURN_IF_ERROR(b(p("conv1.bias"), &r->conv1_b));
  RETURN_IF_ERROR(b(p("norm2.weight"), &r->norm2_w));
  RETURN_IF_ERROR(b(p("norm2.bias"), &r->norm2_b));
  RETURN_IF_ERROR(b(p("conv2.weight"), &r->conv2_w));
  return b(p("conv2.bias"), &r->conv2_b);
}

Status bind_convnext(const WeightBinder& b, int i, WavTokenizerWeights::ConvNext* l) {
  auto p = [i](const char* what) { return fmt::format("convnext.{}.{}", i, what); };
  RETURN_IF_ERROR(b(p("dw.weight"), &l->dw_w));
  RETURN_IF_ERROR(b(p("dw.bias"), &l->dw_b));
  RETURN_IF_ERROR(b(p("norm.weight"), &l->norm_w));
  RETURN_IF_ERROR(b(p("norm.bias"), &l->norm_b));
  RETURN_IF_ERROR(b(p("pw1.weight"), &l->pw1_w));
  RETURN_IF_ERROR(b(p("pw1.bias"), &l->pw1_b));
  RETURN_IF_ERROR(b(p("pw2.weight"), &l->pw2_w));
  RETURN_IF_ERROR(b(p("pw2.bias"), &l->pw2_b));
  return b(p("gamma.weight"), &l->gamma);
}

Status bind_posnet_attention(const WeightBinder& b, WavTokenizerWeights* w) {
  RETURN_IF_ERROR(b("posnet.2.attn_norm.weight", &w->attn_norm_w));
  RETURN_IF_ERROR(b("posnet.2.attn_norm.bias", &w->attn_norm_b));
  RETURN_IF_ERROR(b("posnet.2.attn_q.weight", &w->attn_q_w));
  RETURN_IF_ERROR(b("posnet.2.attn_q.bias", &w->attn_q_b));
  RETURN_IF_ERROR(b("posnet.2.attn_k.weight", &w->attn_k_w));
  RETURN_IF_ERROR(b("posnet.2.attn_k.bias", &w->attn_k_b));
  RETURN_IF_ERROR(b("posnet.2.attn_v.weight", &w->attn_v_w));
  RETURN_IF_ERROR(b("posnet.2.attn_v.bias", &w->attn_v_b));
  RETURN_IF_ERROR(b("posnet.2.attn_output.weight", &w->attn_o_w));
  return b("posnet.2.attn_output.bias", &w->attn_o_b);
}

}  // namespace

Expected<WavTokenizerWeights> bind_wavtokenizer_weights(const WavTokenizerHparams& h,
                                                        const TensorSet& tensors) {
  const WeightBinder b(tensors);
  WavTokenizerWeights w;
  RETURN_IF_ERROR(b("token_embd.weight", &w.tok_embd));
  RETURN_IF_ERROR(b("conv1d.weight", &w.conv_in_w));
  RETURN_IF_ERROR(b("conv1d.bias", &w.conv_in_b));
  const int resnet_blocks[4] = {0, 1, 3, 4};
  for (int i = 0; i < 4; ++i) RETURN_IF_ERROR(bind_resnet(b, resnet_blocks[i], &w.resnet[i]));
  RETURN_IF_ERROR(bind_posnet_attention(b, &w));
  RETURN_IF_ERROR(b("posnet.5.attn_norm.weight", &w.posnet_norm_w));
  RETURN_IF_ERROR(b("posnet.5.attn_norm.bias", &w.posnet_norm_b));
  RETURN_IF_ERROR(b("token_embd_norm.weight", &w.embd_norm_w));
  RETURN_IF_ERROR(b("token_embd_norm.bias", &w.embd_norm_b));
  w.convnext.resize(static_cast<size_t>(h.n_convnext));
  for (int i = 0; i < h.n_convnext; ++i) RETURN_IF_ERROR(bind_convnext(b, i, &w.convnext[i]));
  RETURN_IF_ERROR(b("output_norm.weight", &w.out_norm_w));
  RETURN_IF_ERROR(b("output_norm.bias", &w.out_norm_b));
  RETURN_IF_ERROR(b("output.weight", &w.out_w));
  RETURN_IF_ERROR(b("output.bias", &w.out_b));
  return w;
}

}  // namespace edge
