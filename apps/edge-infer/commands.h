// Subcommand registration. Each cmd_*.cpp adds one subcommand to the CLI and sets
// `exit_code` when it runs; main() returns it. Commands print errors as
// "edge-infer: error: <what>" on stderr and return non-zero; they never abort.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "core/status.h"

namespace edge {
struct RandomModelOptions;  // convert/random_model.h
}  // namespace edge

namespace edge::cli {

struct Context {
  int exit_code = 0;
};

void register_tokenize(CLI::App& app, Context& ctx);
void register_inspect(CLI::App& app, Context& ctx);
void register_generate(CLI::App& app, Context& ctx);
void register_logits(CLI::App& app, Context& ctx);
void register_make_model(CLI::App& app, Context& ctx);
void register_bench(CLI::App& app, Context& ctx);
void register_quantize(CLI::App& app, Context& ctx);
void register_devices(CLI::App& app, Context& ctx);
void register_bandwidth(CLI::App& app, Context& ctx);
void register_fidelity(CLI::App& app, Context& ctx);
void register_serve(CLI::App& app, Context& ctx);
void register_plan(CLI::App& app, Context& ctx);
void register_memory(CLI::App& app, Context& ctx);
void register_bench_init(CLI::App& app, Context& ctx);
void register_measure_rss(CLI::App& app, Context& ctx);
void register_pipeline(CLI::App& app, Context& ctx);
void register_worker(CLI::App& app, Context& ctx);
void register_vocode(CLI::App& app, Context& ctx);
void register_tts(CLI::App& app, Context& ctx);  // tts and bench-tts
void register_grid(CLI::App& app, Context& ctx);
void register_agent_suite(CLI::App& app, Context& ctx);
void register_probe(CLI::App& app, Context& ctx);

// make-model --arch wavtokenizer-dec: a random-weight vocoder (cmd_vocode.cpp).
int make_vocoder(const RandomModelOptions& m, const std::string& out);
// make-model --arch qwen3-tts-tokenizer (cmd_make_codec.cpp); `given` says a flag was set.
int make_qwen3_tts_codec(const RandomModelOptions& m, const std::string& size,
                         const std::function<bool(const char*)>& given, const std::string& out);

// Prints "edge-infer: error: ..." and returns the exit code for a failed Status.
int report_error(const Status& s);
// Parses "1,2,3" into ids; invalid_argument on anything else.
Expected<std::vector<int32_t>> parse_id_list(const std::string& s);

}  // namespace edge::cli

#define RETURN_CODE_IF_ERROR(expr)                        \
  do {                                                    \
    ::edge::Status _st = (expr);                          \
    if (!_st.ok()) return ::edge::cli::report_error(_st); \
  } while (0)
