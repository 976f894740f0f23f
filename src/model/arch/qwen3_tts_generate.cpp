// Qwen3TtsTalker: the prompt layout, the frame loop (talker step, then the code predictor
// over the frame), sampling and stopping.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <optional>

#include "model/arch/qwen3_tts_talker.h"
#include "model/forward.h"
#include "model/kv_layout.h"

namespace edge {

namespace {

// Role ids before the text ("<|im_start|>", "assistant", "\n") and closing ids after it
// ("<|im_end|>", "\n", "<|im_start|>", "assistant", "\n") of the tokenized chat string.
constexpr int64_t kRoleIds = 3, kClosingIds = 5;

// Picks an id from logits [n] (modified in place): argmax, or temperature, top-k, top-p
// (HF's warper order) and a draw. Masked entries are -inf.
int32_t pick(float* logits, int32_t n, const Qwen3TtsSampling& s, std::mt19937_64& rng) {
  if (s.greedy || s.temperature <= 0.0f)
    return static_cast<int32_t>(std::max_element(logits, logits + n) - logits);  // first maximum
  std::vector<int32_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  // Descending logits, ties by index (a stable sort's order); with top-k only the first k
  // are ordered: 16 picks a frame over 2048-3072 ids made a whole sort measurable.
  const auto before = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  size_t keep = idx.size();
  if (s.top_k > 0) keep = std::min(keep, static_cast<size_t>(s.top_k));
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(keep), idx.end(), before);
  while (keep > 1 && std::isinf(logits[idx[keep - 1]])) --keep;
  std::vector<double> p(keep);
  const double top = logits[idx[0]] / s.temperature;
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += p[i] = std::exp(logits[idx[i]] / s.temperature - top);
  if (s.top_p < 1.0f) {  // the smallest prefix whose mass reaches top_p (at least one)
    double acc = 0;
    size_t cut = keep;
    for (size_t i = 0; i < keep; ++i) {
      acc += p[i] / sum;
      if (acc >= s.top_p) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    sum = std::accumulate(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(keep), 0.0);
  }
  double u = std::uniform_real_distribution<double>(0.0, sum)(rng);
  for (size_t i = 0; i < keep; ++i) {
    if (u < p[i]) return idx[i];
    u -= p[i];
  }
  return idx[keep - 1];
}

// Codebook-0 logits [n_vocab] as Qwen's generate() shapes them: the repetition penalty
// over the values so far, the control/speaker/language columns masked (all but the end of
// speech, which is masked too before min_frames).
void shape_talker_logits(const Qwen3TtsConfig& c, const Qwen3TtsGenerateOptions& o,
                         const std::vector<int32_t>& seen, int64_t frame, float* logits) {
  if (o.repetition_penalty != 1.0f)
    for (int32_t id : seen) {
      float& x = logits[id];
      x = x < 0 ? x * o.repetition_penalty : x / o.repetition_penalty;
    }
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int32_t id = c.codebook_size(); id < c.talker.n_vocab; ++id)
    if (id != c.codec.eos) logits[id] = ninf;
  if (frame < o.min_frames) logits[c.codec.eos] = ninf;
}

// The codec ids of the prompt: think markers with the language id between them, or
// nothink for "auto" (a dialect speaker's dialect replaces chinese / auto); the speaker's
// row if any; then pad, bos.
Expected<std::vector<int32_t>> codec_prefix(const Qwen3TtsConfig& c, const std::string& speaker,
                                            const std::string& language) {
  const Qwen3TtsSpeaker* spk = nullptr;
  if (!speaker.empty()) {
    spk = c.find_speaker(speaker);
    if (!spk)
      return Status::not_found(
          fmt::format("qwen3-tts: no speaker '{}' in this checkpoint", speaker));
  }
  // The codec prefix: think markers with the language id between them, or nothink for
  // "auto"; a dialect speaker's dialect replaces chinese / auto.
  std::vector<int32_t> codec;
  const Qwen3TtsLanguage* lang = nullptr;
  std::string lowered = language;
  for (char& ch : lowered) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const bool auto_lang = lowered.empty() || lowered == "auto";
  if (!auto_lang) {
    lang = c.find_language(language);
    if (!lang)
      return Status::not_found(
          fmt::format("qwen3-tts: no language '{}' in this checkpoint", language));
  }
  if (spk && !spk->dialect.empty() && (auto_lang || lang->name == "chinese"))
    lang = c.find_language(spk->dialect);
  if (lang)
    codec = {c.codec.think, c.codec.think_bos, lang->codec_id, c.codec.think_eos};
  else
    codec = {c.codec.nothink, c.codec.think_bos, c.codec.think_eos};
  if (spk) codec.push_back(spk->codec_id);
  codec.push_back(c.codec.pad);
  codec.push_back(c.codec.bos);
  return codec;
}

}  // namespace

