// Whisper-style audio encoder: hyper-parameters, tensor schema, weight binding and the
// file loader. The forward pass is in whisper_enc_forward.cpp.
#include "model/arch/whisper_enc.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/thread_pool.h"
#include "kernels/api.h"
#include "kernels/log_mel.h"
#include "model/arch/encoder_common.h"

namespace edge {

namespace {

std::string akey(const char* what) {
  return fmt::format("clip.audio.{}", what);
}

// A size read from a tensor's shape (dim `dim`); the error names the tensor.
Expected<int64_t> tensor_dim(const GgufFile& f, const char* name, size_t dim) {
  const TensorView* t = f.tensors().find(name);
  if (!t) return Status::not_found(fmt::format("missing tensor {}", name));
  if (t->shape.size() != 2)
    return Status::invalid_format(
        fmt::format("tensor {}: expected 2 dims, found {}", name, t->shape_string()));
  return t->shape[dim];
}

Expected<AudioProjector> read_projector(const GgufFile& f) {
  // Files with both modalities name each encoder's projector; audio-only ones the global key.
  std::string type = f.get_string_or(akey("projector_type"), "");
  if (type.empty()) type = f.get_string_or("clip.projector_type", "");
  if (type == "ultravox") return AudioProjector::kUltravox;
  if (type == "qwen2a") return AudioProjector::kQwen2a;
  if (type.empty()) return Status::not_found("clip.projector_type: missing");
  return Status::unsupported(
      fmt::format("clip.projector_type '{}': audio projectors are ultravox and qwen2a", type));
}

Status check_hparams(const WhisperEncHparams& h) {
  if (h.n_embd % h.n_head)
    return Status::invalid_format(fmt::format("{} = {} does not divide {} = {}",
                                              akey("attention.head_count"), h.n_head,
                                              akey("embedding_length"), h.n_embd));
  if (h.n_mel > 256)
    return Status::invalid_format(
        fmt::format("{} = {}: at most 256", akey("num_mel_bins"), h.n_mel));
  if (h.projector == AudioProjector::kUltravox && h.n_mm_ff % 2)
    return Status::invalid_format(
        fmt::format("tensor mm.a.mlp.1.weight: {} rows, SwiGLU needs an even count", h.n_mm_ff));
  return Status();
}

}  // namespace

const char* audio_projector_name(AudioProjector p) {
  return p == AudioProjector::kUltravox ? "ultravox" : "qwen2a";
}

int64_t WhisperEncHparams::tokens_for_frames(int64_t t) const {
  // llama.cpp's mtmd count: stacking rounds the frames up to a multiple of k before the
  // conv's halving, so for 3000 frames and k 8 it keeps 187 of the 188 stacked rows.
  if (projector == AudioProjector::kUltravox) return (t + stack - 1) / stack / 2;
  return t / 4;  // conv stride 2, then the average pool of 2
}

bool gguf_has_audio_encoder(const GgufFile& f) {
  return f.get_bool_or("clip.has_audio_encoder", false);
}

Expected<WhisperEncHparams> read_whisper_enc_hparams(const GgufFile& f) {
  const std::string arch = f.get_string_or("general.architecture", "");
  if (arch != "clip")
    return Status::unsupported(
        fmt::format("general.architecture '{}': not a clip projector", arch));
  if (!gguf_has_audio_encoder(f))
    return Status::unsupported("clip.has_audio_encoder: not set (no audio encoder in this file)");
  WhisperEncHparams h;
  ASSIGN_OR_RETURN(h.projector, read_projector(f));
  ASSIGN_OR_RETURN(h.n_embd, gguf_positive_int(f, akey("embedding_length")));
  ASSIGN_OR_RETURN(h.n_ff, gguf_positive_int(f, akey("feed_forward_length")));
  ASSIGN_OR_RETURN(h.n_head, gguf_positive_int(f, akey("attention.head_count")));
  ASSIGN_OR_RETURN(h.n_layer, gguf_positive_int(f, akey("block_count")));
  ASSIGN_OR_RETURN(h.n_mel, gguf_positive_int(f, akey("num_mel_bins")));
  ASSIGN_OR_RETURN(h.n_out, gguf_positive_int(f, akey("projection_dim")));
  h.eps = static_cast<float>(f.get_float_or(akey("attention.layer_norm_epsilon"), 1e-5));
  ASSIGN_OR_RETURN(h.n_ctx, tensor_dim(f, "a.position_embd.weight", 0));
  if (h.projector == AudioProjector::kUltravox) {
    ASSIGN_OR_RETURN(h.stack, gguf_positive_int(f, akey("projector.stack_factor")));
    ASSIGN_OR_RETURN(h.n_mm_ff, tensor_dim(f, "mm.a.mlp.1.weight", 0));
  }
  RETURN_IF_ERROR(check_hparams(h));
  return h;
}

void write_whisper_enc_hparams(const WhisperEncHparams& h, const std::string& name, GgufWriter& w) {
  w.set_string("general.architecture", "clip");
  w.set_string("general.name", name);
  w.set_string("clip.projector_type", audio_projector_name(h.projector));
  w.set_bool("clip.has_audio_encoder", true);
  w.set_bool("clip.has_vision_encoder", false);
  w.set_u32(akey("embedding_length"), static_cast<uint32_t>(h.n_embd));
  w.set_u32(akey("feed_forward_length"), static_cast<uint32_t>(h.n_ff));
  w.set_u32(akey("block_count"), static_cast<uint32_t>(h.n_layer));
  w.set_u32(akey("attention.head_count"), static_cast<uint32_t>(h.n_head));
  w.set_f32(akey("attention.layer_norm_epsilon"), h.eps);
  w.set_u32(akey("num_mel_bins"), static_cast<uint32_t>(h.n_mel));
  w.set_u32(akey("projection_dim"), static_cast<uint32_t>(h.n_out));
  if (h.projector == AudioProjector::kUltravox)
    w.set_u32(akey("projector.stack_factor"), static_cast<uint32_t>(h.stack));
}

TensorSchema whisper_enc_schema(const WhisperEncHparams& h) {
  // llama.cpp's converter stores the conv biases as [E, 1] columns (ggml broadcasts them
  // over time).
  const int64_t e = h.n_embd, ff = h.n_ff;
  TensorSchema s;
  s.require("a.conv1d.1.weight", {e, h.n_mel, 3});  // [E, n_mel, 3]
  s.require("a.conv1d.1.bias", {e, 1});
  s.require("a.conv1d.2.weight", {e, e, 3});  // [E, E, 3]
  s.require("a.conv1d.2.bias", {e, 1});
  s.require("a.position_embd.weight", {h.n_ctx, e});  // [n_ctx, E]
  for (int l = 0; l < h.n_layer; ++l) {
    auto n = [l](const char* what, const char* suffix) {
      return fmt::format("a.blk.{}.{}.{}", l, what, suffix);
    };
    for (const char* ln : {"ln1", "ln2"}) {
      s.require(n(ln, "weight"), {e});
      s.require(n(ln, "bias"), {e});
    }
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_out"})
      s.require(n(m, "weight"), {e, e});
    for (const char* m : {"attn_q", "attn_v", "attn_out"}) s.require(n(m, "bias"), {e});
    s.require(n("ffn_up", "weight"), {ff, e});  // [n_ff, E]
    s.require(n("ffn_up", "bias"), {ff});
    s.require(n("ffn_down", "weight"), {e, ff});  // [E, n_ff]
    s.require(n("ffn_down", "bias"), {e});
  }
  s.require("a.post_ln.weight", {e});
  s.require("a.post_ln.bias", {e});
  if (h.projector == AudioProjector::kUltravox) {
    s.require("mm.a.norm_pre.weight", {h.stack * e});
    s.require("mm.a.mlp.1.weight", {h.n_mm_ff, h.stack * e});  // [H, k E]
    s.require("mm.a.norm_mid.weight", {h.n_mm_ff / 2});
    s.require("mm.a.mlp.2.weight", {h.n_out, h.n_mm_ff / 2});  // [P, H / 2]
  } else {
    s.require("mm.a.fc.weight", {h.n_out, e});  // [P, E]
    s.require("mm.a.fc.bias", {h.n_out});
  }
  return s;
}

namespace {

Status bind_layer(const WeightBinder& b, int l, WhisperEncWeights::Layer* y) {
  auto n = [l](const char* what) { return fmt::format("a.blk.{}.{}", l, what); };
  RETURN_IF_ERROR(b(n("ln1.weight"), &y->ln1_w));
  RETURN_IF_ERROR(b(n("ln1.bias"), &y->ln1_b));
  RETURN_IF_ERROR(b(n("ln2.weight"), &y->ln2_w));
  RETURN_IF_ERROR(b(n("ln2.bias"), &y->ln2_b));
  RETURN_IF_ERROR(b(n("attn_q.weight"), &y->q_w));
  RETURN_IF_ERROR(b(n("attn_q.bias"), &y->q_b));
  RETURN_IF_ERROR(b(n("attn_k.weight"), &y->k_w));
  RETURN_IF_ERROR(b(n("attn_v.weight"), &y->v_w));
  RETURN_IF_ERROR(b(n("attn_v.bias"), &y->v_b));
  RETURN_IF_ERROR(b(n("attn_out.weight"), &y->o_w));
  RETURN_IF_ERROR(b(n("attn_out.bias"), &y->o_b));
  RETURN_IF_ERROR(b(n("ffn_up.weight"), &y->up_w));
  RETURN_IF_ERROR(b(n("ffn_up.bias"), &y->up_b));
  RETURN_IF_ERROR(b(n("ffn_down.weight"), &y->down_w));
  return b(n("ffn_down.bias"), &y->down_b);
}

}  // namespace

Expected<WhisperEncWeights> bind_whisper_enc_weights(const WhisperEncHparams& h,
                                                     const TensorSet& tensors) {
  const WeightBinder b(tensors);
  WhisperEncWeights w;
  RETURN_IF_ERROR(b("a.conv1d.1.weight", &w.conv1_w));
  RETURN_IF_ERROR(b("a.conv1d.1.bias", &w.conv1_b));
  RETURN_IF_ERROR(b("a.conv1d.2.weight", &w.conv2_w));
  RETURN_IF_ERROR(b("a.conv1d.2.bias", &w.conv2_b));
  RETURN_IF_ERROR(b("a.position_embd.weight", &w.pos));
  w.layers.resize(static_cast<size_t>(h.n_layer));
  for (int l = 0; l < h.n_layer; ++l) RETURN_IF_ERROR(bind_layer(b, l, &w.layers[l]));
  RETURN_IF_ERROR(b("a.post_ln.weight", &w.post_ln_w));
  RETURN_IF_ERROR(b("a.post_ln.bias", &w.post_ln_b));
  if (h.projector == AudioProjector::kUltravox) {
    RETURN_IF_ERROR(b("mm.a.norm_pre.weight", &w.norm_pre));
    RETURN_IF_ERROR(b("mm.a.mlp.1.weight", &w.mlp1_w));
    RETURN_IF_ERROR(b("mm.a.norm_mid.weight", &w.norm_mid));
    RETURN_IF_ERROR(b("mm.a.mlp.2.weight", &w.mlp2_w));
  } else {
    RETURN_IF_ERROR(b("mm.a.fc.weight", &w.fc_w));
    RETURN_IF_ERROR(b("mm.a.fc.bias", &w.fc_b));
  }
  return w;
}

Expected<AudioEncoderModel> load_audio_encoder(const std::string& path, int threads) {
  auto f = GgufFile::open(path);
  if (!f) return f.status();
  AudioEncoderModel m{std::move(*f), {}, {}, {}};
  auto h = read_whisper_enc_hparams(m.file);
  if (!h) return Status(h.status().code(), path + ": " + h.status().message());
  m.hparams = *h;
  ASSIGN_OR_RETURN(m.prepared, prepare_gguf_tensors(m.file, threads));
  if (Status s = whisper_enc_schema(m.hparams).check(m.prepared.tensors); !s.ok())
    return Status(s.code(), path + ": " + s.message());
  ASSIGN_OR_RETURN(m.weights, bind_whisper_enc_weights(m.hparams, m.prepared.tensors));
  return m;
}

uint64_t audio_encoder_activation_bytes(const WhisperEncHparams& h) {
  const uint64_t t = kWhisperChunkFrames, n = t / 2, e = static_cast<uint64_t>(h.n_embd);
  const uint64_t samples = 3 * uint64_t{30} * kWhisperSampleRate;  // input, resampled, padded
  const uint64_t mel = 2 * t * static_cast<uint64_t>(h.n_mel);     // whole-clip mel + chunk
  const uint64_t conv = t * static_cast<uint64_t>(h.n_mel) * 3 + t * e + n * 3 * e;
  const uint64_t blocks = 6 * n * e + n * static_cast<uint64_t>(h.n_ff);  // x, n, q, k, v, o; MLP
  const uint64_t proj = n * static_cast<uint64_t>(std::max(h.n_mm_ff, h.n_out));
  return (samples + mel + conv + blocks + proj) * sizeof(float);
}

Expected<AudioFootprint> audio_encoder_footprint(const std::string& path) {
  auto f = GgufFile::open(path);
  if (!f) return f.status();
  AudioFootprint fp;
  if (!gguf_has_audio_encoder(*f)) return fp;
  auto h = read_whisper_enc_hparams(*f);
  if (!h) return Status(h.status().code(), path + ": " + h.status().message());
  for (const TensorView& t : f->tensors().all()) {
    if (t.name.rfind("a.", 0) != 0 && t.name.rfind("mm.a.", 0) != 0)
      continue;  // audio tensors only
    const bool plain = kernel_supports_dtype(t.dtype);
    (plain ? fp.weights_mapped : fp.weights_anon) += t.nbytes;
  }
  fp.activations = audio_encoder_activation_bytes(*h);
  return fp;
}

Expected<std::vector<float>> encode_audio(const WhisperEncExec& ex, const AudioEncoderModel& m,
                                          const float* pcm16k, int64_t n, int64_t* n_tokens) {
  const WhisperEncHparams& h = m.hparams;
  if (h.n_ctx * 2 < kWhisperChunkFrames)
    return Status::unsupported(
        fmt::format("a.position_embd.weight: {} positions, a 30 s chunk needs {}", h.n_ctx,
                    kWhisperChunkFrames / 2));
  auto chunks = whisper_mel_chunks(pcm16k, n, static_cast<int32_t>(h.n_mel));
  if (!chunks) return chunks.status();
  std::vector<float> out;
  *n_tokens = 0;
  for (const LogMel& c : *chunks) {
    std::vector<float> e = whisper_enc_forward(ex, h, m.weights, c.data.data(), c.n_frames);
    out.insert(out.end(), e.begin(), e.end());
    *n_tokens += h.tokens_for_frames(c.n_frames);
  }
  return out;
}

}  // namespace edge
