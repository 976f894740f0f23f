// Qwen3-TTS talker + code predictor against qwen3-tts.cpp (an independent C++ port on
// ggml): the greedy frames it produced for a random-weight checkpoint of Qwen's layout
// (tests/data/qwen3_tts/, made by make_reference.sh there), which this test writes again
// with the same options and decodes with our engine.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "convert/random_qwen3_tts.h"
#include "model/arch/qwen3_tts_talker.h"
#include "model_test_util.h"

namespace edge {
namespace {

struct PortReference {
  std::vector<int32_t> chat_ids;
  std::string speaker;
  int32_t language_id = 0;
  std::vector<std::vector<int32_t>> frames;
};

// port_codes.txt: "ids: ...", "speaker: NAME", "language_id: N", then one frame per line.
PortReference read_reference(const std::string& path) {
  PortReference r;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string head;
    if (line.rfind("ids:", 0) == 0) {
      ss >> head;
      for (int32_t v; ss >> v;) r.chat_ids.push_back(v);
    } else if (line.rfind("speaker:", 0) == 0) {
      ss >> head >> r.speaker;
    } else if (line.rfind("language_id:", 0) == 0) {
      ss >> head >> r.language_id;
    } else {
      std::vector<int32_t> f;
      for (int32_t v; ss >> v;) f.push_back(v);
      r.frames.push_back(std::move(f));
    }
  }
  return r;
}

// make_reference.sh's checkpoint: make-model --arch qwen3-tts --layers 2 --dim 256
// --heads 4 --kv-heads 2 --head-dim 64 --ffn 512 --cp-layers 2 --codebook 2048
// --text-dim 256 --type f32 --seed 7 (Qwen's codec ids, 16 codebooks).
RandomQwen3TtsOptions reference_options() {
  RandomQwen3TtsOptions o;
  o.n_layer = 2;
  o.n_embd = 256;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.head_dim = 64;
  o.n_ff = 512;
  o.cp_n_layer = 2;
  o.codebook = 2048;
  o.text_hidden = 256;
  o.dtype = DType::F32;
  o.seed = 7;
  return o;
}

// Greedy, streaming text (the port's layout), the port's stopping (the end of speech is
// not masked at the start) and Qwen's repetition penalty 1.05: every frame of every
// codebook equals the port's, with the weights as stored (F32).
TEST(Qwen3TtsConformance, GreedyFramesMatchQwen3TtsCpp) {
  const PortReference ref =
      read_reference(std::string(EDGE_SOURCE_DIR) + "/tests/data/qwen3_tts/port_codes.txt");
  ASSERT_FALSE(ref.frames.empty());
  const std::string dir = testing::temp_dir("qwen3_tts_port");
  ASSERT_TRUE(write_random_qwen3_tts(reference_options(), dir).ok());
  Qwen3TtsLoadOptions lo;
  lo.weights = "none";
  lo.n_threads = 2;
  auto t = Qwen3TtsTalker::load(dir, lo);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  // The prompt's text ids are what our tokenizer makes of the text the script used.
  EXPECT_EQ((*t)->tokenizer()->encode("<|im_start|>assistant\nhello world this is a test of "
                                      "voice<|im_end|>\n<|im_start|>assistant\n",
                                      false),
            ref.chat_ids);
  std::string language;
  for (const Qwen3TtsLanguage& l : (*t)->config().languages)
    if (l.codec_id == ref.language_id) language = l.name;
  ASSERT_FALSE(language.empty());
  Qwen3TtsGenerateOptions g;
  g.talker.greedy = g.predictor.greedy = true;
  g.streaming_text = true;
  g.min_frames = 0;
  g.max_frames = static_cast<int32_t>(ref.frames.size());
  auto got = (*t)->generate_ids(ref.chat_ids, ref.speaker, language, g);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->n_frames(), static_cast<int64_t>(ref.frames.size()));
  for (size_t f = 0; f < ref.frames.size(); ++f)
    for (int c = 0; c < got->n_groups; ++c)
      EXPECT_EQ(got->codes[f * got->n_groups + c], ref.frames[f][static_cast<size_t>(c)])
          << "frame " << f << " codebook " << c;
}

}  // namespace
}  // namespace edge
