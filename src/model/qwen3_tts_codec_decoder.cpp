// Qwen3TtsCodec: loading a tokenizer directory, checking codes, whole and streamed decodes.
#include "model/qwen3_tts_codec_decoder.h"

#include <fmt/format.h>

#include <filesystem>

#include "kernels/api.h"

namespace edge {

Expected<std::unique_ptr<Qwen3TtsCodec>> Qwen3TtsCodec::load(const std::string& dir,
                                                             const Qwen3TtsCodecOptions& o) {
  std::string d = dir;
  std::error_code ec;
  if (!std::filesystem::exists(d + "/config.json", ec) &&
      std::filesystem::exists(d + "/speech_tokenizer/config.json", ec))
    d += "/speech_tokenizer";
  std::unique_ptr<Qwen3TtsCodec> c(new Qwen3TtsCodec());
  ASSIGN_OR_RETURN(HfModelDir m, HfModelDir::open(d));
  c->dir_ = std::make_unique<HfModelDir>(std::move(m));
  auto hp = qwen3_tts_codec_hparams(c->dir_->config);
  if (!hp) return hp.status().with_context(d + "/config.json");
  c->hp_ = *hp;
  RETURN_IF_ERROR(qwen3_tts_codec_schema(c->hp_)
                      .check(c->dir_->weights.tensors())
                      .with_context("Qwen3-TTS codec decoder in " + d));
  ASSIGN_OR_RETURN(c->w_, bind_qwen3_tts_codec_weights(c->hp_, c->dir_->weights.tensors()));
  c->given_pool_ = o.pool;
  if (!o.pool)
    c->pool_ =
        std::make_unique<ThreadPool>(o.n_threads > 0 ? o.n_threads : ThreadPool::default_threads());
  return c;
}

Status Qwen3TtsCodec::check_codes(const int32_t* codes, int64_t n_frames) const {
  const int64_t nq = hp_.n_quantizers;
  for (int64_t i = 0; i < n_frames * nq; ++i)
    if (codes[i] < 0 || codes[i] >= hp_.codebook_size)
      return Status::out_of_range(fmt::format("frame {} codebook {}: code {} not in [0, {})",
                                              i / nq, i % nq, codes[i], hp_.codebook_size));
  return Status();
}

Expected<std::vector<float>> Qwen3TtsCodec::decode(const std::vector<int32_t>& codes,
                                                   int64_t chunk_frames) const {
  const int64_t nq = hp_.n_quantizers;
  if (codes.size() % static_cast<size_t>(nq))
    return Status::invalid_argument(
        fmt::format("{} codes: not whole frames of {}", codes.size(), nq));
  const int64_t n = static_cast<int64_t>(codes.size()) / nq;
  RETURN_IF_ERROR(check_codes(codes.data(), n));
  const int64_t step = std::max<int64_t>(chunk_frames, 1);
  Qwen3TtsCodecState s;
  std::vector<float> pcm;
  pcm.reserve(static_cast<size_t>(n * samples_per_frame()));
  for (int64_t i = 0; i < n; i += step)
    qwen3_tts_codec_forward(exec(), hp_, w_, codes.data() + i * nq, std::min(step, n - i), s, pcm);
  return pcm;
}

Expected<std::vector<float>> Qwen3TtsCodecStream::decode_frames(const int32_t* codes, int64_t n) {
  RETURN_IF_ERROR(c_->check_codes(codes, n));
  std::vector<float> pcm;
  qwen3_tts_codec_forward(c_->exec(), c_->hp_, c_->w_, codes, n, state_, pcm);
  return pcm;
}

}  // namespace edge