Expected<Qwen3TtsPrompt> Qwen3TtsTalker::build_prompt(std::span<const int32_t> chat_ids,
                                                      const std::string& speaker,
                                                      const std::string& language,
                                                      bool streaming_text) const {
  const Qwen3TtsConfig& c = cfg_;
  const int64_t n_text = static_cast<int64_t>(chat_ids.size()) - kRoleIds - kClosingIds;
  if (n_text < 1)
    return Status::invalid_argument(fmt::format(
        "qwen3-tts prompt: {} ids; want 3 role ids, at least one text id and 5 closing ids",
        chat_ids.size()));
  for (int32_t id : chat_ids)
    if (id < 0 || id >= c.text_vocab)
      return Status::out_of_range(fmt::format(
          "qwen3-tts prompt: text id {} outside the vocabulary of {}", id, c.text_vocab));
  ASSIGN_OR_RETURN(const std::vector<int32_t> codec, codec_prefix(c, speaker, language));
  const int64_t h = c.talker.n_embd, nc = static_cast<int64_t>(codec.size());
  const KernelTable& k = talker_->kernels();
  auto add_codec = [&](int32_t id, float* row) {
    std::vector<float> e(static_cast<size_t>(h));
    embedding_row(k, talker_->weights().token_embd, id, e.data());
    for (int64_t d = 0; d < h; ++d) row[d] += e[static_cast<size_t>(d)];
  };
  // tts_pad, tts_bos, tts_eos through the text projection.
  std::vector<float> special(static_cast<size_t>(3 * h));
  const int32_t special_ids[3] = {c.text.tts_pad, c.text.tts_bos, c.text.tts_eos};
  project_text(special_ids, special.data());
  const float* pad = special.data();
  const float* bos = pad + h;
  const float* eos = bos + h;
  const std::span<const int32_t> text = chat_ids.subspan(kRoleIds, static_cast<size_t>(n_text));
  std::vector<float> text_rows(static_cast<size_t>(n_text * h));
  project_text(text, text_rows.data());

  Qwen3TtsPrompt p;
  // [role (3)] [tts_pad x (nc - 2), tts_bos] + codec[0, nc - 1) ...
  const int64_t head = kRoleIds + nc - 1;
  p.n_rows = streaming_text ? head + 1 : head + n_text + 2;
  p.rows.assign(static_cast<size_t>(p.n_rows * h), 0.0f);
  project_text(chat_ids.first(kRoleIds), p.rows.data());
  for (int64_t j = 0; j + 1 < nc; ++j) {
    float* row = p.rows.data() + (kRoleIds + j) * h;
    std::copy_n(j + 2 < nc ? pad : bos, h, row);
    add_codec(codec[static_cast<size_t>(j)], row);
  }
  float* tail = p.rows.data() + head * h;
  if (streaming_text) {
    // ... the first text row + codec bos; later text rows (then tts_eos) join the frames.
    std::copy_n(text_rows.data(), h, tail);
    add_codec(c.codec.bos, tail);
    p.n_trailing = n_text;
    p.trailing.assign(text_rows.begin() + h, text_rows.end());
    p.trailing.insert(p.trailing.end(), eos, eos + h);
  } else {
    // ... every text row, tts_eos, each + codec pad; then tts_pad + codec bos.
    for (int64_t i = 0; i <= n_text; ++i) {
      float* row = tail + i * h;
      std::copy_n(i < n_text ? text_rows.data() + i * h : eos, h, row);
      add_codec(c.codec.pad, row);
    }
    float* last = tail + (n_text + 1) * h;
    std::copy_n(pad, h, last);
    add_codec(c.codec.bos, last);
  }
  return p;
}

