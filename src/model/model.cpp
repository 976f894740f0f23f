// Model::load for each format (GGUF, Hugging Face directory, llama2.c): hyper-parameters
// through the family table (registry.h), then the schema check, weight binding and the
// memory ledger's charges.
#include "model/model.h"

#include <algorithm>
#include <new>
#include <stdexcept>

#include "core/log.h"
#include "core/memory_ledger.h"
#include "formats/gguf.h"
#include "formats/hf_config.h"
#include "formats/llama2c.h"
#include "model/arch/llama2c_config.h"
#include "model/model_footprint.h"
#include "model/packed_weights.h"
#include "model/registry.h"
#include "quant/packed.h"

namespace edge {

struct Model::Source {
  std::unique_ptr<GgufFile> gguf;
  std::unique_ptr<HfModelDir> hf;
  std::unique_ptr<Llama2cFile> l2c;
  TensorSet canonical;  // HF tensors renamed to canonical names (views, no copies)
  PreparedTensors prepared;  // GGUF tensors ready for the kernels (repacked ones owned here)
  std::shared_ptr<const void> external;  // what an assembled model's weights point into
  // Ledger charges for what the weights and tokenizer hold (released with the model).
  LedgerCharge mapped_charge, vectors_charge, tokenizer_charge;
};

Model::Model() : source_(std::make_unique<Source>()) {}
Model::~Model() = default;

namespace {

// Schema check, then weight binding.
Expected<ModelWeights> check_and_bind(const ArchFamily& fam, const ModelConfig& c,
                                      const TensorSet& tensors, bool norms_plus_one) {
  RETURN_IF_ERROR(validate_config(c));
  RETURN_IF_ERROR(fam.schema(c).check(tensors));
  return bind_weights(c, tensors, norms_plus_one);
}

// Bytes of the F32 vectors bind_weights copied out of the file (norms, biases).
int64_t vector_bytes(const ModelWeights& w) {
  size_t n = w.output_norm.size();
  for (const LayerWeights& l : w.layers) {
    for (const std::vector<float>* v : {&l.attn_norm, &l.bq, &l.bk, &l.bv, &l.q_norm, &l.k_norm,
                                        &l.post_attn_norm, &l.ffn_norm, &l.post_ffn_norm,
                                        &l.router_bias, &l.selection_bias, &l.gate_exps_bias,
                                        &l.up_exps_bias, &l.down_exps_bias, &l.shexp_gate, &l.bo,
                                        &l.attn_sinks})
      n += v->size();
  }
  return static_cast<int64_t>(n * sizeof(float));
}

// Heap growth across a construction on this thread (what the new object keeps), or -1
// when the allocator cannot say.
class HeapDelta {
 public:
  HeapDelta() : before_(heap_in_use_bytes()) {}
  int64_t bytes() const {
    // No growth across building a tokenizer means the allocator does not report (a
    // sanitizer's allocator, whose mallinfo is empty): unknown, not zero.
    const int64_t now = heap_in_use_bytes();
    return before_ < 0 || now < 0 || now <= before_ ? -1 : now - before_;
  }

