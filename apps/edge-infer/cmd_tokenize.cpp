// edge-infer tokenize -m MODEL_OR_VOCAB [--vocab-test FILE.inp] [TEXT]
//   --vocab-test: one line per test string, in the ggml .out format (" id id id").
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "core/mapped_file.h"
#include "model_source.h"

namespace edge::cli {
namespace {

// Test files hold strings separated by lines "__ggml_vocab_test__"; every string ends
// with the newline before its separator, which is not part of the string.
std::vector<std::string> split_vocab_test(const std::string& text) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(sep, i);
    if (j == std::string::npos) break;
    out.push_back(text.substr(i, j - i));
    i = j + sep.size();
  }
  return out;
}

struct TokenizeArgs {
  std::string model;
  std::string vocab_test;
  std::string text;
  bool no_special = false;
  bool show_pieces = false;
};

int run_tokenize(const TokenizeArgs& a) {
  auto tok = load_tokenizer(a.model);
  if (!tok) return report_error(tok.status());
  if (!a.vocab_test.empty()) {
    auto text = read_text_file(a.vocab_test);
    if (!text) return report_error(text.status());
    for (const std::string& s : split_vocab_test(*text)) {
      for (int32_t id : (*tok)->encode(s, /*add_special=*/false, /*parse_special=*/false)) std::printf(" %d", id);
      std::printf("\n");
    }
    return 0;
  }
  std::vector<int32_t> ids = (*tok)->encode(a.text, !a.no_special, true);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (a.show_pieces)
      std::printf("%d\t'%s'\n", ids[i], (*tok)->decode({ids[i]}, true).c_str());
    else
      std::printf(i ? ",%d" : "%d", ids[i]);
  }
  if (!a.show_pieces) std::printf("\n");
  return 0;
}

}  // namespace

void register_tokenize(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* sub = app.add_subcommand("tokenize", "Turn text into token ids");
  sub->add_option("-m,--model", args->model, "GGUF model or vocab, HF directory, or tokenizer.json")->required();
  sub->add_option("--vocab-test", args->vocab_test, "a ggml vocab test .inp file; prints the .out format");
  sub->add_option("text", args->text, "text to tokenize");
  sub->add_flag("--no-special", args->no_special, "do not add BOS/EOS");
  sub->add_flag("--pieces", args->show_pieces, "print one id and its text per line");
  sub->callback([args, &ctx] { ctx.exit_code = run_tokenize(*args); });
}

}  // namespace edge::cli