Status Qwen3TtsTalker::predict_frame(std::span<const float> talker_hidden, int32_t code0,
                                     const Qwen3TtsSampling& s, std::mt19937_64& rng, int32_t* out,
                                     InferenceState* state) const {
  const Qwen3TtsConfig& c = cfg_;
  const int64_t h = c.talker.n_embd, ph = c.predictor.n_embd, cb = c.codebook_size();
  if (static_cast<int64_t>(talker_hidden.size()) != h)
    return Status::invalid_argument(
        fmt::format("predict_frame: hidden row of {} values, want {}", talker_hidden.size(), h));
  if (code0 < 0 || code0 >= cb)
    return Status::out_of_range(
        fmt::format("predict_frame: codebook-0 value {} outside [0, {})", code0, cb));
  const KernelTable& k = predictor_->kernels();
  // The predictor's sequence per frame: [talker hidden, codec embedding of code0], then
  // the predictor's own embedding of each code it emits; the context never exceeds
  // n_code_groups rows and starts empty every frame.
  std::optional<InferenceState> own;
  if (!state) {
    ASSIGN_OR_RETURN(InferenceState fresh, InferenceState::create(*predictor_, c.n_code_groups));
    own.emplace(std::move(fresh));
    state = &*own;
  }
  InferenceState& st = *state;
  st.reset();
  std::vector<float> in(static_cast<size_t>(2 * h)), rows(static_cast<size_t>(2 * ph));
  std::copy(talker_hidden.begin(), talker_hidden.end(), in.begin());
  embedding_row(k, talker_->weights().token_embd, code0, in.data() + h);
  to_predictor_width(in.data(), 2, rows.data());
  std::vector<float> logits(static_cast<size_t>(cb));
  const std::vector<int32_t> zeros(2, 0);
  EmbeddingSplice sp{.pos = 0, .n = 2, .rows = rows.data()};
  ASSIGN_OR_RETURN(std::span<const float> first, st.forward(zeros, false, std::span(&sp, 1)));
  std::copy(first.begin(), first.end(), logits.begin());  // head 0 is the bound output
  out[0] = code0;
  for (int g = 1; g < c.n_code_groups; ++g) {
    out[g] = pick(logits.data(), static_cast<int32_t>(cb), s, rng);
    if (g + 1 == c.n_code_groups) break;
    embedding_row(k, cp_embd_[static_cast<size_t>(g - 1)], out[g], in.data());
    to_predictor_width(in.data(), 1, rows.data());
    sp = EmbeddingSplice{.pos = st.n_past(), .n = 1, .rows = rows.data()};
    RETURN_IF_ERROR(st.forward(std::span(zeros).first(1), false, std::span(&sp, 1)).status());
    matmul(k, st.last_hidden().data(), 1, cp_head_[static_cast<size_t>(g)], logits.data(),
           predictor_->pool());
  }
  return Status();
}

Expected<Qwen3TtsFrames> Qwen3TtsTalker::generate(const std::string& text,
                                                  const std::string& speaker,
                                                  const std::string& language,
                                                  const Qwen3TtsGenerateOptions& o) const {
  if (!tokenizer_)
    return Status::not_found(
        "qwen3-tts: the checkpoint has no tokenizer (vocab.json + merges.txt)");
  const std::string chat = "<|im_start|>assistant\n" + text + "<|im_end|>\n<|im_start|>assistant\n";
  const std::vector<int32_t> ids =
      tokenizer_->encode(chat, /*add_special=*/false, /*parse_special=*/true);
  return generate_ids(ids, speaker, language, o);
}

