// Qwen3-TTS talker and code predictor: config.json, tokenizer files, the prompt layout,
// and the frames of our engine against the naive reference (qwen3_tts_reference.h) on
// random-weight checkpoints of Qwen's layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "convert/random_qwen3_tts.h"
#include "formats/hf_config.h"
#include "model/arch/qwen3_tts_talker.h"
#include "model/forward.h"
#include "model_test_util.h"
#include "quant/packed.h"
#include "qwen3_tts_reference.h"

namespace edge {
namespace {

using testing::temp_dir;

std::unique_ptr<Qwen3TtsTalker> load_talker(const std::string& dir, const std::string& weights) {
  Qwen3TtsLoadOptions o;
  o.n_threads = 2;
  o.weights = weights;
  auto t = Qwen3TtsTalker::load(dir, o);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return t.ok() ? std::move(t).value() : nullptr;
}

std::string write_model(const std::string& name, RandomQwen3TtsOptions o) {
  const std::string dir = temp_dir(name);
  const Status s = write_random_qwen3_tts(o, dir);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return dir;
}

Qwen3TtsGenerateOptions greedy(int frames) {
  Qwen3TtsGenerateOptions g;
  g.talker.greedy = g.predictor.greedy = true;
  g.max_frames = frames;
  return g;
}

// The config a writer produces reads back with every id, speaker and language; Qwen's
// 0.6B ids come out of --codebook 2048.
TEST(Qwen3Tts, ConfigRoundTrip) {
  RandomQwen3TtsOptions o;
  o.codebook = 2048;
  auto c = random_qwen3_tts_config(o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->codec.pad, 2148);
  EXPECT_EQ(c->codec.eos, 2150);
  EXPECT_EQ(c->codec.think_eos, 2157);
  EXPECT_EQ(c->find_language("English")->codec_id, 2050);
  EXPECT_EQ(c->talker.n_vocab, 3072);
  auto back = qwen3_tts_config_from_hf(qwen3_tts_config_to_hf(*c));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->talker.n_layer, c->talker.n_layer);
  EXPECT_EQ(back->predictor.n_vocab, 2048);
  EXPECT_EQ(back->n_code_groups, 16);
  EXPECT_EQ(back->text.tts_eos, c->text.tts_eos);
  ASSERT_EQ(back->speakers.size(), c->speakers.size());
  EXPECT_EQ(back->find_speaker("ERIC")->dialect, "sichuan_dialect");
  EXPECT_EQ(back->mrope_section, c->mrope_section);
  EXPECT_TRUE(back->talker.qk_norm);
}

// Qwen's own config.json (0.6B Base) reads to the published shapes and ids.
TEST(Qwen3Tts, ReadsQwensConfig) {
  auto j =
      read_json_file(std::string(EDGE_SOURCE_DIR) + "/tests/data/qwen3_tts/config_0.6b_base.json");
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  auto c = qwen3_tts_config_from_hf(*j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->talker.n_layer, 28);
  EXPECT_EQ(c->talker.n_embd, 1024);
  EXPECT_EQ(c->talker.head_dim, 128);
  EXPECT_EQ(c->talker.n_head_kv, 8);
  EXPECT_EQ(c->talker.n_vocab, 3072);
  EXPECT_FLOAT_EQ(c->talker.layers[0].rope_theta, 1e6f);
  EXPECT_EQ(c->predictor.n_layer, 5);
  EXPECT_EQ(c->predictor.n_vocab, 2048);
  EXPECT_FALSE(c->has_projection());
  EXPECT_EQ(c->n_code_groups, 16);
  EXPECT_EQ(c->text_vocab, 151936);
  EXPECT_EQ(c->text_hidden, 2048);
  EXPECT_EQ(c->codec.bos, 2149);
  EXPECT_EQ(c->codec.nothink, 2155);
  EXPECT_EQ(c->text.tts_pad, 151671);
  EXPECT_EQ(c->find_language("german")->codec_id, 2053);
  EXPECT_EQ(c->languages.size(), 10u);
  EXPECT_TRUE(c->speakers.empty());
  EXPECT_EQ(c->model_type, "base");
  EXPECT_EQ(c->mrope_section, (std::vector<int32_t>{24, 20, 20}));
  EXPECT_TRUE(c->mrope_interleaved);
  const TensorSchema s = qwen3_tts_schema(*c);
  ASSERT_NE(s.find("talker.model.text_embedding.weight"), nullptr);
  EXPECT_EQ(s.find("talker.model.text_embedding.weight")->shape,
            (std::vector<int64_t>{151936, 2048}));
  EXPECT_EQ(s.find("talker.model.layers.27.self_attn.q_proj.weight")->shape,
            (std::vector<int64_t>{2048, 1024}));
  EXPECT_EQ(s.find(qwen3_tts_predictor_head_name(14))->shape, (std::vector<int64_t>{2048, 1024}));
}

// Config errors name what is wrong.
TEST(Qwen3Tts, ConfigErrorsNameTheKey) {
  auto c = random_qwen3_tts_config({});
  ASSERT_TRUE(c.ok());
  nlohmann::json j = qwen3_tts_config_to_hf(*c);
  auto expect_error = [](const nlohmann::json& bad, const std::string& words) {
    auto r = qwen3_tts_config_from_hf(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status().to_string();
  };
  nlohmann::json bad = j;
  bad.erase("talker_config");
  expect_error(bad, "talker_config");
  bad = j;
  bad["talker_config"]["rope_scaling"]["mrope_section"] = {4, 2, 1};
  expect_error(bad, "mrope_section sums to 7");
  bad = j;
  bad["talker_config"]["spk_id"]["vivian"] = 99999;
  expect_error(bad, "vivian");
  bad = j;
  bad["talker_config"]["spk_is_dialect"]["ryan"] = "klingon_dialect";
  expect_error(bad, "klingon_dialect");
  bad = j;
  bad["talker_config"]["code_predictor_config"].erase("hidden_size");
  expect_error(bad, "hidden_size");
  bad = j;
  bad["talker_config"]["hidden_act"] = "gelu";
  expect_error(bad, "hidden_act");
}

// vocab.json + merges.txt + tokenizer_config.json read as Qwen's processor tokenizes the
// chat string: specials by name, "assistant" one token, byte-level text.
TEST(Qwen3Tts, TokenizerFromVocabAndMerges) {
  const std::string dir = write_model("tok", {});
  auto t = load_talker(dir, "none");
  ASSERT_TRUE(t && t->tokenizer());
  const Qwen3TtsConfig& c = t->config();
  const std::vector<int32_t> ids = t->tokenizer()->encode(
      "<|im_start|>assistant\nhello world<|im_end|>\n<|im_start|>assistant\n", false);
  std::ifstream f(dir + "/vocab.json");
  const nlohmann::json vocab = nlohmann::json::parse(f);
  const int32_t assistant = vocab["assistant"], nl = vocab["\xc4\x8a"], hello = vocab["hello"],
                world = vocab["\xc4\xa0world"];
  EXPECT_EQ(ids, (std::vector<int32_t>{c.text.im_start, assistant, nl, hello, world, c.text.im_end,
                                       nl, c.text.im_start, assistant, nl}));
  EXPECT_EQ(t->tokenizer()->decode({hello, world}), "hello world");
}

// Prompt lengths of both layouts, and a dialect speaker's dialect in place of auto.
TEST(Qwen3Tts, PromptLayout) {
  const std::string dir = write_model("prompt", {});
  auto t = load_talker(dir, "none");
  ASSERT_TRUE(t);
  const std::vector<int32_t> chat = t->tokenizer()->encode(
      "<|im_start|>assistant\nhello world this is a test<|im_end|>\n<|im_start|>assistant\n",
      false);
  const int64_t n_text = static_cast<int64_t>(chat.size()) - 8;
  auto p = t->build_prompt(chat, "vivian", "english", false);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  // role 3, think/bos/lang/eos + speaker + pad (6), text + tts_eos, tts_pad + bos.
  EXPECT_EQ(p->n_rows, 3 + 6 + n_text + 1 + 1);
  EXPECT_EQ(p->n_trailing, 0);
  auto s = t->build_prompt(chat, "vivian", "english", true);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->n_rows, 3 + 6 + 1);
  EXPECT_EQ(s->n_trailing, n_text);  // text[1:] + tts_eos
  auto a = t->build_prompt(chat, "", "auto", false);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->n_rows, 3 + 4 + n_text + 2);  // nothink/bos/eos + pad, no speaker row
  auto dylan_auto = t->build_prompt(chat, "Dylan", "auto", false);
  auto dylan_dialect = t->build_prompt(chat, "dylan", "beijing_dialect", false);
  ASSERT_TRUE(dylan_auto.ok() && dylan_dialect.ok());
  EXPECT_EQ(dylan_auto->rows, dylan_dialect->rows);
  auto dylan_en = t->build_prompt(chat, "dylan", "english", false);
  ASSERT_TRUE(dylan_en.ok());
  EXPECT_NE(dylan_en->rows, dylan_auto->rows);
  auto bad = t->build_prompt(chat, "nobody", "english", false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("nobody"), std::string::npos);
  auto bad_lang = t->build_prompt(chat, "vivian", "elvish", false);
  ASSERT_FALSE(bad_lang.ok());
  EXPECT_NE(bad_lang.status().message().find("elvish"), std::string::npos);
}

