#include "model/vocoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernels/api.h"

namespace edge {

Expected<std::unique_ptr<Vocoder>> Vocoder::load(const std::string& path, const VocoderOptions& o) {
  auto opened = GgufFile::open(path);
  if (!opened) return opened.status();
  auto f = std::make_unique<GgufFile>(std::move(opened).value());
  auto hp = read_wavtokenizer_hparams(*f);
  if (!hp) return hp.status().with_context(path);
  RETURN_IF_ERROR(wavtokenizer_schema(*hp).check(f->tensors()).with_context(path));
  auto w = bind_wavtokenizer_weights(*hp, f->tensors());
  if (!w) return w.status().with_context(path);
  std::unique_ptr<Vocoder> v(new Vocoder());
  v->file_ = std::move(f);
  v->hp_ = *hp;
  v->w_ = std::move(w).value();
  v->opts_ = o;
  v->pool_ =
      std::make_unique<ThreadPool>(o.n_threads > 0 ? o.n_threads : ThreadPool::default_threads());
  RETURN_IF_ERROR(validate_istft_params(v->istft_params()).with_context(path));
  return v;
}

Status Vocoder::check_codes(const int32_t* codes, int64_t n) const {
  for (int64_t i = 0; i < n; ++i)
    if (codes[i] < 0 || codes[i] >= hp_.n_vocab)
      return Status::out_of_range(
          fmt::format("code {} at position {} is outside [0, {})", codes[i], i, hp_.n_vocab));
  return Status();
}

Expected<std::vector<float>> Vocoder::head(const int32_t* codes, int64_t n) const {
  RETURN_IF_ERROR(check_codes(codes, n));
  if (n == 0) return std::vector<float>();
  return wavtokenizer_forward({select_kernels(), *pool_}, hp_, w_, codes, n);
}

std::vector<float> Vocoder::spectrum(const float* rows, int64_t n) const {
  const int64_t nb = hp_.n_bins();
  std::vector<float> spec(static_cast<size_t>(n * nb * 2));
  for (int64_t i = 0; i < n; ++i) {
    const float* r = rows + i * hp_.n_out;
    float* s = spec.data() + i * nb * 2;
    for (int64_t k = 0; k < nb; ++k) {
      const float mag = std::min(std::exp(r[k]), 100.0f);  // exp(inf) caps too
      s[2 * k] = mag * std::cos(r[nb + k]);
      s[2 * k + 1] = mag * std::sin(r[nb + k]);
    }
  }
  return spec;
}

Expected<std::vector<float>> Vocoder::decode(const std::vector<int32_t>& codes) const {
  auto rows = head(codes.data(), static_cast<int64_t>(codes.size()));
  if (!rows) return rows.status();
  const int64_t n = static_cast<int64_t>(codes.size());
  const std::vector<float> spec = spectrum(rows->data(), n);
  return istft(istft_params(), spec.data(), n);
}

Expected<std::vector<float>> Vocoder::decode_windowed(const std::vector<int32_t>& codes,
                                                      const VocoderStreamOptions& o) const {
  auto s = VocoderStream::create(*this, o);
  if (!s) return s.status();
  auto pcm = s->decode_chunk(codes.data(), static_cast<int64_t>(codes.size()));
  if (!pcm) return pcm.status();
  auto rest = s->finish();
  if (!rest) return rest.status();
  pcm->insert(pcm->end(), rest->begin(), rest->end());
  return pcm;
}

Expected<VocoderStream> VocoderStream::create(const Vocoder& v, const VocoderStreamOptions& o) {
  if (o.window < 0 || o.context < 0 || o.lookahead < 0)
    return Status::invalid_argument(
        fmt::format("vocoder stream: window {}, context {}, lookahead {} must not be negative",
                    o.window, o.context, o.lookahead));
  auto istft = IstftStream::create(v.istft_params());
  if (!istft) return istft.status();
  return VocoderStream(v, o, std::move(istft).value());
}

Status VocoderStream::decode_window(int64_t hi, std::vector<float>* out) {
  // Frames [next_, next_ + len) come from decoding codes [lo, hi) and keeping the rows of
  // the window; the context rows on either side are discarded.
  const int64_t len = std::min<int64_t>(o_.window, hi - next_);
  const int64_t lo = std::max<int64_t>(0, next_ - o_.context);
  auto rows = v_->head(codes_.data() + lo, hi - lo);
  if (!rows) return rows.status();
  const int64_t n_out = v_->hparams().n_out;
  const std::vector<float> spec = v_->spectrum(rows->data() + (next_ - lo) * n_out, len);
  istft_.push(spec.data(), len, out);
  next_ += len;
  return Status();
}

Expected<std::vector<float>> VocoderStream::decode_chunk(const int32_t* codes, int64_t n) {
  RETURN_IF_ERROR(v_->check_codes(codes, n));
  codes_.insert(codes_.end(), codes, codes + n);
  std::vector<float> out;
  if (o_.window > 0) {
    // A window is decoded once its lookahead has arrived; until finish() a window never
    // sees more (or fewer) codes than that, whatever the chunking.
    const int64_t have = static_cast<int64_t>(codes_.size());
    while (next_ + o_.window + o_.lookahead <= have)
      RETURN_IF_ERROR(decode_window(next_ + o_.window + o_.lookahead, &out));
  }
  returned_ += static_cast<int64_t>(out.size());
  return out;
}

Expected<std::vector<float>> VocoderStream::finish() {
  std::vector<float> out;
  const int64_t have = static_cast<int64_t>(codes_.size());
  if (o_.window == 0) {
    auto rows = v_->head(codes_.data(), have);
    if (!rows) return rows.status();
    const std::vector<float> spec = v_->spectrum(rows->data(), have);
    istft_.push(spec.data(), have, &out);
  } else {
    while (next_ < have)
      RETURN_IF_ERROR(decode_window(std::min(have, next_ + o_.window + o_.lookahead), &out));
  }
  istft_.finish(&out);
  codes_.clear();
  next_ = 0;
  returned_ = 0;
  return out;
}

}  // namespace edge
