// edge-infer: one binary, one subcommand per cmd_*.cpp file.
#include <cstdio>
#include <new>
#include <string>

#include "commands.h"
#include "model_source.h"

namespace edge::cli {

int report_error(const Status& s) {
  std::fprintf(stderr, "edge-infer: error: %s\n", s.to_string().c_str());
  switch (s.code()) {
    case StatusCode::kInvalidArgument: return 2;
    case StatusCode::kResourceExhausted: return 3;
    default: return 1;
  }
}

Expected<std::vector<int32_t>> parse_id_list(const std::string& s) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    std::string item = s.substr(i, j - i);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    char* end = nullptr;
    long long v = item.empty() ? 0 : std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < INT32_MIN || v > INT32_MAX)
      return Status::invalid_argument("bad token id list \"" + s + "\": \"" + item + "\" is not an integer");
    ids.push_back(static_cast<int32_t>(v));
    i = j + 1;
  }
  if (ids.empty()) return Status::invalid_argument("empty token id list");
  return ids;
}

}  // namespace edge::cli

int main(int argc, char** argv) {
  CLI::App app{"edge-infer: run language models on edge CPUs"};
  app.require_subcommand(1);
  edge::cli::Context ctx;
  edge::cli::register_demo_artifacts();  // pipeline files may name the demo models
  edge::cli::register_generate(app, ctx);
  edge::cli::register_logits(app, ctx);
  edge::cli::register_tokenize(app, ctx);
  edge::cli::register_inspect(app, ctx);
  edge::cli::register_make_model(app, ctx);
  edge::cli::register_bench(app, ctx);
  edge::cli::register_quantize(app, ctx);
  edge::cli::register_devices(app, ctx);
  edge::cli::register_bandwidth(app, ctx);
  edge::cli::register_fidelity(app, ctx);
  edge::cli::register_serve(app, ctx);
  edge::cli::register_plan(app, ctx);
  edge::cli::register_memory(app, ctx);
  edge::cli::register_bench_init(app, ctx);
  edge::cli::register_measure_rss(app, ctx);
  edge::cli::register_pipeline(app, ctx);
  edge::cli::register_worker(app, ctx);
  edge::cli::register_vocode(app, ctx);
  edge::cli::register_tts(app, ctx);
  edge::cli::register_grid(app, ctx);
  edge::cli::register_agent_suite(app, ctx);
  edge::cli::register_probe(app, ctx);
  // `edge-infer nosuch --help` must not print the main help and exit 0 (CLI11 handles
  // --help before it notices the unknown command): the first word names a command or is
  // an option.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      known |= sub->check_name(argv[1]);
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "edge-infer: error: unknown command '%s' (commands: %s)\n", argv[1],
                   names.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::bad_alloc&) {
    // A size read from an input (model, corpus, request) beyond what this machine can
    // allocate: an error that names the cause, not an abort with a core dump.
    return edge::cli::report_error(
        edge::Status::resource_exhausted("out of memory (an input asked for more than this machine can allocate)"));
  }
  return ctx.exit_code;
}
