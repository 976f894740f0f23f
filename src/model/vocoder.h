// A vocoder: audio codes -> 24 kHz mono PCM (float, nominally in [-1, 1]). Today one
// family, the WavTokenizer decoder (model/arch/wavtokenizer_dec.h), followed by the
// inverse STFT of its head (kernels/istft.h). Not a causal LM, so not a Model: it has no
// KV cache, no tokenizer, and decodes a sequence of codes at a time.
//
// Streaming. WavTokenizer is bidirectional over the whole utterance (the pos-net's group
// norms take statistics over all positions and its attention is not causal), so with
// exact decoding no sample is final before the last code has arrived: VocoderStream in
// its default (exact) mode returns everything at finish(), identical to decode(). Its
// windowed mode trades that exactness for latency: fixed windows of `window` codes, each
// decoded with `context` codes before and `lookahead` codes after it (discarded), and the
// frames joined by the streaming ISTFT's overlap-add. Window boundaries depend only on
// code positions, so the output is the same however the codes are split into chunks, and
// equal to decode_windowed() of the whole utterance; how far it is from decode() is a
// property of the model and the window, measured, not assumed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "formats/gguf.h"
#include "kernels/istft.h"
#include "model/arch/wavtokenizer_dec.h"

namespace edge {

struct VocoderOptions {
  // How inverse frames are scaled (kernels/istft.h): llama.cpp's tts example by default,
  // the reference this decoder is checked against; kTorch is WavTokenizer's definition.
  IstftScale scale = IstftScale::kLlamaCpp;
  int32_t n_threads = 0;  // matmul threads; 0: ThreadPool::default_threads()
};

struct VocoderStreamOptions {
  int32_t window = 0;     // codes per decoded window; 0: exact (all PCM at finish())
  int32_t context = 0;    // codes before a window decoded with it (windowed mode)
  int32_t lookahead = 0;  // codes after a window decoded with it (windowed mode)
};

// One decode at a time per Vocoder (its thread pool runs one region at a time); streams
// of one Vocoder must not decode concurrently.
class Vocoder {
 public:
  static Expected<std::unique_ptr<Vocoder>> load(const std::string& path,
                                                 const VocoderOptions& o = VocoderOptions());

  const WavTokenizerHparams& hparams() const { return hp_; }
  int32_t sample_rate() const { return kWavTokenizerSampleRate; }
  int32_t samples_per_code() const { return hp_.hop; }
  IstftParams istft_params() const { return {hp_.n_fft, hp_.hop, opts_.scale}; }

  // Every code in [0, n_vocab), or out_of_range naming the first that is not.
  Status check_codes(const int32_t* codes, int64_t n) const;
  // codes [n] -> head rows [n][n_fft + 2] (log-magnitude | phase).
  Expected<std::vector<float>> head(const int32_t* codes, int64_t n) const;
  // head rows [n][n_fft + 2] -> complex bins [n][n_fft / 2 + 1]: magnitude exp(x) capped
  // at 100 (as WavTokenizer and llama.cpp do), phase as given.
  std::vector<float> spectrum(const float* rows, int64_t n) const;
  // Whole utterance, exact: codes [n] -> n * hop samples.
  Expected<std::vector<float>> decode(const std::vector<int32_t>& codes) const;
  // Whole utterance through the windowed stream (VocoderStreamOptions::window > 0).
  Expected<std::vector<float>> decode_windowed(const std::vector<int32_t>& codes,
                                               const VocoderStreamOptions& o) const;

 private:
  Vocoder() = default;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<GgufFile> file_;  // mapped: the weights' matrices point into it
  WavTokenizerHparams hp_;
  WavTokenizerWeights w_;
  VocoderOptions opts_;
};

// Incremental decoding of one utterance: codes in, PCM that is final so far out. The
// Vocoder must outlive the stream.
class VocoderStream {
 public:
  static Expected<VocoderStream> create(const Vocoder& v, const VocoderStreamOptions& o);

  // Appends codes; returns the samples that became final (possibly none).
  Expected<std::vector<float>> decode_chunk(const int32_t* codes, int64_t n);
  // The utterance is complete: returns the rest. Afterwards the stream holds no codes and
  // may start a new utterance.
  Expected<std::vector<float>> finish();

  int64_t codes_received() const { return static_cast<int64_t>(codes_.size()); }
  int64_t samples_returned() const { return returned_; }

 private:
  VocoderStream(const Vocoder& v, const VocoderStreamOptions& o, IstftStream istft)
      : v_(&v), o_(o), istft_(std::move(istft)) {}
  // Decodes the window starting at next_ with codes [lo, hi) and pushes its frames.
  Status decode_window(int64_t hi, std::vector<float>* out);

  const Vocoder* v_;
  VocoderStreamOptions o_;
  IstftStream istft_;
  std::vector<int32_t> codes_;  // the utterance so far
  int64_t next_ = 0;            // first code whose frame is not yet in the ISTFT
  int64_t returned_ = 0;
};

}  // namespace edge
