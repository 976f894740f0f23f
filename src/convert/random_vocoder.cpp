#include "convert/random_vocoder.h"

#include <cmath>
#include <cstring>

#include "convert/random_model_internal.h"
#include "formats/gguf.h"
#include "kernels/istft.h"
#include "model/arch/wavtokenizer_dec.h"

namespace edge {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

uint64_t name_hash(const std::string& s) {  // FNV-1a: values per tensor name, not order
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

// Scales that keep activations O(1) through the stack: norms near 1, small biases,
// kernels ~N(0, 1/fan_in), a small layer scale (as ConvNeXt initialises it), and a head
// whose log-magnitudes stay well below the cap of exp(x) = 100.
random_model::Tensor make_tensor(const TensorSpec& s, uint64_t seed) {
  random_model::Tensor t{s.name, s.shape};
  t.seed = seed ^ name_hash(s.name);
  int64_t fan_in = 1;
  for (size_t i = 1; i < s.shape.size(); ++i) fan_in *= s.shape[i];
  if (s.name.find("norm") != std::string::npos && ends_with(s.name, ".weight")) {
    t.mean = 1.0f;
    t.stddev = 0.1f;
  } else if (ends_with(s.name, ".bias")) {
    t.stddev = 0.1f;
  } else if (ends_with(s.name, "gamma.weight")) {
    t.mean = 0.1f;
    t.stddev = 0.02f;
  } else if (s.name == "token_embd.weight") {
    t.stddev = 1.0f;
  } else {
    t.stddev = 1.0f / std::sqrt(static_cast<float>(fan_in));
  }
  return t;
}

}  // namespace

Status write_random_vocoder(const RandomVocoderOptions& o, const std::string& path) {
  if (o.dtype != DType::F32 && o.dtype != DType::F16 && o.dtype != DType::BF16)
    return Status::invalid_argument(std::string("random vocoder: weight type ") +
                                    dtype_name(o.dtype) + " (f32, f16 or bf16)");
  if (o.n_vocab <= 0 || o.n_features <= 0 || o.n_embd <= 0 || o.n_ff <= 0 || o.n_convnext < 0 ||
      o.n_groups <= 0 || o.n_embd % o.n_groups)
    return Status::invalid_argument("random vocoder: sizes must be positive, groups | n_embd");
  WavTokenizerHparams h;
  h.n_vocab = o.n_vocab;
  h.n_features = o.n_features;
  h.n_embd = o.n_embd;
  h.n_ff = o.n_ff;
  h.n_out = int64_t{o.n_fft} + 2;
  h.n_convnext = o.n_convnext;
  h.n_groups = o.n_groups;
  h.n_fft = o.n_fft;
  h.hop = o.hop;
  RETURN_IF_ERROR(validate_istft_params({o.n_fft, o.hop}));
  GgufWriter w;
  write_wavtokenizer_hparams(h, "edge-random-wavtokenizer-dec", w);
  w.set_u32("general.file_type", o.dtype == DType::F32 ? 0 : o.dtype == DType::F16 ? 1 : 32);
  const TensorSchema schema = wavtokenizer_schema(h);  // outlives the loop over its specs
  for (const TensorSpec& s : schema.specs()) {
    const random_model::Tensor t = make_tensor(s, o.seed);
    // llama.cpp's convention: vectors and [C, 1] columns stay F32, kernels take the type.
    const bool column = s.shape.size() == 1 || (s.shape.size() == 2 && s.shape[1] == 1);
    const DType dt = column ? DType::F32 : o.dtype;
    RETURN_IF_ERROR(w.add_tensor(t.name, dt, t.shape, [t, dt](uint8_t* dst, uint64_t n) {
      const std::vector<uint8_t> bytes = random_model::encode(t.generate(), dt);
      if (n != bytes.size()) return Status::internal("random vocoder: tensor size mismatch");
      std::memcpy(dst, bytes.data(), n);
      return Status();
    }));
  }
  return w.write(path, 32);
}

}  // namespace edge
