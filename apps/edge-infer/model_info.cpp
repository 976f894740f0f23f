#include "model_info.h"

#include <cstdio>

#include "model/model.h"

namespace edge::cli {

void print_model_info(const std::string& path) {
  LoadOptions opts;
  opts.n_threads = 1;
  auto m = Model::load(path, opts);
  if (!m) {
    std::printf("model: not loadable: %s\n", m.status().to_string().c_str());
    return;
  }
  const ModelConfig& c = (*m)->config();
  std::printf("architecture: %s\n", c.arch.c_str());
  std::printf("hyper-parameters: %s\n", describe_config(c).c_str());
  std::printf("layers:\n");
  for (size_t l = 0; l < c.layers.size(); ++l) {
    const LayerConfig& lc = c.layers[l];
    std::printf("  %2zu %-7s window %-6d rope theta %-10g rotary dims %d\n", l, lc.sliding ? "sliding" : "global",
                lc.window, lc.rope_theta, lc.rotary_dim);
  }
  const Tokenizer* tok = (*m)->tokenizer();
  if (tok)
    std::printf("tokenizer: %d tokens, bos %d, eos %d, chat template %s\n", tok->n_vocab(), tok->bos_id(),
                tok->eos_id(), tok->chat_template().empty() ? "none" : "present");
  else
    std::printf("tokenizer: none (use --prompt-ids)\n");
}

}  // namespace edge::cli
