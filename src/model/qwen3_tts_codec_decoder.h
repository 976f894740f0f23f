// The Qwen3-TTS 12 Hz codec decoder as a component: frames of codes -> 24 kHz PCM, whole
// utterances or as frames arrive. Graph and weights: model/arch/qwen3_tts_codec.h.
//
// Streaming is exact: every operation of the decoder is causal, so a Qwen3TtsCodecStream fed
// any split of an utterance's frames returns, frame by frame, the samples of decode() on the
// whole utterance (tests/model/qwen3_tts_codec_test.cpp checks it bit for bit). A frame's
// 1920 samples are final as soon as the frame has been decoded: no lookahead.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "formats/hf_config.h"
#include "model/arch/qwen3_tts_codec.h"

namespace edge {

struct Qwen3TtsCodecOptions {
  int32_t n_threads = 0;  // matmul threads; 0: ThreadPool::default_threads()
  ThreadPool* pool = nullptr;  // run on this pool instead (must outlive the codec)
};

// One decode at a time per codec (its pool runs one region at a time); streams of one codec
// must not decode concurrently.
class Qwen3TtsCodec {
 public:
  // A tokenizer directory (config.json with model_type qwen3_tts_tokenizer_12hz and its
  // safetensors), or a Qwen3-TTS model directory holding one under speech_tokenizer/.
  static Expected<std::unique_ptr<Qwen3TtsCodec>> load(
      const std::string& dir, const Qwen3TtsCodecOptions& o = Qwen3TtsCodecOptions());

  const Qwen3TtsCodecHparams& hparams() const { return hp_; }
  int32_t sample_rate() const { return hp_.sample_rate; }
  int64_t samples_per_frame() const { return hp_.samples_per_frame(); }
  int64_t n_quantizers() const { return hp_.n_quantizers; }

  // codes [n_frames][n_quantizers]: every code in [0, codebook_size), or out_of_range naming
  // the first frame and codebook that is not.
  Status check_codes(const int32_t* codes, int64_t n_frames) const;
  // Whole utterance: codes [n][n_quantizers] -> n * samples_per_frame() samples. The frames
  // go through in chunks of chunk_frames (memory grows with it: ~70 MB of activations per
  // second of audio at the published sizes); the result does not depend on it.
  Expected<std::vector<float>> decode(const std::vector<int32_t>& codes,
                                      int64_t chunk_frames = 25) const;

 private:
  friend class Qwen3TtsCodecStream;
  Qwen3TtsCodec() = default;
  Qwen3TtsCodecExec exec() const {
    return {kernels_ ? *kernels_ : select_kernels(), given_pool_ ? *given_pool_ : *pool_};
  }
  std::unique_ptr<ThreadPool> pool_;
  ThreadPool* given_pool_ = nullptr;
  std::unique_ptr<HfModelDir> dir_;  // mapped: the weights' matrices point into it
  const KernelTable* kernels_ = nullptr;
  Qwen3TtsCodecHparams hp_;
  Qwen3TtsCodecWeights w_;

 public:
  // Tests: run on this kernel table instead of the selected one.
  void use_kernels(const KernelTable& k) { kernels_ = &k; }
};

// One utterance decoded as its frames arrive. The codec must outlive the stream.
class Qwen3TtsCodecStream {
 public:
  explicit Qwen3TtsCodecStream(const Qwen3TtsCodec& c) : c_(&c) {}
  // Appends n whole frames (codes [n][n_quantizers]); returns their n * samples_per_frame()
  // samples, final.
  Expected<std::vector<float>> decode_frames(const int32_t* codes, int64_t n);
  // Forgets the utterance: the next frame starts a new one.
  void reset() { state_ = Qwen3TtsCodecState(); }
  int64_t frames_decoded() const { return state_.pos; }

 private:
  const Qwen3TtsCodec* c_;
  Qwen3TtsCodecState state_;
};

}  // namespace edge
