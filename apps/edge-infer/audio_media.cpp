#include "media_input.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "commands.h"
#include "convert/random_audio_projector.h"
#include "convert/random_model.h"
#include "kernels/api.h"
#include "model/audio_input.h"
#include "model/model.h"

namespace edge::cli {

Expected<SplicedPrompt> build_audio_prompt(const Model& lm, const std::string& mmproj,
                                           const std::string& wav_path, const std::string& text) {
  if (mmproj.empty())
    return Status::invalid_argument("--audio needs --mmproj (an audio projector)");
  const Tokenizer* tok = lm.tokenizer();
  if (!tok) return Status::invalid_argument("--audio needs a model with a tokenizer");
  auto enc = load_audio_encoder(mmproj);
  if (!enc) return enc.status();
  if (enc->hparams.n_out != lm.config().n_embd)
    return Status::invalid_argument(
        fmt::format("{}: projector output width {} differs from the model's n_embd {}", mmproj,
                    enc->hparams.n_out, lm.config().n_embd));
  std::ifstream f(wav_path, std::ios::binary);
  if (!f) return Status::io_error(wav_path + ": cannot open");
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(f), {}};
  const auto t0 = std::chrono::steady_clock::now();
  auto e = embed_wav({select_kernels(), lm.pool()}, *enc, bytes.data(), bytes.size());
  if (!e) return Status(e.status().code(), wav_path + ": " + e.status().message());
  SplicedPrompt p;
  p.encode_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const AudioMarkers mk = audio_markers(enc->hparams.projector);
  p.tokens = tok->encode(mk.begin, /*add_special=*/true);
  const int64_t pos = static_cast<int64_t>(p.tokens.size());
  p.n_rows = e->n_tokens;
  p.tokens.insert(p.tokens.end(), static_cast<size_t>(e->n_tokens), 0);  // placeholders
  // As mtmd: the end marker and the text are tokenized apart.
  for (const std::string& piece : {mk.end, text}) {
    const std::vector<int32_t> ids = tok->encode(piece, /*add_special=*/false);
    p.tokens.insert(p.tokens.end(), ids.begin(), ids.end());
  }
  p.rows = std::move(e->rows);
  p.splices.push_back({pos, p.n_rows, p.rows.data(), /*bidirectional=*/false});
  return p;
}

int make_audio_projector(const RandomModelOptions& m, int proj_dim, const std::string& out) {
  RandomAudioProjectorOptions o;
  o.projector = m.arch == "clip-qwen2a" ? AudioProjector::kQwen2a : AudioProjector::kUltravox;
  o.n_embd = m.n_embd;
  o.n_layer = m.n_layer;
  o.n_head = m.n_head;
  o.n_ff = m.n_ff > 0 ? m.n_ff : 4 * m.n_embd;
  o.n_out = proj_dim > 0 ? proj_dim : m.n_embd;
  o.n_mm_ff = 2 * o.n_out;
  o.dtype = m.dtype;
  o.seed = m.seed;
  RETURN_CODE_IF_ERROR(write_random_audio_projector(o, out));
  std::fprintf(stderr, "edge-infer: wrote %s audio projector (random weights) to %s\n",
               audio_projector_name(o.projector), out.c_str());
  return 0;
}

}  // namespace edge::cli
