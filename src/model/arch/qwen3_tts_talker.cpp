// Qwen3TtsTalker::load: config.json, the schema check over the HF names, packing the
// matrices, and the two decoders assembled as Models over the shared storage.
#include "model/arch/qwen3_tts_talker.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "core/log.h"
#include "core/memory_ledger.h"
#include "formats/hf_config.h"
#include "model/packed_weights.h"
#include "model/weights.h"
#include "quant/quantize.h"
#include "quant/quantize_file.h"

namespace edge {

struct Qwen3TtsTalker::Storage {
  HfModelDir dir;
  std::vector<std::unique_ptr<AnonymousBuffer>> owned;  // packed matrices
};

Qwen3TtsTalker::~Qwen3TtsTalker() = default;

namespace {

struct PackPlan {
  bool pack = false;
  PackedFormat w4, w8{PackedKind::kW8, 32};
  bool int8 = false;
};

Expected<PackPlan> pack_plan(const std::string& mode) {
  PackPlan p;
  if (mode == "none") return p;
  if (mode != "w4a8" && mode != "w4a16" && mode != "w8")
    return Status::invalid_argument("weights must be w4a8, w4a16, w8 or none (got " + mode + ")");
  QuantizeOptions q;
  q.type = mode == "w8" ? QuantType::kW8 : mode == "w4a8" ? QuantType::kW4A8 : QuantType::kW4A16;
  ASSIGN_OR_RETURN(p.w4, requested_format(q));
  p.pack = true;
  p.int8 = mode != "w4a16";
  return p;
}

// A 2-D matrix ready for the kernels: packed in the plan's format where its K allows (W8
// g32 where K is not a multiple of the group, as `quantize` does), else as stored.
Expected<TensorView> prepare_matrix(const TensorView& t, const PackPlan& plan, int threads,
                                    std::vector<std::unique_ptr<AnonymousBuffer>>* owned) {
  if (!plan.pack || t.shape.size() != 2) return t;
  const int64_t n = t.shape[0], k = t.shape[1];
  PackedFormat f = plan.w4;
  if (k % f.group != 0) {
    if (k % 32 != 0) return t;
    f = plan.w8;
  }
  const uint64_t bytes = static_cast<uint64_t>(f.matrix_bytes(n, k));
  ASSIGN_OR_RETURN(auto buf, AnonymousBuffer::allocate(bytes));
  ASSIGN_OR_RETURN(RowSource src, tensor_row_source(t));
  RETURN_IF_ERROR(quantize_matrix(f, n, k, src, buf->data(), bytes, threads).with_context(t.name));
  TensorView v = t;
  v.dtype = packed_dtype(f);
  v.data = buf->data();
  v.nbytes = bytes;
  owned->push_back(std::move(buf));
  return v;
}

std::vector<float> to_f32(const TensorView& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  reference_kernels().convert_row(t.dtype, t.data, t.numel(), v.data());
  return v;
}

// The canonical tensor set of one decoder: its layers and final norm under `prefix`, plus
// token_embd / output views the caller names (prepared matrices where packed).
Expected<ModelWeights> bind_decoder(const ModelConfig& c, const std::string& prefix,
                                    const std::map<std::string, TensorView>& prepared,
                                    const TensorView& embd, const TensorView& head) {
  TensorSet set;
  for (const auto& [hf, view] : prepared) {
    const std::string name = qwen3_tts_decoder_name(hf, prefix);
    if (name.empty()) continue;
    TensorView v = view;
    v.name = name;
    RETURN_IF_ERROR(set.add(std::move(v)));
  }
  TensorView e = embd, h = head;
  e.name = "token_embd.weight";
  h.name = "output.weight";
  RETURN_IF_ERROR(set.add(std::move(e)));
  RETURN_IF_ERROR(set.add(std::move(h)));
  return bind_weights(c, set, /*norms_plus_one=*/false);
}

// tokenizer.json when the directory has one, else Qwen's vocab.json + merges.txt.
Expected<std::unique_ptr<Tokenizer>> open_tokenizer(const HfModelDir& d) {
  if (!d.tokenizer_json_path.empty()) {
    ASSIGN_OR_RETURN(Tokenizer t, Tokenizer::from_tokenizer_json(d.tokenizer_json_path,
                                                                 d.tokenizer_config_path));
    return std::make_unique<Tokenizer>(std::move(t));
  }
  const std::filesystem::path base(d.dir);
  if (std::filesystem::exists(base / "vocab.json") &&
      std::filesystem::exists(base / "merges.txt")) {
    ASSIGN_OR_RETURN(Tokenizer t, Tokenizer::from_vocab_merges((base / "vocab.json").string(),
                                                               (base / "merges.txt").string(),
                                                               d.tokenizer_config_path));
    return std::make_unique<Tokenizer>(std::move(t));
  }
  return std::unique_ptr<Tokenizer>();
}

}  // namespace

Expected<std::unique_ptr<Qwen3TtsTalker>> Qwen3TtsTalker::load(const std::string& dir,
                                                               const Qwen3TtsLoadOptions& o) {
  std::unique_ptr<Qwen3TtsTalker> t(new Qwen3TtsTalker());
  t->storage_ = std::make_shared<Storage>();
  ASSIGN_OR_RETURN(t->storage_->dir, HfModelDir::open(dir));
  auto cfg = qwen3_tts_config_from_hf(t->storage_->dir.config);
  if (!cfg) return cfg.status().with_context("loading " + dir);
  t->cfg_ = std::move(cfg).value();
  if (o.pool) {
    t->pool_ = o.pool;
  } else {
    t->owned_pool_ =
        std::make_unique<ThreadPool>(o.n_threads > 0 ? o.n_threads : ThreadPool::default_threads());
    t->pool_ = t->owned_pool_.get();
  }
  Status st = t->bind(o);
  if (!st.ok()) return st.with_context("loading " + dir);
  if (o.load_tokenizer) {
    auto tok = open_tokenizer(t->storage_->dir);
    if (!tok) return tok.status().with_context("loading " + dir);
    t->tokenizer_ = std::move(tok).value();
  }
  release_free_heap();
  log_info("loaded {} (qwen3-tts talker {}; code predictor {}; {} speakers, {} languages)", dir,
           describe_config(t->cfg_.talker), describe_config(t->cfg_.predictor),
           t->cfg_.speakers.size(), t->cfg_.languages.size());
  return t;
}

Status Qwen3TtsTalker::bind(const Qwen3TtsLoadOptions& o) {
  const Qwen3TtsConfig& c = cfg_;
  const TensorSet& all = storage_->dir.weights.tensors();
  const TensorSchema schema = qwen3_tts_schema(c);
  RETURN_IF_ERROR(schema.check(all));
  ASSIGN_OR_RETURN(PackPlan plan, pack_plan(o.weights));
  // Every tensor of the schema, matrices packed once (the decoders and the extra tables
  // below share these views).
  std::map<std::string, TensorView> prepared;
  for (const TensorSpec& spec : schema.specs()) {
    const TensorView* v = all.find(spec.name);
    if (!v) continue;  // an absent optional tensor
    ASSIGN_OR_RETURN(prepared[spec.name],
                     prepare_matrix(*v, plan, pool_->size(), &storage_->owned));
  }
  auto get = [&](const std::string& name) { return prepared.at(name); };
  ASSIGN_OR_RETURN(ModelWeights tw, bind_decoder(c.talker, kQwen3TtsTalkerPrefix, prepared,
                                                 get("talker.model.codec_embedding.weight"),
                                                 get("talker.codec_head.weight")));
  // The predictor's inputs are always spliced rows (its embeddings are per codebook and
  // talker-wide), so its token_embd is never read: it is bound to the first head, which
  // is also the head of its first step.
  const TensorView head0 = get(qwen3_tts_predictor_head_name(0));
  ASSIGN_OR_RETURN(ModelWeights pw,
                   bind_decoder(c.predictor, kQwen3TtsPredictorPrefix, prepared, head0, head0));
  LoadOptions lo;
  lo.pool = pool_;
  ASSIGN_OR_RETURN(talker_, Model::assemble(c.talker, std::move(tw), storage_, lo, plan.int8));
  ASSIGN_OR_RETURN(predictor_,
                   Model::assemble(c.predictor, std::move(pw), storage_, lo, plan.int8));
  text_embd_ = get("talker.model.text_embedding.weight");
  fc1_ = get("talker.text_projection.linear_fc1.weight");
  fc2_ = get("talker.text_projection.linear_fc2.weight");
  fc1_b_ = to_f32(get("talker.text_projection.linear_fc1.bias"));
  fc2_b_ = to_f32(get("talker.text_projection.linear_fc2.bias"));
  for (int g = 0; g + 1 < c.n_code_groups; ++g) {
    cp_embd_.push_back(get(qwen3_tts_predictor_embedding_name(g)));
    cp_head_.push_back(get(qwen3_tts_predictor_head_name(g)));
  }
  if (c.has_projection()) {
    proj_ = get("talker.code_predictor.small_to_mtp_projection.weight");
    proj_b_ = to_f32(get("talker.code_predictor.small_to_mtp_projection.bias"));
  }
  return Status();
}

int64_t Qwen3TtsTalker::packed_bytes() const {
  int64_t n = 0;
  for (const auto& b : storage_->owned) n += static_cast<int64_t>(b->size());
  return n;
}

int64_t Qwen3TtsTalker::kv_bytes(KvType type, int64_t positions) const {
  const ModelConfig& t = cfg_.talker;
  const int64_t blocks = (positions + 15) / 16;
  return 2 * t.n_layer * blocks * 16 * kv_row_bytes(type, t.n_head_kv, t.head_dim);
}

void Qwen3TtsTalker::project_text(std::span<const int32_t> ids, float* out) const {
  const KernelTable& k = talker_->kernels();
  const int64_t n = static_cast<int64_t>(ids.size()), th = cfg_.text_hidden, h = cfg_.talker.n_embd;
  std::vector<float> x(static_cast<size_t>(n * th)), y(static_cast<size_t>(n * th));
  for (int64_t i = 0; i < n; ++i)
    embedding_row(k, text_embd_, ids[static_cast<size_t>(i)], x.data() + i * th);
  // text_projection: linear_fc2(silu(linear_fc1(x))), both with bias.
  matmul(k, x.data(), n, fc1_, y.data(), *pool_);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < th; ++d) {
      float& v = y[static_cast<size_t>(i * th + d)];
      v += fc1_b_[static_cast<size_t>(d)];
      v = v / (1.0f + std::exp(-v));
    }
  matmul(k, y.data(), n, fc2_, out, *pool_);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < h; ++d) out[i * h + d] += fc2_b_[static_cast<size_t>(d)];
}

void Qwen3TtsTalker::to_predictor_width(const float* in, int64_t n, float* out) const {
  const int64_t h = cfg_.talker.n_embd, ph = cfg_.predictor.n_embd;
  if (!cfg_.has_projection()) {
    std::copy_n(in, n * h, out);
    return;
  }
  matmul(predictor_->kernels(), in, n, proj_, out, *pool_);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < ph; ++d) out[i * ph + d] += proj_b_[static_cast<size_t>(d)];
}

void Qwen3TtsTalker::frame_embedding(const int32_t* frame, float* out) const {
  const int64_t h = cfg_.talker.n_embd;
  const KernelTable& k = talker_->kernels();
  // Codebook 0 through the talker's codec embedding, codebook g >= 1 through the
  // predictor's table g - 1 (talker-wide rows).
  embedding_row(k, talker_->weights().token_embd, frame[0], out);
  std::vector<float> row(static_cast<size_t>(h));
  for (int g = 1; g < cfg_.n_code_groups; ++g) {
    embedding_row(k, cp_embd_[static_cast<size_t>(g - 1)], frame[g], row.data());
    for (int64_t d = 0; d < h; ++d) out[d] += row[static_cast<size_t>(d)];
  }
}

}  // namespace edge
