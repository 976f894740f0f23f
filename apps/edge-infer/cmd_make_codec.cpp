// make-model --arch qwen3-tts-tokenizer: a random-weight Qwen3-TTS 12 Hz codec decoder as a
// Hugging Face tokenizer directory (config.json + model.safetensors, published names).
#include <cstdio>

#include "commands.h"
#include "convert/random_model.h"
#include "convert/random_qwen3_tts_codec.h"

namespace edge::cli {

int make_qwen3_tts_codec(const RandomModelOptions& m, const std::string& size,
                         const std::function<bool(const char*)>& given, const std::string& out) {
  // --codec-size picks the base (small: tests and demos; published: Qwen's sizes), then the
  // make-model flags given override it: --layers the transformer layers, --dim its width,
  // --heads/--kv-heads/--head-dim, --ffn its SwiGLU width, --vocab the codebook size,
  // --sliding-window the attention window in frames.
  RandomQwen3TtsCodecOptions o;
  if (size == "small")
    o.hp = small_qwen3_tts_codec_hparams();
  else if (size != "published")
    return report_error(
        Status::invalid_argument("--codec-size must be small or published (got " + size + ")"));
  if (given("--layers")) o.hp.n_layer = m.n_layer;
  if (given("--dim")) o.hp.hidden = m.n_embd;
  if (given("--heads")) o.hp.n_head = m.n_head;
  if (given("--kv-heads")) o.hp.n_head_kv = m.n_head_kv;
  if (given("--head-dim")) o.hp.head_dim = m.head_dim;
  if (given("--ffn")) o.hp.n_ff = m.n_ff;
  if (given("--vocab")) o.hp.codebook_size = m.n_vocab;
  if (given("--sliding-window")) o.hp.sliding_window = m.sliding_window;
  o.dtype = m.dtype;
  o.seed = m.seed;
  RETURN_CODE_IF_ERROR(write_random_qwen3_tts_codec(o, out));
  std::fprintf(
      stderr, "edge-infer: wrote qwen3-tts-tokenizer (12 Hz codec decoder, random weights) to %s\n",
      out.c_str());
  return 0;
}

}  // namespace edge::cli
