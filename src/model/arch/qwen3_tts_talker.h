// The Qwen3-TTS talker and code predictor on our engine: text + speaker + language ->
// frames of n_code_groups codebooks (16) at 12.5 Hz, which the 12 Hz codec decoder turns
// into 24 kHz audio.
//
// Both decoders run through model/forward.h (an assembled Model each, sharing one thread
// pool) over the checkpoint's weights, packed at load (W4A8 by default). Every input row is
// an embedding sum spliced into the pass; the talker's final-normed hidden row feeds the
// code predictor, which starts afresh for every frame.
//
// One generate() at a time per talker (its pool runs one region at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "kernels/api.h"
#include "model/arch/qwen3_tts.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace edge {

class InferenceState;

struct Qwen3TtsLoadOptions {
  int n_threads = 0;           // 0: ThreadPool::default_threads()
  ThreadPool* pool = nullptr;  // run on this pool instead (must outlive the talker)
  // "w4a8" (default): matrices packed W4 sym g128 (W8 g32 where K % 128 != 0), int8
  // activations; "w4a16": the same packing, f32 activations; "w8": W8 g32, int8
  // activations; "none": as the file stores them (F32/F16/BF16), f32 activations.
  std::string weights = "w4a8";
  bool load_tokenizer = true;
};

struct Qwen3TtsSampling {
  bool greedy = false;
  float temperature = 0.9f;
  int32_t top_k = 50;  // 0: all
  float top_p = 1.0f;  // 1: all
};

struct Qwen3TtsGenerateOptions {
  Qwen3TtsSampling talker;     // codebook 0 (Qwen's defaults: sampled, T 0.9, top-k 50)
  Qwen3TtsSampling predictor;  // codebooks 1..g-1 (the same defaults)
  // Over the codebook-0 values generated so far (HF RepetitionPenalty: logit / p when
  // positive, * p when negative); applies to greedy decoding too. 1: off.
  float repetition_penalty = 1.05f;
  int32_t max_frames = 4096;
  int32_t min_frames = 2;  // the end of speech is masked before this many frames
  // false (CustomVoice's default): the whole text is in the prompt and every generated
  // frame adds tts_pad; true: the prompt holds the first text token and frame i adds text
  // token i + 1 (then tts_eos, then tts_pad).
  bool streaming_text = false;
  uint64_t seed = 0;
  KvType kv_type = KvType::kF32;
  // Bytes the talker's KV cache may take (0: as much as prompt + max_frames need). A
  // budget smaller than the prompt's is refused; otherwise max_frames is cut to fit.
  int64_t kv_budget_bytes = 0;
  // Called with each frame ([n_groups] codes) as soon as it is complete, before the talker
  // computes the next one (a stage streams frames to the codec decoder this way). Returning
  // false stops generation: generate() then returns kCancelled.
  std::function<bool(std::span<const int32_t> frame)> on_frame;
};

struct Qwen3TtsFrames {
  int32_t n_groups = 0;
  std::vector<int32_t> codes;  // [n_frames, n_groups], codebook 0 first
  bool stopped = false;        // ended by the end-of-speech id (else by max_frames)
  int64_t prompt_rows = 0;     // talker prompt length
  int64_t n_frames() const {
    return n_groups == 0 ? 0 : static_cast<int64_t>(codes.size()) / n_groups;
  }
};

// A talker prompt: the rows the talker prefills and the rows added to the frames it
// generates (before tts_pad takes over). Both [n, talker n_embd].
struct Qwen3TtsPrompt {
  std::vector<float> rows;
  std::vector<float> trailing;
  int64_t n_rows = 0, n_trailing = 0;
};

class Qwen3TtsTalker {
 public:
  // `dir`: a Qwen3-TTS checkpoint directory (config.json with model_type qwen3_tts,
  // *.safetensors; tokenizer.json, or vocab.json + merges.txt, for text input).
  static Expected<std::unique_ptr<Qwen3TtsTalker>> load(const std::string& dir,
                                                        const Qwen3TtsLoadOptions& o = {});
  ~Qwen3TtsTalker();

