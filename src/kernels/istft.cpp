#include "kernels/istft.h"

#include <kiss_fftr.h>

#include <cmath>
#include <cstring>

namespace edge {

// KissFFT's inverse real plan, freed with the stream.
struct IstftStream::Fft {
  kiss_fftr_cfg inv = nullptr;
  ~Fft() { kiss_fftr_free(inv); }
};

namespace {

std::vector<float> periodic_hann(int32_t n) {
  std::vector<float> w(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i)
    w[i] = static_cast<float>(0.5 - 0.5 * std::cos(2.0 * M_PI * i / n));
  return w;
}

}  // namespace

Status validate_istft_params(const IstftParams& p) {
  if (p.n_fft < 4 || p.n_fft % 2)
    return Status::invalid_argument("istft: n_fft must be even and >= 4, got " +
                                    std::to_string(p.n_fft));
  if (p.hop <= 0 || p.hop > p.n_fft || (p.n_fft - p.hop) % 2)
    return Status::invalid_argument("istft: hop " + std::to_string(p.hop) +
                                    " must be in (0, n_fft] with n_fft - hop even");
  return Status();
}

IstftStream::IstftStream(const IstftParams& p)
    : p_(p),
      fft_(std::make_unique<Fft>()),
      window_(periodic_hann(p.n_fft)),
      frame_(static_cast<size_t>(p.n_fft)),
      bins_(static_cast<size_t>(p.n_bins()) * 2) {}
IstftStream::IstftStream(IstftStream&&) noexcept = default;
IstftStream& IstftStream::operator=(IstftStream&&) noexcept = default;
IstftStream::~IstftStream() = default;

Expected<IstftStream> IstftStream::create(const IstftParams& p) {
  RETURN_IF_ERROR(validate_istft_params(p));
  IstftStream s(p);
  s.fft_->inv = kiss_fftr_alloc(p.n_fft, 1, nullptr, nullptr);
  if (!s.fft_->inv) return Status::internal("istft: KissFFT plan allocation failed");
  s.emitted_ = p.pad();  // the first pad positions are trimmed, never returned
  return s;
}

void IstftStream::push(const float* spec, int64_t n_frames, std::vector<float>* out) {
  const int32_t n = p_.n_fft, nb = p_.n_bins();
  // Bin weights that turn KissFFT's unnormalised Hermitian inverse into the chosen
  // convention (istft.h): kTorch 1/n everywhere; kLlamaCpp 1/nb for DC and Nyquist and
  // 1/(2 nb) for the rest (KissFFT counts those twice).
  const float w_edge = p_.scale == IstftScale::kTorch ? 1.0f / n : 1.0f / nb;
  const float w_mid = p_.scale == IstftScale::kTorch ? 1.0f / n : 0.5f / nb;
  for (int64_t f = 0; f < n_frames; ++f) {
    const float* s = spec + f * nb * 2;
    for (int32_t k = 0; k < nb; ++k) {
      const float w = k == 0 || k == nb - 1 ? w_edge : w_mid;
      bins_[2 * k] = s[2 * k] * w;
      bins_[2 * k + 1] = s[2 * k + 1] * w;
    }
    kiss_fftri(fft_->inv, reinterpret_cast<const kiss_fft_cpx*>(bins_.data()), frame_.data());
    // Overlap-add at padded positions [frames_ * hop, frames_ * hop + n).
    const int64_t start = frames_ * p_.hop - base_;
    if (static_cast<int64_t>(acc_.size()) < start + n) {
      acc_.resize(static_cast<size_t>(start + n), 0.0f);
      env_.resize(acc_.size(), 0.0f);
    }
    for (int32_t i = 0; i < n; ++i) {
      acc_[start + i] += frame_[i] * window_[i];
      env_[start + i] += window_[i] * window_[i];
    }
    ++frames_;
    emit(frames_ * p_.hop, out);  // no later frame reaches below its start
  }
}

void IstftStream::emit(int64_t end_padded, std::vector<float>* out) {
  for (int64_t pos = emitted_; pos < end_padded; ++pos) {
    const float e = env_[pos - base_];
    // The envelope is > 0 inside the trimmed range for any valid hop (a periodic Hann is
    // zero only at index 0); the guard keeps a degenerate frame count from dividing by 0.
    out->push_back(e > 1e-11f ? acc_[pos - base_] / e : 0.0f);
  }
  if (end_padded > emitted_) emitted_ = end_padded;
  // Drop what was returned; keep the tail later frames still add to.
  const int64_t drop = emitted_ - base_;
  if (drop > 0 && drop >= static_cast<int64_t>(acc_.size()) / 2) {
    acc_.erase(acc_.begin(), acc_.begin() + drop);
    env_.erase(env_.begin(), env_.begin() + drop);
    base_ += drop;
  }
}

void IstftStream::finish(std::vector<float>* out) {
  if (frames_ > 0) emit((frames_ - 1) * p_.hop + p_.n_fft - p_.pad(), out);
  acc_.clear();
  env_.clear();
  base_ = 0;
  emitted_ = p_.pad();
  frames_ = 0;
}

Expected<std::vector<float>> istft(const IstftParams& p, const float* spec, int64_t n_frames) {
  auto s = IstftStream::create(p);
  if (!s) return s.status();
  std::vector<float> out;
  out.reserve(static_cast<size_t>(n_frames * p.hop));
  s->push(spec, n_frames, &out);
  s->finish(&out);
  return out;
}

Expected<std::vector<float>> stft(const IstftParams& p, const float* x, int64_t n_samples) {
  RETURN_IF_ERROR(validate_istft_params(p));
  if (n_samples <= 0 || n_samples % p.hop)
    return Status::invalid_argument("stft: sample count " + std::to_string(n_samples) +
                                    " is not a positive multiple of hop " + std::to_string(p.hop));
  kiss_fftr_cfg cfg = kiss_fftr_alloc(p.n_fft, 0, nullptr, nullptr);
  if (!cfg) return Status::internal("stft: KissFFT plan allocation failed");
  const std::vector<float> win = periodic_hann(p.n_fft);
  const int64_t n_frames = n_samples / p.hop, nb = p.n_bins();
  std::vector<float> spec(static_cast<size_t>(n_frames * nb * 2));
  std::vector<float> frame(static_cast<size_t>(p.n_fft));
  for (int64_t f = 0; f < n_frames; ++f) {
    // Frame f covers padded positions [f * hop, f * hop + n_fft); signal index = pos - pad.
    for (int32_t i = 0; i < p.n_fft; ++i) {
      const int64_t src = f * p.hop + i - p.pad();
      frame[i] = src >= 0 && src < n_samples ? x[src] * win[i] : 0.0f;
    }
    kiss_fftr(cfg, frame.data(), reinterpret_cast<kiss_fft_cpx*>(spec.data() + f * nb * 2));
  }
  kiss_fftr_free(cfg);
  return spec;
}

}  // namespace edge
