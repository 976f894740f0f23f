// Greedy codes of qwen3-tts.cpp's TTSTransformer for given chat token ids, speaker and
// language id: prints one frame per line (16 codes).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tts_transformer.h"

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: port_codes MODEL.gguf SPEAKER LANGUAGE_ID MAX_FRAMES ID...\n");
    return 2;
  }
  qwen3_tts::TTSTransformer t;
  if (!t.load_model(argv[1])) {
    std::fprintf(stderr, "load: %s\n", t.get_error().c_str());
    return 1;
  }
  std::vector<float> spk;
  const float* spk_ptr = nullptr;
  if (std::string(argv[2]) != "-") {
    if (!t.get_named_speaker_embedding(argv[2], spk)) {
      std::fprintf(stderr, "speaker: %s\n", t.get_error().c_str());
      return 1;
    }
    spk_ptr = spk.data();
  }
  const int lang = std::atoi(argv[3]), frames = std::atoi(argv[4]);
  std::vector<int32_t> ids;
  for (int i = 5; i < argc; ++i) ids.push_back(std::atoi(argv[i]));
  std::vector<int32_t> out;
  if (!t.generate(ids.data(), (int32_t)ids.size(), spk_ptr, frames, out, lang, 1.05f, 0.0f, 50,
                  1.0f, 0)) {
    std::fprintf(stderr, "generate: %s\n", t.get_error().c_str());
    return 1;
  }
  const int g = t.get_config().n_codebooks;
  for (size_t f = 0; f < out.size() / g; ++f) {
    for (int i = 0; i < g; ++i) std::printf("%s%d", i ? " " : "", out[f * g + i]);
    std::printf("\n");
  }
  return 0;
}
