// edge-infer serve [-m MODEL] [--host 127.0.0.1] [--port 8080] [--api-key K] [--ctx N]
//   [--max-seqs S] [--max-batched-tokens T] [--kv-budget B] [--chat-template-file F] [-t N]
// An OpenAI-compatible HTTP server (src/server) over the engine. Without -m it serves the
// built-in demo model (random weights: its text is noise). Prints
// "edge-infer: listening on http://HOST:PORT" once it accepts connections (--port 0 picks
// a free port); SIGINT / SIGTERM stop it.
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "commands.h"
#include "core/mapped_file.h"
#include "core/memory_ledger.h"
#include "edge/engine.h"
#include "model/model.h"
#include "model/model_footprint.h"
#include "model_source.h"
#include "plan_options.h"
#include "server/http_server.h"

namespace edge::cli {
namespace {

struct ServeArgs {
  std::string model;
  std::string name;
  std::string chat_template_file;
  std::string kv_budget;
  std::string kv_type = "f16";
  std::string memory_limit;  // the memory plan refuses before loading what cannot fit
  int64_t ctx = 0;
  int threads = 0;
  int32_t max_seqs = 8;
  int64_t max_batched_tokens = 512;
  server::ServerOptions server;
};

server::HttpServer* g_server = nullptr;  // for the signal-waiting thread only

// Signals are taken synchronously by a thread that then stops the server (no work in a
// signal handler).
void stop_on_signals(sigset_t set) {
  int sig = 0;
  if (sigwait(&set, &sig) == 0 && g_server) g_server->stop();
}

Expected<EngineOptions> engine_options(const ServeArgs& a, const Model& model) {
  EngineOptions o;
  o.model_path = model.path();
  o.n_threads = a.threads;
  const int64_t model_ctx = model.config().max_ctx > 0 ? model.config().max_ctx : 4096;
  o.max_model_len = a.ctx > 0 ? a.ctx : std::min<int64_t>(model_ctx, 4096);
  o.max_seqs = a.max_seqs;
  o.max_batched_tokens = a.max_batched_tokens;
  o.kv_type = a.kv_type;
  if (!a.kv_budget.empty()) {
    ASSIGN_OR_RETURN(int64_t bytes, parse_byte_size(a.kv_budget));
    o.kv_budget_bytes = static_cast<uint64_t>(bytes);
  }
  return o;
}

// The memory plan of the served configuration, from the model's metadata: refuses before
// any weight is read (instead of the OOM killer refusing half way through loading).
Status plan_before_load(const ServeArgs& a, const std::string& path) {
  ASSIGN_OR_RETURN(ModelFootprint fp, read_model_footprint(path));
  PlanArgs pa;
  pa.kv_budget = a.kv_budget;
  pa.kv_type = a.kv_type;
  pa.max_seqs = a.max_seqs;
  pa.max_batched_tokens = a.max_batched_tokens;
  pa.memory_limit = a.memory_limit;
  const int64_t model_ctx = fp.config.max_ctx > 0 ? fp.config.max_ctx : 4096;
  ASSIGN_OR_RETURN(PlanOptions o, plan_options_from(pa, a.ctx > 0 ? a.ctx : std::min<int64_t>(model_ctx, 4096), a.threads));
  ASSIGN_OR_RETURN(MemoryPlan plan, plan_memory(fp, o, read_memory_limit(o.memory_limit)));
  return admission_status(plan);
}

int run_serve(ServeArgs a) {
  // A client that hangs up must not kill the process with SIGPIPE; SIGINT/SIGTERM go to
  // the waiting thread. Blocked first, before the model's and the engine's threads start,
  // so that every thread inherits the mask.
  signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::string path = a.model;
  if (path.empty()) {
    auto demo = demo_model_path();
    if (!demo) return report_error(demo.status());
    path = *demo;
  }
  if (!a.chat_template_file.empty()) {
    auto text = read_text_file(a.chat_template_file);
    if (!text) return report_error(text.status());
    a.server.chat_template = std::move(*text);
  }
  RETURN_CODE_IF_ERROR(plan_before_load(a, path));
  LoadOptions lo;
  lo.n_threads = a.threads;
  auto model = Model::load(path, lo);
  if (!model) return report_error(model.status());
  auto eo = engine_options(a, **model);
  if (!eo) return report_error(eo.status());
  auto engine = Engine::create(**model, *eo);
  if (!engine) return report_error(engine.status());
  a.server.model_name = a.name.empty() ? std::filesystem::path(path).filename().string() : a.name;
  auto srv = server::HttpServer::create(**engine, a.server);
  if (!srv) return report_error(srv.status());
  RETURN_CODE_IF_ERROR((*srv)->bind());

  g_server = srv->get();
  std::thread waiter(stop_on_signals, set);  // NOLINT: detached, lives until exit
  waiter.detach();

  std::printf("edge-infer: serving %s (context %lld, up to %d sequences)\n", a.server.model_name.c_str(),
              static_cast<long long>(eo->max_model_len), eo->max_seqs);
  std::printf("edge-infer: listening on http://%s:%d\n", a.server.host.c_str(), (*srv)->port());
  std::fflush(stdout);
  Status st = (*srv)->run();
  g_server = nullptr;
  srv->reset();
  if (!st.ok()) return report_error(st);
  return 0;
}

}  // namespace

void register_serve(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* sub = app.add_subcommand("serve", "OpenAI-compatible HTTP server");
  sub->add_option("-m,--model", a->model, "GGUF file or Hugging Face directory (default: demo model)");
  sub->add_option("--name", a->name, "model id clients use (default: the model's file name)");
  sub->add_option("--host", a->server.host, "address to bind (default: 127.0.0.1, local only)")->capture_default_str();
  sub->add_option("--port", a->server.port, "port (0: any free port)")->capture_default_str();
  sub->add_option("--api-key", a->server.api_key, "require 'Authorization: Bearer KEY'");
  sub->add_option("-c,--ctx", a->ctx, "context per sequence (default: min(model's, 4096))");
  sub->add_option("--max-seqs", a->max_seqs, "sequences scheduled together")->capture_default_str();
  sub->add_option("--max-batched-tokens", a->max_batched_tokens, "tokens per forward step")->capture_default_str();
  sub->add_option("--kv-budget", a->kv_budget, "KV cache bytes, e.g. 512M (default: max-seqs full contexts)");
  sub->add_option("--kv-type", a->kv_type, "f32 | f16 | bf16 | q8")->capture_default_str();
  sub->add_option("--memory-limit", a->memory_limit,
                  "memory this process may use (e.g. 2GiB; default: MemAvailable and the cgroup limit)");
  sub->add_option("--chat-template-file", a->chat_template_file, "Jinja chat template overriding the model's");
  sub->add_option("-t,--threads", a->threads, "threads (default: all allowed cores)");
  sub->callback([a, &ctx] { ctx.exit_code = run_serve(*a); });
}

}  // namespace edge::cli
