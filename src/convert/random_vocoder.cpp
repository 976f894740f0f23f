// write_random_vocoder: a WavTokenizer decoder with deterministic random weights, as GGUF.
#include "convert/random_vocoder.h"

#include <cmath>
#include <cstring>

#include "convert/random_model_internal.h"
#include "formats/gguf.h"
#include "kernels/istft.h"
#include "model/arch/wavtokenizer_dec.h"

namespace edge {

namespace {

// Scales that keep activations O(1) through the stack: norms near 1, small biases,
// kernels ~N(0, 1/fan_in), a small layer scale (as ConvNeXt initialises it), and a head
// whose log-magnitudes stay well below the cap of exp(x) = 100.
random_model::Tensor make_tensor(const TensorSpec& s, uint64_t seed) {
  random_model::Tensor t = random_model::seeded_tensor(s, seed);
  if (s.name.find("norm") != std::string::npos && s.name.ends_with(".weight")) {
    t.mean = 1.0f;
    t.stddev = 0.1f;
  } else if (s.name.ends_with(".bias")) {
    t.stddev = 0.1f;
  } else if (s.name.ends_with("gamma.weight")) {
    t.mean = 0.1f;
    t.stddev = 0.02f;
  } else if (s.name == "token_embd.weight") {
    t.stddev = 1.0f;
  } else {
    t.stddev = 1.0f / std::sqrt(static_cast<float>(random_model::fan_in(s.shape)));
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
  w.set_u32("general.file_type", random_model::gguf_file_type(o.dtype));
  const TensorSchema schema = wavtokenizer_schema(h);  // outlives the loop over its specs
  for (const TensorSpec& s : schema.specs()) {
    const random_model::Tensor t = make_tensor(s, o.seed);
    // llama.cpp's convention: vectors and [C, 1] columns stay F32, kernels take the type.
    const bool column = s.shape.size() == 1 || (s.shape.size() == 2 && s.shape[1] == 1);
    const DType dt = column ? DType::F32 : o.dtype;
    RETURN_IF_ERROR(random_model::add_generated_tensor(w, t, dt, "random vocoder"));
  }
  return w.write(path, 32);
}

}  // namespace edge
