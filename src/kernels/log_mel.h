// Whisper's log-mel spectrogram (openai/whisper audio.py), the input of Whisper-style audio
// encoders (Ultravox, Qwen2-Audio, ...):
//   - 16 kHz mono samples, followed by 30 s of zeros (Whisper pads every clip so the last
//     window is complete; the padding also sets how many frames a clip yields);
//   - STFT: n_fft 400 (25 ms), hop 160 (10 ms), periodic Hann window, centred frames
//     (reflect padding of n_fft/2 at both ends), the last frame dropped, so a padded signal
//     of L samples gives L / 160 frames;
//   - power |X|^2 of the n_fft/2+1 = 201 bins, times a mel filterbank [n_mel][201] with
//     Slaney's mel scale and Slaney area normalisation (librosa.filters.mel defaults,
//     fmin 0, fmax 8 kHz), n_mel 80 or 128 from the model file;
//   - log10(max(mel, 1e-10)), clamped below at (global max - 8), then (x + 4) / 4.
// The FFT is KissFFT's real transform.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"

namespace edge {

inline constexpr int32_t kWhisperSampleRate = 16000;
inline constexpr int32_t kWhisperNfft = 400;
inline constexpr int32_t kWhisperHop = 160;
inline constexpr int32_t kWhisperChunkFrames = 3000;  // 30 s: what the encoder takes at once

// [n_mel][n_fft/2 + 1] triangular filters on Slaney's mel scale, area-normalised.
std::vector<float> slaney_mel_filterbank(int32_t n_mel, int32_t n_fft, int32_t sample_rate);

struct LogMel {
  int32_t n_mel = 0;
  int64_t n_frames = 0;
  std::vector<float> data;  // [n_mel][n_frames], frames contiguous
};

// The whole clip (plus its 30 s of padding): (n + 480000) / 160 frames. n_mel in [1, 256].
Expected<LogMel> whisper_log_mel(const float* pcm16k, int64_t n, int32_t n_mel);

// The encoder's inputs: consecutive 3000-frame chunks of whisper_log_mel; a trailing partial
// chunk holds only padding and is dropped (as llama.cpp's mtmd does), so a clip of up to
// 30 s is one chunk and each further 30 s adds one.
Expected<std::vector<LogMel>> whisper_mel_chunks(const float* pcm16k, int64_t n, int32_t n_mel);

}  // namespace edge