// The engine's greedy frames equal the naive reference's, frame for frame, with the
// weights as stored (F32): the prompt layout, the talker, the code predictor, its
// per-codebook embeddings and heads, the frame embedding sum and the masks.
void expect_reference_frames(const RandomQwen3TtsOptions& o, const std::string& name, int frames) {
  const std::string dir = write_model(name, o);
  auto t = load_talker(dir, "none");
  ASSERT_TRUE(t);
  const std::vector<int32_t> chat = t->tokenizer()->encode(
      "<|im_start|>assistant\nhello world<|im_end|>\n<|im_start|>assistant\n", false);
  auto got = t->generate_ids(chat, "ryan", "english", greedy(frames));
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  auto d = HfModelDir::open(dir);
  ASSERT_TRUE(d.ok());
  testing::Qwen3TtsReference ref(*d, t->config());
  const std::vector<int32_t> want = ref.generate(chat, "ryan", "english", frames, 1.05f);
  ASSERT_EQ(got->n_frames(), static_cast<int64_t>(want.size()) / o.n_code_groups);
  for (int64_t f = 0; f < got->n_frames(); ++f)
    for (int g = 0; g < o.n_code_groups; ++g)
      EXPECT_EQ(got->codes[f * o.n_code_groups + g], want[f * o.n_code_groups + g])
          << "frame " << f << " codebook " << g;
}

