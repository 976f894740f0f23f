// A pipeline: stages (each a contract adapter placed on a device class) and the explicit
// routes between their ports. Read from YAML (JSON is YAML too), validated as a whole
// before anything starts: every error names both ends of the route or the stage and port.
//
//   pipeline: tts
//   stages:
//     - name: talker
//       kind: speech_codes            # a row of stages/stage_kinds.cpp: lm | vision_encoder
//       contract: speech.codes@1      #   | audio_encoder | speech_codes | vocoder | external
//       device: cpu                   # cpu | igpu | npu
//       placement: in_process         # in_process | worker | external
//       artifacts: [{role: model, path: talker.gguf, sha256: 3f2a...}]
//       capacity: 4                   # requests in flight
//       reservation: 512MiB           # host RAM; "plan" = our memory plan of the model
//   routes:
//     - input.text -> talker.text     # "input.X" / "output.Y" are the graph's own ports
//     - talker.codes -> vocoder.codes
//     - vocoder.pcm -> output.audio
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "pipeline/graph/contract.h"

namespace edge::pipeline {

struct StageKind;  // stage_kind.h: one entry of the stage-kind table
enum class DeviceClass { kCpu, kIgpu, kNpu };
enum class Placement { kInProcess, kWorker, kExternal };
// A stage's `device` is a requirement (kRequire, the default: a stage that cannot run there
// does not start, naming the requested and the actual placement) or a preference (kPrefer,
// file key `placement_policy: prefer`: it runs where it can and the runtime state records
// the difference).
enum class PlacementPolicy { kRequire, kPrefer };
const char* device_class_name(DeviceClass d);
const char* placement_name(Placement p);
const char* placement_policy_name(PlacementPolicy p);

struct Artifact {
  std::string role;    // "model", "projector", "server", ...
  std::string path;    // relative paths are relative to the pipeline file
  std::string sha256;  // 64 lowercase hex digits, pinned. Empty only in a graph built in
                       // code for `serve -m MODEL` (the user named the file: nothing to pin)
  // The file's symbolic name ("demo:lm") when `path` was resolved from one at load
  // (artifact.h: register_artifact_scheme); sha256 is then the file's hash at load.
  std::string symbol;
  bool pinned() const { return !sha256.empty(); }
};

// How a stage on our engine (lm, speech_codes) sizes it; its memory plan uses the same
// numbers. File keys: ctx, max_batched_tokens, kv_type (K, and V unless kv_type_v),
// kv_type_v, kv_budget (bytes, e.g. 256MiB),
// itl_target_ms, speculative (ngram | draft), draft_max, draft_model.
struct EngineSettings {
  int64_t ctx = 0;  // positions per sequence; 0: the run's context (--ctx)
  int64_t max_batched_tokens = 512;
  std::string kv_type = "f16";
  std::string kv_type_v;          // "" = as kv_type
  int64_t kv_budget_bytes = 0;    // 0: capacity full contexts
  double itl_target_ms = 0;       // EngineOptions::itl_target_ms (file key itl_target_ms)
  bool prefix_cache = true;       // EngineOptions::prefix_cache (file key prefix_cache: true|false)
  int32_t state_checkpoints = 4;  // EngineOptions::state_checkpoints (file key state_checkpoints)
  std::string speculative;        // EngineOptions::speculative ("", "ngram" or "draft")
  int32_t draft_max = 4;          // EngineOptions::draft_max
  // EngineOptions::draft_model (speculative "draft"): a path, relative to the pipeline file.
  std::string draft_model;
  // Text around the rows of a `media` input (text.generate@1), tokenised by the model: the
  // family's markers, e.g. Gemma-3's "<start_of_image>" and "<end_of_image>". File keys
  // media_begin, media_end; empty: the rows alone.
  std::string media_begin, media_end;
};

// A vocoder stage's streaming (model/vocoder.h VocoderStreamOptions), in codes. File keys
// window, context, lookahead; window 0: exact (the PCM at the end of the utterance).
struct VocoderSettings {
  int32_t window = 0, context = 0, lookahead = 0;
};

struct StageSpec {
  std::string name;
  const StageKind* kind = nullptr;  // set by the file's `kind:` (or by a graph built in code)
  ContractRef contract;
  DeviceClass device = DeviceClass::kCpu;
  Placement placement = Placement::kInProcess;
  PlacementPolicy placement_policy = PlacementPolicy::kRequire;
  std::string backend;  // external stages: e.g. "external.openai.text.v1"
  // External stages: which server the `server` artifact is ("edge-infer" or "llama-server";
  // empty: told by the binary's file name), and arguments added to the command the pipeline
  // builds (e.g. [-ngl, "99"] to offload a llama-server's layers to a GPU). File keys:
  // server_flavour, server_args.
  std::string server_flavour;
  std::vector<std::string> server_args;
  std::vector<Artifact> artifacts;
  int32_t capacity = 1;
  int64_t reservation_bytes = -1;  // -1: "plan" (computed from the model by the memory plan)
  EngineSettings engine;
  VocoderSettings vocoder;
};

// One end of a route: a stage's port, or the graph's own input/output ("input"/"output").
struct Endpoint {
  std::string stage, port;
  std::string str() const { return stage + "." + port; }
};

struct Route {
  Endpoint from, to;
  std::string str() const { return from.str() + " -> " + to.str(); }
};

struct PipelineSpec {
  std::string name;
  std::string base_dir;  // artifacts' relative paths resolve here
  std::vector<StageSpec> stages;
  std::vector<Route> routes;

  const StageSpec* stage(const std::string& name) const;
  // Stages in an order where every stage comes after those it reads from.
  std::vector<const StageSpec*> topological_order() const;
};

// Parses and validates (validate_pipeline) a pipeline file's text; base_dir is recorded.
Expected<PipelineSpec> parse_pipeline(const std::string& text, const std::string& base_dir);
Expected<PipelineSpec> load_pipeline_file(const std::string& path);

// The graph checks: stage names unique, kind and contract agree, every route's ends exist
// with compatible ports, every required input routed exactly once, no cycle.
Status validate_pipeline(const PipelineSpec& p);

}  // namespace edge::pipeline