  const Qwen3TtsConfig& config() const { return cfg_; }
  const Model& talker() const { return *talker_; }
  const Model& predictor() const { return *predictor_; }
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  // Bytes of the matrices packed at load (anonymous memory: the bulk of what the talker
  // holds; matrices used as stored stay in the file's mapping).
  int64_t packed_bytes() const;
  // KV bytes one utterance's talker cache takes for `positions` (whole 16-position blocks,
  // K and V, every layer).
  int64_t kv_bytes(KvType type, int64_t positions) const;

  // Text -> frames: the text is wrapped as "<|im_start|>assistant\n{text}<|im_end|>\n
  // <|im_start|>assistant\n" and tokenized, as Qwen's processor does. speaker "" (no
  // speaker row) or a spk_id name; language "auto" or a codec_language_id name.
  Expected<Qwen3TtsFrames> generate(const std::string& text, const std::string& speaker,
                                    const std::string& language,
                                    const Qwen3TtsGenerateOptions& o = {}) const;
  // The same from the tokenized chat string: 3 role ids, the text ids, 5 closing ids.
  Expected<Qwen3TtsFrames> generate_ids(std::span<const int32_t> chat_ids,
                                        const std::string& speaker, const std::string& language,
                                        const Qwen3TtsGenerateOptions& o = {}) const;
  Expected<Qwen3TtsPrompt> build_prompt(std::span<const int32_t> chat_ids,
                                        const std::string& speaker, const std::string& language,
                                        bool streaming_text) const;
  // Codebooks 1..g-1 of one frame from the talker's final-normed hidden row [n_embd] and
  // codebook 0; out [n_groups] (out[0] = code0).
  // `state`: a predictor state of n_code_groups positions to reuse (reset here); null: a
  // fresh one.
  Status predict_frame(std::span<const float> talker_hidden, int32_t code0,
                       const Qwen3TtsSampling& s, std::mt19937_64& rng, int32_t* out,
                       InferenceState* state = nullptr) const;
  // The talker input row of a finished frame: the sum of its codebook embeddings [n_embd].
  void frame_embedding(const int32_t* frame, float* out) const;
  // Text ids -> projected rows [n, talker n_embd] (text_embedding, then text_projection).
  void project_text(std::span<const int32_t> ids, float* out) const;

 private:
  struct Storage;  // the open checkpoint and the packed buffers every view points into
  Qwen3TtsTalker() = default;
  Status bind(const Qwen3TtsLoadOptions& o);
  // Predictor input rows [n, talker n_embd] -> [n, predictor n_embd] (the projection).
  void to_predictor_width(const float* in, int64_t n, float* out) const;

  Qwen3TtsConfig cfg_;
  std::shared_ptr<Storage> storage_;
  std::unique_ptr<ThreadPool> owned_pool_;
  ThreadPool* pool_ = nullptr;
  std::unique_ptr<Model> talker_, predictor_;
  std::unique_ptr<Tokenizer> tokenizer_;
  // Tensors outside the two decoders (views into storage_).
  TensorView text_embd_;              // [text_vocab, text_hidden]
  TensorView fc1_, fc2_;              // [text_hidden, text_hidden], [n_embd, text_hidden]
  std::vector<float> fc1_b_, fc2_b_;  // [text_hidden], [n_embd]
  std::vector<TensorView> cp_embd_;   // [g - 1] of [codebook, talker n_embd]
  std::vector<TensorView> cp_head_;   // [g - 1] of [codebook, predictor n_embd]
  TensorView proj_;                   // [predictor n_embd, talker n_embd] if widths differ
  std::vector<float> proj_b_;         // [predictor n_embd]
};

}  // namespace edge