TEST(Qwen3Tts, GreedyFramesMatchReference) {
  RandomQwen3TtsOptions o;
  o.dtype = DType::F32;
  o.head_dim = 32;  // q width 128 != n_embd 64, as in Qwen's (2048 != 1024)
  o.n_code_groups = 6;
  expect_reference_frames(o, "ref", 5);
}

// A predictor narrower than the talker goes through small_to_mtp_projection (1.7B).
TEST(Qwen3Tts, GreedyFramesMatchReferenceWithProjection) {
  RandomQwen3TtsOptions o;
  o.dtype = DType::F32;
  o.n_code_groups = 4;
  o.cp_n_embd = 32;
  o.cp_n_ff = 64;
  o.text_hidden = 48;
  expect_reference_frames(o, "refproj", 4);
}

// Pearson correlation of two logit rows.
double correlation(const std::vector<float>& a, const std::vector<float>& b) {
  double ma = 0, mb = 0, ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
  ma /= a.size(), mb /= b.size();
  for (size_t i = 0; i < a.size(); ++i) {
    ab += (a[i] - ma) * (b[i] - mb), aa += (a[i] - ma) * (a[i] - ma),
        bb += (b[i] - mb) * (b[i] - mb);
  }
  return ab / std::sqrt(aa * bb);
}

// The talker's logits after the prompt [n_vocab].
std::vector<float> prompt_logits(const Qwen3TtsTalker& t, const std::vector<int32_t>& chat) {
  auto p = t.build_prompt(chat, "vivian", "english", false);
  EXPECT_TRUE(p.ok());
  auto st = InferenceState::create(t.talker(), p->n_rows);
  EXPECT_TRUE(st.ok());
  std::vector<int32_t> zeros(static_cast<size_t>(p->n_rows), 0);
  EmbeddingSplice sp{.pos = 0, .n = p->n_rows, .rows = p->rows.data()};
  auto l = st->forward(zeros, false, std::span(&sp, 1));
  EXPECT_TRUE(l.ok());
  return std::vector<float>(l->begin(), l->end());
}

