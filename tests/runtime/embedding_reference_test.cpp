// Embeddings against an independent implementation: tiny random qwen3 files made by
// make-model (mean pooling and last-position pooling, as their GGUF pooling_type says), each
// prompt's tokens and its L2-normalised embedding as ik_llama.cpp's llama-embedding gave them
// (tests/data/embeddings/qwen3_ik_llama.json, with the commands). Ours, through the engine:
// the same tokens, and every value within 1e-3 (seen: 2.2e-4 at most, cosine 0.9999997).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "convert/random_bert.h"
#include "convert/random_model.h"
#include "edge/engine.h"
#include "model/model.h"

namespace edge {
namespace {

using namespace std::chrono_literals;

nlohmann::json reference() {
  std::ifstream in(std::string(EDGE_TEST_DATA) + "/embeddings/qwen3_ik_llama.json");
  return nlohmann::json::parse(in);
}

TEST(EmbeddingReference, Qwen3MatchesIkLlamaCpp) {
  const nlohmann::json ref = reference();
  const auto dir =
      std::filesystem::temp_directory_path() / ("edge_embref_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const nlohmann::json& m : ref["models"]) {
    const int pooling_type = m["pooling_type"];
    RandomModelOptions o;  // the make_model line of the reference
    o.arch = "qwen3";
    o.n_layer = 2, o.n_embd = 64, o.n_head = 4, o.n_head_kv = 2, o.n_vocab = 512, o.ctx = 512;
    o.seed = 11, o.pooling_type = pooling_type;
    const std::string path = (dir / ("qwen3-p" + std::to_string(pooling_type) + ".gguf")).string();
    ASSERT_TRUE(write_random_model(o, path).ok());
    auto model = Model::load(path, LoadOptions{});
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_EQ((*model)->config().pooling_type, pooling_type);
    auto engine = Engine::create(**model, EngineOptions{});
    ASSERT_TRUE(engine.ok());
    for (const nlohmann::json& p : m["prompts"]) {
      const std::vector<int32_t> ids = (*model)->tokenizer()->encode(p["text"].get<std::string>());
      EXPECT_EQ(ids, p["tokens"].get<std::vector<int32_t>>()) << p["text"];
      auto s = (*engine)->open_session();
      GenerateRequest req;
      req.prompt = ids;
      req.params.max_tokens = 1;
      req.pooling = pooling_type == 1 ? Pooling::kMean : Pooling::kLast;
      auto h = (*engine)->submit(*s, std::move(req));
      ASSERT_TRUE(h.ok()) << h.status().to_string();
      auto c = (*engine)->next(*h, 60s);
      ASSERT_TRUE(c.ok());
      ASSERT_EQ(c->kind, ChunkKind::kDone);
      std::vector<float> v = c->embedding;
      double norm = 0;
      for (float x : v) norm += static_cast<double>(x) * x;
      for (float& x : v) x = static_cast<float>(x / std::sqrt(norm));
      const std::vector<float> want = p["embedding"].get<std::vector<float>>();
      ASSERT_EQ(v.size(), want.size());
      for (size_t i = 0; i < v.size(); ++i)
        EXPECT_NEAR(v[i], want[i], 1e-3f) << p["text"] << " value " << i;
      (void)(*engine)->close_session(*s);
    }
  }
  std::filesystem::remove_all(dir);
}

// BERT-family encoders against llama.cpp's llama-embedding (tests/data/embeddings/
// bert_llama_cpp.json and the script that made it, bert_llama_cpp.py): CLS and mean pooling of
// bert, nomic-bert's mean, and a cross-encoder's rank scores, on files made by
// write_random_bert with the reference's make-model flags. The tokens must match exactly (a
// rank pair is [CLS] query [SEP] [SEP] document [SEP], as our server and llama.cpp's lay it
// out); raw pooled values (up to 2.8 in size) within 2e-3 and scores within 2e-3 (llama.cpp's
// GELU reads a table of F16 inputs; seen: 7.8e-4 at most on values, 2.1e-4 on scores).
TEST(EmbeddingReference, BertFamilyMatchesLlamaCpp) {
  std::ifstream in(std::string(EDGE_TEST_DATA) + "/embeddings/bert_llama_cpp.json");
  const nlohmann::json ref = nlohmann::json::parse(in);
  const auto dir =
      std::filesystem::temp_directory_path() / ("edge_bertref_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const nlohmann::json& m : ref["models"]) {
    const std::string name = m["name"], pooling = m["pooling"];
    RandomBertOptions o;  // the make_model line of the reference
    o.arch = name == "nomic-bert" ? "nomic-bert" : "bert";
    o.n_layer = 2, o.n_embd = 64, o.n_head = 4, o.n_vocab = 400, o.ctx = 512, o.seed = 11;
    if (name == "bert-mean") o.pooling_type = 1;
    o.rerank = pooling == "rank";
    const std::string path = (dir / (name + ".gguf")).string();
    ASSERT_TRUE(write_random_bert(o, path).ok());
    auto model = Model::load(path, LoadOptions{});
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    auto engine = Engine::create(**model, EngineOptions{});
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    const Tokenizer& tok = *(*model)->tokenizer();
    auto s = (*engine)->open_session();
    for (const nlohmann::json& p : m["prompts"]) {
      const std::string text = p["text"];
      std::vector<int32_t> ids;
      if (pooling == "rank") {  // "query[SEP][SEP]document"
        const size_t at = text.find("[SEP][SEP]");
        const std::vector<int32_t> q = tok.encode(text.substr(0, at), false);
        const std::vector<int32_t> d = tok.encode(text.substr(at + 10), false);
        const int32_t cls = tok.vocab().cls_id, sep = tok.vocab().sep_id;
        ids = {cls};
        ids.insert(ids.end(), q.begin(), q.end());
        ids.insert(ids.end(), {sep, sep});
        ids.insert(ids.end(), d.begin(), d.end());
        ids.push_back(sep);
      } else {
        ids = tok.encode(text, true);
      }
      EXPECT_EQ(ids, p["tokens"].get<std::vector<int32_t>>()) << name << ": " << text;
      GenerateRequest req;
      req.prompt = ids;
      req.pooling = pooling == "rank" ? Pooling::kRank : pooling == "cls" ? Pooling::kCls : Pooling::kMean;
      auto h = (*engine)->submit(*s, std::move(req));
      ASSERT_TRUE(h.ok()) << h.status().to_string();
      auto c = (*engine)->next(*h, 60s);
      ASSERT_TRUE(c.ok());
      ASSERT_EQ(c->kind, ChunkKind::kDone);
      if (pooling == "rank") {
        ASSERT_EQ(c->scores.size(), 1u);
        EXPECT_NEAR(c->scores[0], p["score"].get<float>(), 2e-3f) << name << ": " << text;
        continue;
      }
      const std::vector<float> want = p["embedding"].get<std::vector<float>>();
      ASSERT_EQ(c->embedding.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(c->embedding[i], want[i], 2e-3f) << name << ": " << text << " value " << i;
    }
    (void)(*engine)->close_session(*s);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace edge
