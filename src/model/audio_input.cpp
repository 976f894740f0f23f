#include "model/audio_input.h"

#include <fmt/format.h>

#include "formats/wav.h"
#include "kernels/log_mel.h"
#include "kernels/resample.h"

namespace edge {

Expected<std::vector<float>> wav_to_pcm16k(const uint8_t* wav, uint64_t size, double max_seconds,
                                           double* seconds) {
  auto pcm = decode_wav_mono(wav, size);
  if (!pcm) return pcm.status();
  *seconds = static_cast<double>(pcm->samples.size()) / pcm->sample_rate;
  if (*seconds > max_seconds)
    return Status::out_of_range(
        fmt::format("audio: {:.1f} s is longer than the {:.0f} s limit", *seconds, max_seconds));
  auto x = resample_mono(pcm->samples.data(), static_cast<int64_t>(pcm->samples.size()),
                         pcm->sample_rate, kWhisperSampleRate);
  if (!x) return x.status();
  if (x->empty()) return Status::invalid_format("audio: no samples");
  return std::move(*x);
}

Expected<AudioEmbedding> embed_wav(const WhisperEncExec& ex, const AudioEncoderModel& m,
                                   const uint8_t* wav, uint64_t size, double max_seconds) {
  AudioEmbedding e;
  auto x = wav_to_pcm16k(wav, size, max_seconds, &e.seconds);
  if (!x) return x.status();
  auto rows = encode_audio(ex, m, x->data(), static_cast<int64_t>(x->size()), &e.n_tokens);
  if (!rows) return rows.status();
  e.rows = std::move(*rows);
  e.n_embd = m.hparams.n_out;
  return e;
}

AudioMarkers audio_markers(AudioProjector p) {
  if (p == AudioProjector::kQwen2a) return {"<|audio_bos|>", "<|audio_eos|>"};
  return {"[BEGIN_AUDIO]", ""};
}

}  // namespace edge