 private:
  int64_t before_;
};

}  // namespace

// Charges the ledger: repacked buffers charged themselves (kWeights); here the matrices
// used in place from a mapping (kWeightsMapped, by their bytes: mincore tells how much of
// them is resident), the F32 vectors (kWeights) and the tokenizer (kTokenizer).
void Model::charge_ledger(const TensorSet& in_use) {
  int64_t repacked = 0;
  for (const auto& b : source_->prepared.owned) repacked += static_cast<int64_t>(b->size());
  auto in_owned = [&](const uint8_t* p) {
    for (const auto& b : source_->prepared.owned)
      if (p >= b->data() && p < b->data() + b->size()) return true;
    return false;
  };
  for (const TensorView& t : in_use.all()) {
    if (t.shape.size() < 2 || in_owned(t.data)) continue;
    memory_.weights_mapped += static_cast<int64_t>(t.nbytes);
    memory_.mapped_ranges.emplace_back(t.data, t.nbytes);
    if (t.name.find("_exps.") != std::string::npos ||
        (t.name.find(".ffn_") != std::string::npos && std::count(t.name.begin(), t.name.end(), '.') == 4))
      memory_.expert_ranges.emplace_back(t.data, t.nbytes);
  }
  const int64_t vectors = vector_bytes(weights_) + (encoder_ ? encoder_->weights.vector_bytes() : 0);
  memory_.weights_anon = repacked + vectors;
  source_->mapped_charge.set(MemCategory::kWeightsMapped, memory_.weights_mapped);
  source_->vectors_charge.set(MemCategory::kWeights, vectors);
  source_->tokenizer_charge.set(MemCategory::kTokenizer, memory_.tokenizer);
}

Expected<std::unique_ptr<Model>> Model::load(const std::string& path, const LoadOptions& o) {
  // Sizes come from the file: an allocation the machine cannot satisfy is this file's
  // error, not a crash (the checks above each allocation bound it; this is the backstop).
  try {
    return load_unguarded(path, o);
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("loading " + path +
                                      ": out of memory (a size in the file is larger than this "
                                      "machine can allocate)");
  } catch (const std::length_error& e) {
    return Status::invalid_format("loading " + path + ": a size in the file is too large (" +
                                  e.what() + ")");
  }
}

Expected<std::unique_ptr<Model>> Model::load_unguarded(const std::string& path,
                                                       const LoadOptions& o) {
  std::unique_ptr<Model> m(new Model());
  m->path_ = path;
  ASSIGN_OR_RETURN(m->format_, detect_model_format(path));
  Status st;
  switch (m->format_) {
    case ModelFormat::kHfDir:
      st = m->load_hf(o);
      break;
    case ModelFormat::kGguf:
      st = m->load_gguf(o);
      break;
    case ModelFormat::kLlama2c:
      st = m->load_llama2c();
      break;
  }
  if (!st.ok()) return st.with_context("loading " + path);
  if (o.pool) {
    m->pool_ = o.pool;
  } else {
    m->owned_pool_ = std::make_unique<ThreadPool>(o.n_threads > 0 ? o.n_threads
                                                                   : ThreadPool::default_threads());
    m->pool_ = m->owned_pool_.get();
  }
  m->kernel_table_ = select_kernels();
  m->kernel_table_.packed_int8_activations = m->int8_activations_;
  m->kernels_ = &m->kernel_table_;
  // Return the heap freed during load (parse buffers, repack scratch) to the OS.
  release_free_heap();
  log_info("loaded {} ({}): {}", path, model_format_name(m->format_), describe_config(m->config_));
  return m;
}

Expected<std::unique_ptr<Model>> Model::assemble(ModelConfig config, ModelWeights weights,
                                                 std::shared_ptr<const void> keep,
                                                 const LoadOptions& o, bool int8_activations) {
  RETURN_IF_ERROR(validate_config(config));
  std::unique_ptr<Model> m(new Model());
  m->path_ = config.arch;
  m->format_ = ModelFormat::kHfDir;
  m->config_ = std::move(config);
  m->weights_ = std::move(weights);
  m->source_->external = std::move(keep);
  m->memory_.weights_anon = vector_bytes(m->weights_);
  m->source_->vectors_charge.set(MemCategory::kWeights, m->memory_.weights_anon);
  if (o.pool) {
    m->pool_ = o.pool;
  } else {
    m->owned_pool_ =
        std::make_unique<ThreadPool>(o.n_threads > 0 ? o.n_threads : ThreadPool::default_threads());
    m->pool_ = m->owned_pool_.get();
  }
  m->int8_activations_ = int8_activations;
  m->kernel_table_ = select_kernels();
  m->kernel_table_.packed_int8_activations = int8_activations;
  m->kernels_ = &m->kernel_table_;
  return m;
}

Status Model::load_gguf(const LoadOptions& o) {
  HeapDelta metadata_heap;  // the parsed metadata (token and merge arrays) stays while loaded
  ASSIGN_OR_RETURN(GgufFile f, GgufFile::open(path_, packed_gguf_types()));
  source_->gguf = std::make_unique<GgufFile>(std::move(f));
  const int64_t metadata_bytes = metadata_heap.bytes();
  const GgufFile& g = *source_->gguf;
  ASSIGN_OR_RETURN(std::string arch, g.get_string("general.architecture"));
  if (is_text_encoder_arch(arch)) {
    const int threads = o.n_threads > 0 ? o.n_threads : ThreadPool::default_threads();
    ASSIGN_OR_RETURN(source_->prepared, prepare_gguf_tensors(g, threads));
    RETURN_IF_ERROR(load_text_encoder(g, arch));
    RETURN_IF_ERROR(load_gguf_tokenizer(g, o, metadata_bytes));
    charge_ledger(source_->prepared.tensors);
    return Status();
  }
  const ArchFamily* fam = find_family_gguf(arch);
  if (!fam)
    return Status::unsupported("unsupported architecture '" + arch + "' (known: " +
                               known_architectures() + ")");
  ASSIGN_OR_RETURN(config_, fam->from_gguf(g, arch));
  RETURN_IF_ERROR(validate_config(config_));  // before any tensor is repacked by its sizes
  const int threads = o.n_threads > 0 ? o.n_threads : ThreadPool::default_threads();
  ASSIGN_OR_RETURN(source_->prepared, prepare_gguf_tensors(g, threads));
  ASSIGN_OR_RETURN(weights_, check_and_bind(*fam, config_, source_->prepared.tensors, false));
  // Activations of packed weights: what the file asks for (edge.quant.activations), int8
  // for weights repacked from GGUF block types (integer dot products, as their formats
  // intend), unless the caller chose.
  std::string act = o.activations;
  if (act == "auto")
    act = g.get_string_or("edge.quant.activations", source_->prepared.repacked > 0 ? "int8" : "f32");
  if (act != "f32" && act != "int8")
    return Status::invalid_argument("activations must be auto, f32 or int8 (got " + act + ")");
  int8_activations_ = act == "int8";
  RETURN_IF_ERROR(load_gguf_tokenizer(g, o, metadata_bytes));
  charge_ledger(source_->prepared.tensors);
  return Status();
}

// An encoder's matrices run with float activations: its GGUF block types are repacked for
// the kernels like a decoder's, and the model's default (W4A16 for packed weights) holds.
Status Model::load_text_encoder(const GgufFile& g, const std::string& arch) {
  auto enc = std::make_unique<Encoder>();
  ASSIGN_OR_RETURN(config_, bert_config_from_gguf(g, arch, &enc->hparams));
  RETURN_IF_ERROR(validate_config(config_));
  RETURN_IF_ERROR(bert_schema(config_, enc->hparams).check(source_->prepared.tensors));
  ASSIGN_OR_RETURN(enc->weights, bind_bert_weights(config_, enc->hparams, source_->prepared.tensors));
  encoder_ = std::move(enc);
  return Status();
}

Status Model::load_gguf_tokenizer(const GgufFile& g, const LoadOptions& o, int64_t metadata_bytes) {
  if (o.load_tokenizer && g.find("tokenizer.ggml.model")) {
    HeapDelta tokenizer_heap;
    ASSIGN_OR_RETURN(Tokenizer t, Tokenizer::from_gguf(g));
    tokenizer_ = std::make_unique<Tokenizer>(std::move(t));
    const int64_t tok_bytes = tokenizer_heap.bytes();
    memory_.tokenizer_measured = tok_bytes >= 0 && metadata_bytes >= 0;
    memory_.tokenizer = memory_.tokenizer_measured ? tok_bytes + metadata_bytes
                                                   : estimate_loaded_tokenizer(*tokenizer_, true);
  } else if (metadata_bytes >= 0) {
    memory_.tokenizer = metadata_bytes;
    memory_.tokenizer_measured = true;
  }
  return Status();
}

Status Model::load_hf(const LoadOptions& o) {
  ASSIGN_OR_RETURN(HfModelDir d, HfModelDir::open(path_));
  source_->hf = std::make_unique<HfModelDir>(std::move(d));
  const HfModelDir& h = *source_->hf;
  // Multimodal wrappers (Gemma-3 4B+) keep the language model's fields in text_config.
  const nlohmann::json& cfg =
      h.config.contains("text_config") && h.config["text_config"].is_object() ? h.config["text_config"]
                                                                               : h.config;
  std::string type;
  const ArchFamily* fam = nullptr;
  try {  // config.json is outside input: a field of the wrong type must not throw out
    type = cfg.value("model_type", h.config.value("model_type", std::string()));
    if (type.empty()) return Status::invalid_format("config.json: no model_type");
    fam = find_family_hf(type);
    if (!fam) return Status::unsupported("unsupported architecture '" + type + "'");
    ASSIGN_OR_RETURN(config_, fam->from_hf(cfg));
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid_format(std::string("config.json: ") + e.what());
  }
  for (const TensorView& t : h.weights.tensors().all()) {
    std::string name = fam->hf_tensor_name(t.name);
    if (name.empty()) {
      log_debug("{}: ignoring tensor {}", path_, t.name);
      continue;
    }
    TensorView v = t;
    v.name = name;
    RETURN_IF_ERROR(source_->canonical.add(std::move(v)));
  }
  if (fam->hf_derive) {
    const int threads = o.n_threads > 0 ? o.n_threads : ThreadPool::default_threads();
    RETURN_IF_ERROR(fam->hf_derive(config_, h.weights.tensors(), threads, &source_->prepared));
    for (const TensorView& t : source_->prepared.tensors.all())
      RETURN_IF_ERROR(source_->canonical.add(t));
  }
  ASSIGN_OR_RETURN(weights_, check_and_bind(*fam, config_, source_->canonical, fam->hf_norms_plus_one));
  // Packed cells built from a checkpoint's quantised blocks (GPT-OSS's MXFP4 experts) take
  // int8 activations, as GGUF's repacked blocks do.
  std::string act = o.activations;
  if (act == "auto") act = source_->prepared.repacked > 0 ? "int8" : "f32";
  if (act != "f32" && act != "int8")
    return Status::invalid_argument("activations must be auto, f32 or int8 (got " + act + ")");
  int8_activations_ = act == "int8";
  if (o.load_tokenizer && !h.tokenizer_json_path.empty()) {
    HeapDelta tokenizer_heap;
    ASSIGN_OR_RETURN(Tokenizer t, Tokenizer::from_tokenizer_json(h.tokenizer_json_path,
                                                                 h.tokenizer_config_path));
    tokenizer_ = std::make_unique<Tokenizer>(std::move(t));
    const int64_t tok_bytes = tokenizer_heap.bytes();
    memory_.tokenizer_measured = tok_bytes >= 0;
    memory_.tokenizer = tok_bytes >= 0 ? tok_bytes : estimate_loaded_tokenizer(*tokenizer_, false);
  }
  charge_ledger(source_->canonical);
  return Status();
}

Expected<std::unique_ptr<Tokenizer>> load_model_tokenizer(const std::string& path) {
  ASSIGN_OR_RETURN(ModelFormat format, detect_model_format(path));
  if (format == ModelFormat::kHfDir) {
    ASSIGN_OR_RETURN(HfModelDir d, HfModelDir::open(path));
    if (d.tokenizer_json_path.empty()) return std::unique_ptr<Tokenizer>();
    ASSIGN_OR_RETURN(Tokenizer t,
                     Tokenizer::from_tokenizer_json(d.tokenizer_json_path, d.tokenizer_config_path));
    return std::make_unique<Tokenizer>(std::move(t));
  }
  if (format == ModelFormat::kLlama2c) return std::unique_ptr<Tokenizer>();  // it has none
  ASSIGN_OR_RETURN(GgufFile g, GgufFile::open(path, packed_gguf_types()));
  if (!g.find("tokenizer.ggml.model")) return std::unique_ptr<Tokenizer>();
  ASSIGN_OR_RETURN(Tokenizer t, Tokenizer::from_gguf(g));
  return std::make_unique<Tokenizer>(std::move(t));
}

Status Model::load_llama2c() {
  auto f = Llama2cFile::open(path_);
  if (!f)
    return Status(f.status().code(),
                  "not a GGUF file, HF directory or llama2.c checkpoint: " + f.status().message());
  source_->l2c = std::make_unique<Llama2cFile>(std::move(f).value());
  config_ = llama_config_from_llama2c(source_->l2c->header());
  ASSIGN_OR_RETURN(weights_, check_and_bind(llama_family(), config_, source_->l2c->tensors(), false));
  charge_ledger(source_->l2c->tensors());
  return Status();
}

}  // namespace edge
