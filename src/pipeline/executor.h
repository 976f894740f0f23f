// Runs a pipeline: admits every stage's reservation on one shared RamLedger, starts the
// stages in topological order (each held to its reservation once loaded: "RSS exceeds
// stage reservation" otherwise), then runs requests through the routes. Every event is
// stamped with the request's epoch (unique, gap-free across the run), a sequence number
// per stage port, a terminal flag and the worker generation.
//
// This slice runs `lm` stages in process, each stage's outputs gathered before the next
// stage runs; events reaching the graph's outputs stream as they are produced. Other
// kinds and placements (workers, external backends) are refused by name until their
// adapters land.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "pipeline/credits.h"
#include "pipeline/graph.h"
#include "pipeline/ledger.h"

namespace edge::pipeline {

// A value on a port: text, or token ids (one of them).
struct PortValue {
  std::string text;
  std::vector<int32_t> tokens;
};

struct StageEvent {
  uint64_t epoch = 0;
  uint64_t seq = 0;                // 0, 1, 2, ... per (epoch, stage, port)
  bool terminal = false;           // the last event of this request on this port
  uint32_t worker_generation = 0;  // 0: in process
  std::string stage, port;         // who produced it ("output.X" names come from routes)
  PortValue value;
  Status error;  // set on a terminal event that ends the request in error
};

struct PipelineRunOptions {
  int64_t ctx = 4096;         // context of each lm stage
  int n_threads = 0;          // 0: default
  int32_t max_tokens = 64;    // per lm stage and request
  std::string worker_binary;  // edge-infer, for stages placed in a worker (default: this program)
};

// One started stage: consumes its routed inputs, emits events on its outputs in order.
class StageRunner {
 public:
  virtual ~StageRunner() = default;
  virtual Status run(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
                     const std::function<void(StageEvent)>& emit) = 0;
  // Host RAM the stage holds now. In process a stage cannot be told apart from its
  // neighbours by the process's RSS, so it is its own ledger: anonymous weights, resident
  // pages of its mapped weights (mincore), tokenizer and KV cache.
  virtual int64_t resident_bytes() const = 0;
  // Where it actually runs and which generation of its process serves it (0: in process).
  virtual std::string placement() const { return "in_process cpu"; }
  virtual uint32_t generation() const { return 0; }
};

class PipelineRuntime {
 public:
  // Reservations are taken on `ledger` (which must outlive the runtime) and released when
  // the runtime is destroyed or its start fails.
  static Expected<std::unique_ptr<PipelineRuntime>> start(const PipelineSpec& spec,
                                                          RamLedger& ledger,
                                                          const PipelineRunOptions& o = {});
  ~PipelineRuntime();

  // One request: graph inputs by name ("input.NAME" -> NAME); `on_output` receives every
  // event routed to a graph output, with its port renamed to the output's name.
  Status run(const std::map<std::string, PortValue>& inputs,
             const std::function<void(const StageEvent&)>& on_output);

  uint64_t epochs_issued() const { return epochs_.issued(); }
  // Per stage: reservation, measured RSS after start, placement actually used, generation.
  nlohmann::json state_json() const;

 private:
  struct Started {
    const StageSpec* spec = nullptr;
    uint64_t reservation = 0;
    int64_t rss_bytes = 0;  // resident_bytes() at the last check
    std::unique_ptr<StageRunner> runner;
  };
  PipelineRuntime(const PipelineSpec& spec, RamLedger& ledger) : spec_(spec), ledger_(ledger) {}
  Status start_stage(const StageSpec& s, const PipelineRunOptions& o);
  Status check_rss(Started& st);

  PipelineSpec spec_;
  RamLedger& ledger_;
  std::vector<Started> stages_;  // topological order
  EpochCounter epochs_;
};

}  // namespace edge::pipeline
