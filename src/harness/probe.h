// Reliability probes (docs/probes.md, the seed's text probe): each check is a pass, a fail or
// skipped (with the reason), with its timings; a process the probe had to clean up after
// the checks (a worker left running, a zombie) is a finding, and a finding fails the probe
// ("cleanup is not a pass"). Only processes this program owns are ever signalled
// (owned_process.h).
//
//   text probe (a pipeline whose graph outputs token ids): baseline; saturation to the
//     stream's high-water mark (nothing grows past it); the same tokens after saturation;
//     a stale copied handle refused; cancel after saturation; the worker killed after the
//     first token -> an explicit terminal error naming its generation; the next request
//     served by a new generation with the baseline's tokens.
//   speech probe (a graph with audio out): slow consumer (identical samples), abort
//     (quick, final, nothing after), vocoder worker killed -> explicit error, next request
//     identical.
//   server probe (`serve` over HTTP): baseline stream; saturation (the engine pauses the
//     request); the same text after saturation; a client hang-up cancels in the engine and
//     frees its KV blocks; the next request unchanged. Where the server speaks: a speech
//     baseline, a slow consumer (the same bytes), a hang-up (cancelled in the pipeline),
//     the next utterance unchanged. Handles and workers are not the client's to touch
//     there: those checks are skipped, named.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "pipeline/graph/executor.h"

namespace edge {

struct ProbeCheck {
  std::string name;
  std::string result = "pass";  // pass | fail | skipped
  double seconds = 0;           // how long the check took
  std::string detail;           // why it failed or was skipped; what was seen
  nlohmann::json figures = nlohmann::json::object();
};

struct ProbeReport {
  std::string target;
  std::vector<ProbeCheck> checks;
  std::vector<std::string> findings;  // processes cleaned up after the checks
  bool passed() const;                // no failed check and no finding
  const ProbeCheck* check(const std::string& name) const;
  nlohmann::json to_json() const;
};

struct TextProbeOptions {
  std::vector<int32_t> prompt = {1, 2, 3, 4};  // token ids given to every graph input
  std::chrono::seconds timeout{30};            // per wait
};
// The runtime's options decide the high-water mark (stream_high_water) and the request
// length (max_tokens, which should exceed the mark). Appends the checks to `report`.
void text_probe(pipeline::PipelineRuntime& rt, const TextProbeOptions& o, ProbeReport& report);

struct SpeechProbeOptions {
  std::string text = "The quick brown fox jumps over the lazy dog near 42 green hills.";
  std::chrono::milliseconds slow_consumer_pause{3000};
  std::chrono::seconds timeout{60};
};
void speech_probe(pipeline::PipelineRuntime& rt, const SpeechProbeOptions& o, ProbeReport& report);

// Whether a graph carries speech (an output "audio") or token ids (an output of an lm stage).
bool graph_has_speech(const pipeline::PipelineSpec& spec);
bool graph_has_text(const pipeline::PipelineSpec& spec);

struct PipelineProbeOptions {
  std::string worker_binary;  // edge-infer, for worker stages (default: this program)
  int64_t ctx = 4096;
  int n_threads = 0;
  int32_t high_water = 4;
  int32_t max_tokens = 40;
  TextProbeOptions text;
  SpeechProbeOptions speech;
};
// Starts the pipeline file's stages, runs the text probe and, where the graph speaks, the
// speech probe; then stops the runtime and checks that every worker it saw has exited.
Expected<ProbeReport> probe_pipeline_file(const std::string& path, const PipelineProbeOptions& o);

struct ServerProbeOptions {
  std::string api_key;
  std::string prompt = "hello";
  int n = 16;  // choices per stream: enough bytes to fill the socket buffers
  int max_tokens = 900;
  std::chrono::seconds timeout{60};
  SpeechProbeOptions speech;  // for a server that speaks (/v1/audio/speech)
};
ProbeReport probe_server(const std::string& url, const ServerProbeOptions& o);

}  // namespace edge
