#include "kernels/log_mel.h"

#include <fmt/format.h>
#include <kiss_fftr.h>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace edge {

namespace {

// Slaney's mel scale (librosa htk=False): linear below 1 kHz (200/3 Hz per mel), then
// logarithmic with 27 mels per factor 6.4.
constexpr double kFsp = 200.0 / 3.0, kMinLogHz = 1000.0, kMinLogMel = kMinLogHz / kFsp;
const double kLogStep = std::log(6.4) / 27.0;

double hz_to_mel(double f) {
  return f < kMinLogHz ? f / kFsp : kMinLogMel + std::log(f / kMinLogHz) / kLogStep;
}
double mel_to_hz(double m) {
  return m < kMinLogMel ? m * kFsp : kMinLogHz * std::exp(kLogStep * (m - kMinLogMel));
}

// The filterbank with each filter's non-zero bin range, so the projection skips zeros.
struct SparseBank {
  std::vector<float> w;              // [n_mel][n_bins]
  std::vector<int32_t> first, last;  // [n_mel]: non-zero bins are [first, last)
};

SparseBank sparse_bank(int32_t n_mel, int32_t n_fft, int32_t sr) {
  const int32_t n_bins = n_fft / 2 + 1;
  SparseBank b{slaney_mel_filterbank(n_mel, n_fft, sr), {}, {}};
  for (int32_t m = 0; m < n_mel; ++m) {
    const float* row = b.w.data() + static_cast<size_t>(m) * n_bins;
    int32_t lo = 0, hi = n_bins;
    while (lo < n_bins && row[lo] == 0.0f) ++lo;
    while (hi > lo && row[hi - 1] == 0.0f) --hi;
    b.first.push_back(lo);
    b.last.push_back(hi);
  }
  return b;
}

}  // namespace

std::vector<float> slaney_mel_filterbank(int32_t n_mel, int32_t n_fft, int32_t sr) {
  const int32_t n_bins = n_fft / 2 + 1;
  // n_mel + 2 band edges evenly spaced in mel between 0 Hz and Nyquist.
  const double mel_lo = hz_to_mel(0.0), mel_hi = hz_to_mel(sr / 2.0);
  std::vector<double> edge_hz(static_cast<size_t>(n_mel) + 2);
  for (size_t i = 0; i < edge_hz.size(); ++i)
    edge_hz[i] = mel_to_hz(mel_lo + (mel_hi - mel_lo) * static_cast<double>(i) / (n_mel + 1));
  std::vector<float> w(static_cast<size_t>(n_mel) * n_bins, 0.0f);
  for (int32_t m = 0; m < n_mel; ++m) {
    const double lo = edge_hz[m], mid = edge_hz[m + 1], hi = edge_hz[m + 2];
    const double norm = 2.0 / (hi - lo);  // Slaney: each filter has unit area in Hz
    for (int32_t k = 0; k < n_bins; ++k) {
      const double f = static_cast<double>(k) * sr / n_fft;
      const double rise = (f - lo) / (mid - lo), fall = (hi - f) / (hi - mid);
      const double v = std::max(0.0, std::min(rise, fall));
      w[static_cast<size_t>(m) * n_bins + k] = static_cast<float>(v * norm);
    }
  }
  return w;
}

Expected<LogMel> whisper_log_mel(const float* pcm, int64_t n, int32_t n_mel) {
  if (n_mel < 1 || n_mel > 256)
    return Status::invalid_argument(fmt::format("log-mel: {} mel bins (1..256)", n_mel));
  if (n < 0) return Status::invalid_argument("log-mel: negative sample count");
  constexpr int32_t nfft = kWhisperNfft, hop = kWhisperHop, half = nfft / 2;
  constexpr int32_t n_bins = nfft / 2 + 1;
  const int64_t n_pad = n + int64_t{30} * kWhisperSampleRate;  // clip + 30 s of zeros
  // Centred frames: x reflected about its first and last sample (the right side is
  // inside the zero padding, so zeros).
  std::vector<float> x(static_cast<size_t>(n_pad + 2 * half), 0.0f);
  std::copy(pcm, pcm + n, x.begin() + half);
  for (int32_t p = 0; p < half; ++p) x[p] = (half - p) < n ? pcm[half - p] : 0.0f;

  LogMel out;
  out.n_mel = n_mel;
  out.n_frames = n_pad / hop;
  out.data.assign(static_cast<size_t>(n_mel * out.n_frames), static_cast<float>(std::log10(1e-10)));
  // Periodic Hann (torch.hann_window default): 0.5 - 0.5 cos(2 pi i / N).
  std::vector<float> window(nfft);
  for (int32_t i = 0; i < nfft; ++i)
    window[i] = static_cast<float>(0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * i / nfft));
  const SparseBank bank = sparse_bank(n_mel, nfft, kWhisperSampleRate);
  kiss_fftr_cfg cfg = kiss_fftr_alloc(nfft, 0, nullptr, nullptr);
  if (!cfg) return Status::internal("log-mel: KissFFT allocation failed");
  std::vector<float> frame(nfft), power(n_bins);
  std::vector<kiss_fft_cpx> spec(n_bins);
  // Frames starting at or past the clip's end (+ the left pad) see only zeros: log10(1e-10).
  const int64_t live = std::min<int64_t>(out.n_frames, (n + half + hop - 1) / hop + 1);
  for (int64_t f = 0; f < live; ++f) {
    for (int32_t i = 0; i < nfft; ++i) frame[i] = window[i] * x[f * hop + i];
    kiss_fftr(cfg, frame.data(), spec.data());
    for (int32_t k = 0; k < n_bins; ++k) power[k] = spec[k].r * spec[k].r + spec[k].i * spec[k].i;
    for (int32_t m = 0; m < n_mel; ++m) {
      const float* w = bank.w.data() + static_cast<size_t>(m) * n_bins;
      double sum = 0.0;
      for (int32_t k = bank.first[m]; k < bank.last[m]; ++k) sum += double{w[k]} * power[k];
      out.data[m * out.n_frames + f] = static_cast<float>(std::log10(std::max(sum, 1e-10)));
    }
  }
  kiss_fftr_free(cfg);
  const float floor = *std::max_element(out.data.begin(), out.data.end()) - 8.0f;
  for (float& v : out.data) v = (std::max(v, floor) + 4.0f) / 4.0f;
  return out;
}

Expected<std::vector<LogMel>> whisper_mel_chunks(const float* pcm, int64_t n, int32_t n_mel) {
  auto full = whisper_log_mel(pcm, n, n_mel);
  if (!full) return full.status();
  std::vector<LogMel> chunks;
  for (int64_t off = 0; off + kWhisperChunkFrames <= full->n_frames; off += kWhisperChunkFrames) {
    LogMel c;
    c.n_mel = n_mel;
    c.n_frames = kWhisperChunkFrames;
    c.data.resize(static_cast<size_t>(n_mel) * kWhisperChunkFrames);
    for (int32_t m = 0; m < n_mel; ++m)
      std::copy_n(full->data.begin() + m * full->n_frames + off, kWhisperChunkFrames,
                  c.data.begin() + static_cast<int64_t>(m) * kWhisperChunkFrames);
    chunks.push_back(std::move(c));
  }
  return chunks;
}

}  // namespace edge
