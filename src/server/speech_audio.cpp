#include "server/speech_audio.h"

#include <algorithm>
#include <cmath>

namespace edge::server {

namespace {

void put_le(std::string& out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

}  // namespace

std::string pcm_s16le(const std::vector<float>& samples) {
  std::string out;
  out.reserve(samples.size() * 2);
  for (float s : samples) {
    const float c = std::clamp(std::isfinite(s) ? s : 0.f, -1.f, 1.f);
    const auto v = static_cast<int16_t>(std::lround(c * 32767.f));
    put_le(out, static_cast<uint16_t>(v), 2);
  }
  return out;
}

std::string wav_header(int32_t sample_rate, int64_t data_bytes) {
  const uint32_t data = data_bytes < 0 ? 0xFFFFFFFFu : static_cast<uint32_t>(data_bytes);
  const uint32_t riff = data_bytes < 0 ? 0xFFFFFFFFu : data + 36;
  std::string h = "RIFF";
  put_le(h, riff, 4);
  h += "WAVEfmt ";
  put_le(h, 16, 4);                                       // fmt chunk size
  put_le(h, 1, 2);                                        // PCM
  put_le(h, 1, 2);                                        // mono
  put_le(h, static_cast<uint32_t>(sample_rate), 4);
  put_le(h, static_cast<uint32_t>(sample_rate) * 2, 4);   // byte rate
  put_le(h, 2, 2);                                        // block align
  put_le(h, 16, 2);                                       // bits per sample
  h += "data";
  put_le(h, data, 4);
  return h;
}

std::vector<float> SpeedChanger::push(const std::vector<float>& in) {
  if (speed_ == 1.0) return in;
  buf_.insert(buf_.end(), in.begin(), in.end());
  std::vector<float> out;
  while (t_ + 1 < static_cast<double>(buf_.size())) {
    const size_t i = static_cast<size_t>(t_);
    const float f = static_cast<float>(t_ - static_cast<double>(i));
    out.push_back(buf_[i] * (1.f - f) + buf_[i + 1] * f);
    t_ += speed_;
  }
  const size_t drop = std::min(static_cast<size_t>(t_), buf_.size());
  buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(drop));
  t_ -= static_cast<double>(drop);
  return out;
}

}  // namespace edge::server
