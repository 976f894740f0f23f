// A loaded model: its config, its weights (views into the mapped file), its tokenizer (if
// the file carries one), the kernel table and a thread pool. Model::load reads the formats
// detect_model_format (formats/model_format.h) tells apart: a GGUF file, a Hugging Face
// directory (config.json + safetensors, tokenizer.json) or a llama2.c checkpoint (.bin; no
// tokenizer).
// The model is immutable after load; per-sequence state lives in InferenceState. Forward
// passes run on the model's thread pool, which runs one parallel region at a time: call
// forward() of the states of one model from one thread at a time.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "formats/model_format.h"
#include "kernels/api.h"
#include "model/arch/bert.h"
#include "model/config.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"

namespace edge {

struct LoadOptions {
  int n_threads = 0;            // 0: ThreadPool::default_threads()
  ThreadPool* pool = nullptr;   // use this pool instead of owning one (must outlive the model)
  bool load_tokenizer = true;
  // Activations for packed weights: "auto" (the file's edge.quant.activations; int8 for
  // weights repacked from GGUF block types), "f32" (W4A16) or "int8" (W4A8).
  std::string activations = "auto";
};

// What a loaded model holds, as charged to the memory ledger (core/memory_ledger.h).
struct ModelMemory {
  int64_t weights_anon = 0;     // repacked matrices + F32 copies of vectors (norms, biases)
  int64_t weights_mapped = 0;   // matrices used in place from the mapped file(s)
  int64_t tokenizer = 0;        // tokenizer tables (+ GGUF metadata arrays kept open)
  bool tokenizer_measured = false;  // from the heap counters (else an estimate)
  // [data, data + bytes) of every mapped weight matrix, for mincore residency.
  std::vector<std::pair<const uint8_t*, uint64_t>> mapped_ranges;
  // The MoE experts among them (a pre-packed MoE file keeps its experts file-backed).
  std::vector<std::pair<const uint8_t*, uint64_t>> expert_ranges;
};

// The tokenizer of a model file or directory without its weights (for a process that
// templates and tokenises for a model another process runs). Null when it has none.
Expected<std::unique_ptr<Tokenizer>> load_model_tokenizer(const std::string& path);

class Model {
 public:
  static Expected<std::unique_ptr<Model>> load(const std::string& path,
                                               const LoadOptions& options = {});
  // A model whose config and weights the caller read and bound: one decoder of a
  // checkpoint that holds several (the Qwen3-TTS talker and its code predictor share one
  // safetensors set). `keep` owns what the weight views point into; no tokenizer. Packed
  // weights run with int8 activations (W4A8) when int8_activations is set.
  static Expected<std::unique_ptr<Model>> assemble(ModelConfig config, ModelWeights weights,
                                                   std::shared_ptr<const void> keep,
                                                   const LoadOptions& options,
                                                   bool int8_activations);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  // Null for a llama2.c checkpoint, or when load_tokenizer was false.
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  const KernelTable& kernels() const { return *kernels_; }
  ThreadPool& pool() const { return *pool_; }
  // The first engine over this model runs on its pool; a second one gets false here and
  // brings its own (a pool runs one region at a time). release_pool() when done.
  bool claim_pool() const { return !pool_claimed_.exchange(true); }
  void release_pool() const { pool_claimed_.store(false); }
  ModelFormat format() const { return format_; }
  const std::string& path() const { return path_; }
  const ModelMemory& memory() const { return memory_; }
  // A BERT-family text encoder (config().encoder_only): its extras and weights, which an
  // encoder engine runs with bert_encode; null for every decoder.
  const BertHparams* encoder_hparams() const { return encoder_ ? &encoder_->hparams : nullptr; }
  const BertWeights* encoder_weights() const { return encoder_ ? &encoder_->weights : nullptr; }

 private:
  struct Source;  // the open file(s) the weight views point into
  void charge_ledger(const TensorSet& in_use);
  Model();
  static Expected<std::unique_ptr<Model>> load_unguarded(const std::string& path,
                                                         const LoadOptions& o);
  Status load_gguf(const LoadOptions& o);
  Status load_hf(const LoadOptions& o);
  Status load_text_encoder(const GgufFile& g, const std::string& arch);
  Status load_gguf_tokenizer(const GgufFile& g, const LoadOptions& o, int64_t metadata_bytes);
  Status load_llama2c();

  std::string path_;
  ModelFormat format_ = ModelFormat::kGguf;
  ModelConfig config_;
  ModelWeights weights_;
  std::unique_ptr<Source> source_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ThreadPool> owned_pool_;
  ThreadPool* pool_ = nullptr;
  mutable std::atomic<bool> pool_claimed_{false};
  const KernelTable* kernels_ = nullptr;
  KernelTable kernel_table_;  // the selected table plus this model's activation mode
  bool int8_activations_ = false;
  ModelMemory memory_;
  struct Encoder {
    BertHparams hparams;
    BertWeights weights;
  };
  std::unique_ptr<Encoder> encoder_;
};

}  // namespace edge
