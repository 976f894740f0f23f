// edge-infer probe (--server URL | --pipeline FILE) [--api-key K] [--high-water N]
//   [--max-tokens N] [--n N] [--slow-consumer-ms MS]: the reliability probes
// (harness/probe.h) as JSON, each check pass/fail/skipped with its timings, and findings
// for whatever the probe had to clean up. Exit 0 only when nothing failed and nothing had
// to be cleaned up.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "harness/probe.h"
#include "harness/provenance.h"

namespace edge::cli {

namespace {

struct ProbeArgs {
  std::string server, pipeline;
  PipelineProbeOptions pipe;
  ServerProbeOptions http;
  int slow_consumer_ms = 3000;
};

int run_probe(ProbeArgs& a) {
  if (a.server.empty() == a.pipeline.empty())
    return report_error(Status::invalid_argument("give one of --server URL or --pipeline FILE"));
  ProbeReport r;
  if (!a.server.empty()) {
    a.http.speech.slow_consumer_pause = std::chrono::milliseconds(a.slow_consumer_ms);
    r = probe_server(a.server, a.http);
  } else {
    a.pipe.speech.slow_consumer_pause = std::chrono::milliseconds(a.slow_consumer_ms);
    auto got = probe_pipeline_file(a.pipeline, a.pipe);
    if (!got.ok()) return report_error(got.status());
    r = std::move(*got);
  }
  nlohmann::json j = r.to_json();
  j["provenance"] = machine_provenance();
  std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return r.passed() ? 0 : 1;
}

}  // namespace

void register_probe(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<ProbeArgs>();
  CLI::App* sub = app.add_subcommand("probe",
                                     "Reliability probes of a server or a pipeline (saturation, "
                                     "cancel, stale handles, killed workers)");
  sub->add_option("--server", a->server, "a running server's base URL, e.g. http://127.0.0.1:8080");
  sub->add_option("--pipeline", a->pipeline, "a pipeline file: its stages are started here");
  sub->add_option("--api-key", a->http.api_key, "bearer key of the server");
  sub->add_option("--n", a->http.n,
                  "server: choices per stream (bytes enough to fill the socket buffers)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--stream-tokens", a->http.max_tokens, "server: max_tokens per stream")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--high-water", a->pipe.high_water,
                  "pipeline: events queued per request before it stalls")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--max-tokens", a->pipe.max_tokens,
                  "pipeline: tokens per text request (above the mark)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--ctx", a->pipe.ctx, "pipeline: context of each lm stage")
      ->capture_default_str();
  sub->add_option("-t,--threads", a->pipe.n_threads, "pipeline: threads per stage (default: all)");
  sub->add_option("--slow-consumer-ms", a->slow_consumer_ms,
                  "speech: how long the slow consumer stops reading")
      ->capture_default_str();
  sub->callback([a, &ctx] { ctx.exit_code = run_probe(*a); });
}

}  // namespace edge::cli