Expected<Qwen3TtsFrames> Qwen3TtsTalker::generate_ids(std::span<const int32_t> chat_ids,
                                                      const std::string& speaker,
                                                      const std::string& language,
                                                      const Qwen3TtsGenerateOptions& o) const {
  const Qwen3TtsConfig& c = cfg_;
  const int64_t h = c.talker.n_embd;
  if (o.max_frames < 1) return Status::invalid_argument("qwen3-tts: max_frames must be at least 1");
  ASSIGN_OR_RETURN(Qwen3TtsPrompt p, build_prompt(chat_ids, speaker, language, o.streaming_text));
  int64_t max_frames = o.max_frames;
  if (o.kv_budget_bytes > 0) {
    // Whole 16-position blocks, K and V, every layer: what the cache allocates.
    const int64_t per_block = kv_bytes(o.kv_type, 16);
    const int64_t fit = o.kv_budget_bytes / per_block * 16;
    if (fit < p.n_rows + 1)
      return Status::resource_exhausted(fmt::format(
          "qwen3-tts: a KV budget of {} bytes holds {} positions; the prompt needs {} and a frame",
          o.kv_budget_bytes, fit, p.n_rows));
    max_frames = std::min<int64_t>(max_frames, fit - p.n_rows);
  }
  InferenceOptions io;
  io.kv_types = o.kv_type;
  ASSIGN_OR_RETURN(InferenceState st, InferenceState::create(*talker_, p.n_rows + max_frames, io));
  std::mt19937_64 rng(o.seed);
  Qwen3TtsFrames out;
  out.n_groups = c.n_code_groups;
  out.prompt_rows = p.n_rows;
  std::vector<int32_t> zeros(static_cast<size_t>(p.n_rows), 0), seen;
  EmbeddingSplice sp{.pos = 0, .n = p.n_rows, .rows = p.rows.data()};
  ASSIGN_OR_RETURN(std::span<const float> l, st.forward(zeros, false, std::span(&sp, 1)));
  std::vector<float> logits(l.begin(), l.end()), hidden, row(static_cast<size_t>(h));
  std::vector<int32_t> frame(static_cast<size_t>(c.n_code_groups));
  std::vector<float> pad_row(static_cast<size_t>(h));  // tts_pad, projected: after the text
  const int32_t pad_id = c.text.tts_pad;
  project_text(std::span(&pad_id, 1), pad_row.data());
  ASSIGN_OR_RETURN(InferenceState cp, InferenceState::create(*predictor_, c.n_code_groups));
  for (int64_t f = 0; f < max_frames; ++f) {
    shape_talker_logits(c, o, seen, f, logits.data());
    const int32_t code0 = pick(logits.data(), c.talker.n_vocab, o.talker, rng);
    if (code0 == c.codec.eos) {
      out.stopped = true;
      break;
    }
    hidden.assign(st.last_hidden().begin(), st.last_hidden().end());
    RETURN_IF_ERROR(predict_frame(hidden, code0, o.predictor, rng, frame.data(), &cp));
    out.codes.insert(out.codes.end(), frame.begin(), frame.end());
    if (o.on_frame && !o.on_frame(frame))
      return Status::cancelled(fmt::format("qwen3-tts: stopped after {} frames", f + 1));
    if (std::find(seen.begin(), seen.end(), code0) == seen.end()) seen.push_back(code0);
    if (f + 1 == max_frames) break;
    // The next talker row: the frame's embedding sum plus the text row of this step.
    frame_embedding(frame.data(), row.data());
    const float* extra = f < p.n_trailing ? p.trailing.data() + f * h : pad_row.data();
    for (int64_t d = 0; d < h; ++d) row[static_cast<size_t>(d)] += extra[d];
    sp = EmbeddingSplice{.pos = st.n_past(), .n = 1, .rows = row.data()};
    ASSIGN_OR_RETURN(l, st.forward(std::span(zeros).first(1), false, std::span(&sp, 1)));
    logits.assign(l.begin(), l.end());
  }
  return out;
}

}  // namespace edge