// Packed weights at widths that take W4 g128: W8 stays within a percent or two of the
// stored weights' logits, W4A8 (the default) follows them (random weights have no
// outliers to protect, so W4 error is what its 16 levels give); codes are codes, and the
// same seed gives the same frames.
TEST(Qwen3Tts, PackedWeightsRunAndAreDeterministic) {
  RandomQwen3TtsOptions o;
  o.n_embd = 128;
  o.head_dim = 32;
  o.n_ff = 256;
  o.text_hidden = 128;
  o.n_code_groups = 16;
  const std::string dir = write_model("packed", o);
  auto packed = load_talker(dir, "w4a8");
  auto w8 = load_talker(dir, "w8");
  auto plain = load_talker(dir, "none");
  ASSERT_TRUE(packed && plain && w8);
  EXPECT_TRUE(is_packed_dtype(packed->talker().weights().layers[0].wq.dtype));
  EXPECT_TRUE(packed->talker().kernels().packed_int8_activations);
  const std::vector<int32_t> chat = plain->tokenizer()->encode(
      "<|im_start|>assistant\nhello world from a random model<|im_end|>\n<|im_start|>assistant\n",
      false);
  const std::vector<float> ref = prompt_logits(*plain, chat), l8 = prompt_logits(*w8, chat),
                           l4 = prompt_logits(*packed, chat);
  // Measured: w8 rel 0.018, correlation 0.9998; w4a8 correlation 0.968.
  EXPECT_LT(testing::rel_diff(l8, ref), 0.03);
  EXPECT_GT(correlation(l8, ref), 0.999);
  EXPECT_GT(correlation(l4, ref), 0.93);
  Qwen3TtsGenerateOptions g;
  g.max_frames = 6;
  g.min_frames = 6;  // the end of speech is masked throughout: six frames
  g.seed = 42;
  auto a = packed->generate("hello world", "vivian", "english", g);
  auto b = packed->generate("hello world", "vivian", "english", g);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().to_string();
  EXPECT_EQ(a->n_frames(), 6);
  EXPECT_FALSE(a->stopped);
  EXPECT_EQ(a->codes, b->codes);
  for (int32_t code : a->codes) {
    EXPECT_GE(code, 0);
    EXPECT_LT(code, o.codebook);
  }
  g.seed = 43;
  auto c = packed->generate("hello world", "vivian", "english", g);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->codes, c->codes);
}

// The KV budget cuts the frames to what fits, and refuses one smaller than the prompt.
TEST(Qwen3Tts, KvBudget) {
  const std::string dir = write_model("budget", {});
  auto t = load_talker(dir, "none");
  ASSERT_TRUE(t);
  const Qwen3TtsConfig& c = t->config();
  const int64_t per_block = 2ll * c.talker.n_layer * 16 *
                            kv_row_bytes(KvType::kF32, c.talker.n_head_kv, c.talker.head_dim);
  Qwen3TtsGenerateOptions g = greedy(100);
  g.kv_budget_bytes = 2 * per_block;  // 32 positions
  auto r = t->generate("hello", "vivian", "english", g);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->n_frames(), 32 - r->prompt_rows);
  g.kv_budget_bytes = per_block / 2;
  auto refused = t->generate("hello", "vivian", "english", g);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("KV budget"), std::string::npos);
}

// A tensor of the wrong shape is refused by its HF name.
TEST(Qwen3Tts, SchemaNamesTheTensor) {
  RandomQwen3TtsOptions o;
  const std::string dir = write_model("schema", o);
  auto d = HfModelDir::open(dir);
  ASSERT_TRUE(d.ok());
  std::vector<TensorView> views = d->weights.tensors().all();
  std::vector<std::vector<uint8_t>> keep;
  for (TensorView& v : views) {
    keep.emplace_back(v.data, v.data + v.nbytes);
    v.data = keep.back().data();
    if (v.name == "talker.code_predictor.lm_head.2.weight") {
      v.shape = {v.shape[0] / 2, v.shape[1] * 2};  // same bytes, wrong shape
    }
  }
  const std::string bad = temp_dir("schema_bad");
  std::filesystem::copy(dir + "/config.json", bad + "/config.json");
  ASSERT_TRUE(write_safetensors(bad + "/model.safetensors", views, {}).ok());
  auto t = Qwen3TtsTalker::load(bad, {});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("talker.code_predictor.lm_head.2.weight"), std::string::npos)
      << t.status().to_string();
}

}  // namespace
}  // namespace edge
