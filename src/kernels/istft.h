// Short-time Fourier transforms as WavTokenizer's head uses them: a periodic Hann window
// of n_fft samples, hop `hop`, and "same" padding (pad = (n_fft - hop) / 2 trimmed from
// both ends), so F frames give exactly F * hop samples. The inverse divides the
// overlap-added frames by the overlap-added squared window (the window envelope), which
// makes istft(stft(x)) == x up to rounding.
//
// The FFT is KissFFT's real transform (BSD-3-Clause; THIRD_PARTY.md).
//
// Spectra are [n_frames][n_fft / 2 + 1] complex bins stored as (re, im) float pairs.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"

namespace edge {

// How an inverse frame is scaled from its bins.
//   kTorch:    torch.fft.irfft (norm "backward"): 1/n_fft, DC and Nyquist counted once,
//              the other bins twice (Hermitian symmetry). WavTokenizer's own definition.
//   kLlamaCpp: llama.cpp's tts example (embd_to_audio): a plain sum over the n_fft/2+1
//              bins divided by n_fft/2+1 (every bin once), the convention its
//              `wavtokenizer-dec` output is heard through; ~0.2% louder than kTorch plus
//              a doubled weight on DC and Nyquist.
enum class IstftScale { kTorch, kLlamaCpp };

struct IstftParams {
  int32_t n_fft = 1280;  // also the window length
  int32_t hop = 320;
  IstftScale scale = IstftScale::kTorch;

  int32_t n_bins() const { return n_fft / 2 + 1; }
  int32_t pad() const { return (n_fft - hop) / 2; }
};

// n_fft even and >= 4, 0 < hop <= n_fft, (n_fft - hop) even.
Status validate_istft_params(const IstftParams& p);

// Incremental inverse STFT. Frames arrive in order; a sample is returned as soon as no
// later frame can add to it (after frame f, every padded position below (f + 1) * hop),
// so pushing frames in any grouping returns the same samples as one whole-utterance call.
class IstftStream {
 public:
  static Expected<IstftStream> create(const IstftParams& p);
  IstftStream(IstftStream&&) noexcept;
  IstftStream& operator=(IstftStream&&) noexcept;
  ~IstftStream();

  // spec: [n_frames][n_bins] complex. Appends the samples that became final to *out.
  void push(const float* spec, int64_t n_frames, std::vector<float>* out);
  // Appends the remaining samples (the trailing overlap, trimmed by pad). After finish,
  // the stream has produced exactly frames() * hop samples; it is then reset for reuse.
  void finish(std::vector<float>* out);

  int64_t frames() const { return frames_; }
  const IstftParams& params() const { return p_; }

 private:
  struct Fft;
  explicit IstftStream(const IstftParams& p);
  void emit(int64_t end_padded, std::vector<float>* out);

  IstftParams p_;
  std::unique_ptr<Fft> fft_;
  std::vector<float> window_;  // [n_fft], periodic Hann
  std::vector<float> frame_;   // [n_fft] scratch: one inverse frame
  std::vector<float> bins_;    // [n_bins * 2] scratch: scaled bins
  std::vector<float> acc_;     // overlap-add sum, padded positions [base_, base_ + size)
  std::vector<float> env_;     // sum of window^2 at the same positions
  int64_t base_ = 0;           // padded position of acc_[0]
  int64_t emitted_ = 0;        // padded positions below this were returned (or trimmed)
  int64_t frames_ = 0;
};

// Whole-utterance inverse: [n_frames][n_bins] complex -> n_frames * hop samples.
Expected<std::vector<float>> istft(const IstftParams& p, const float* spec, int64_t n_frames);

// Forward transform with the same framing (zeros outside the signal, no normalisation,
// as torch.stft): x [n_samples], n_samples a multiple of hop -> [n_samples / hop][n_bins].
Expected<std::vector<float>> stft(const IstftParams& p, const float* x, int64_t n_samples);

}  // namespace edge
