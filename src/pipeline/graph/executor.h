// Runs a pipeline: admits every stage's reservation on one shared RamLedger, starts the
// stages in topological order (each held to its reservation once loaded: "RSS exceeds
// stage reservation" otherwise), then runs requests through the routes. Every event is
// stamped with the request's epoch (unique, gap-free across the run), a sequence number
// per stage port, a terminal flag and the worker generation.
//
// Requests run concurrently (each on its own thread, at most the graph's capacity at
// once). Within a request every stage runs on its own thread and routes are bounded
// channels (stage_inputs.h): a stage starts on its first input chunk while its producer
// goes on, and a slow stage stalls the one before it. Events reaching the graph's outputs
// stream to the caller through a bounded queue per request: a caller that stops reading
// stalls the request at the queue's high-water mark (and, through channels and credits,
// every stage and worker behind it) instead of growing memory.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "edge/engine.h"
#include "pipeline/graph/credits.h"
#include "pipeline/graph/graph.h"
#include "pipeline/graph/ledger.h"
#include "pipeline/graph/stage_inputs.h"

namespace edge::pipeline {

struct StageEvent {
  uint64_t epoch = 0;
  uint64_t seq = 0;                // 0, 1, 2, ... per (epoch, stage, port)
  bool terminal = false;           // the last event of this request on this port
  uint32_t worker_generation = 0;  // 0: in process
  std::string stage, port;         // who produced it ("output.X" names come from routes)
  PortValue value;
  Status error;               // set on a terminal event that ends the request in error
  std::string finish_reason;  // a text stage's terminal event: "stop" | "length"
  // The request's last event (no stage, no port): it has ended, in error when error is set.
  bool end_of_request = false;
};

// A request in flight. Copies are allowed, but once its end_of_request has been read the
// handle is stale and every call with it is refused ("stale handle").
struct PipelineHandle {
  uint64_t epoch = 0;
  uint64_t token = 0;  // this runtime's mark: a handle from another runtime is refused too
};

// How the in-process stages share the cores (see PipelineRuntime::compute_pool_for).
enum class StagePools { kSplit, kShared };

struct PipelineRunOptions {
  int64_t ctx = 4096;         // context of each lm stage
  int n_threads = 0;          // 0: default
  int32_t max_tokens = 64;    // per lm stage and request
  std::string worker_binary;  // edge-infer, for stages placed in a worker (default: this program)
  int32_t stream_high_water = 64;  // events queued per request before its stages are stalled
  // Inputs to a worker of at least this many bytes (token ids) travel through shared memory
  // (memfd) instead of the control socket's JSON.
  uint64_t shm_min_bytes = 64 << 10;
  // Set by the runtime for the stages it starts in this process, for the stage kinds that
  // compute on a pool of their own (the speech stages), as stage_pools says: kSplit, each
  // model stage a pool of n_threads / stages (a talker and its decoder then run as a
  // pipeline on separate cores: RTF 0.81 against 0.98 shared, 0.6B shape, 2 cores,
  // bench/results/2026-12-05-qwen3-tts-0.6b-stage-pools); kShared, one pool of n_threads whose callers take turns region by region.
  // Null elsewhere.
  ThreadPool* compute_pool = nullptr;
  StagePools stage_pools = StagePools::kSplit;
};

// One started stage: consumes its routed inputs, emits events on its outputs in order.
class StageRunner {
 public:
  virtual ~StageRunner() = default;
  // Runs one request, emitting its events in order (the last one per port terminal).
  // Called from up to `capacity` threads at once, one request (epoch) per call. A stage
  // overrides run() or, if it takes generation settings, run_with_params(): each of the two
  // defaults to the other.
  virtual Status run(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
                     const std::function<void(StageEvent)>& emit) {
    return run_with_params(epoch, inputs, nullptr, emit);
  }
  // run() with per-request generation settings (max_tokens, sampling, stop strings) for a
  // text.generate stage; null: the stage's defaults (greedy, the run's max_tokens). A stage
  // that cannot honour them refuses instead of ignoring them.
  virtual Status run_with_params(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
                                 const RequestParams* params,
                                 const std::function<void(StageEvent)>& emit) {
    if (params)
      return Status::unsupported("this stage does not take per-request generation settings");
    return run(epoch, inputs, emit);
  }
  // The streaming form the runtime calls: inputs arrive chunk by chunk while the stages
  // before run. The default gathers them whole, then run_with_params(); a stage that can
  // start on part of its input (a vocoder on the first codes) overrides this.
  virtual Status run_streaming(uint64_t epoch, StageInputs& in, const RequestParams* params,
                               const std::function<void(StageEvent)>& emit) {
    ASSIGN_OR_RETURN(auto all, in.gather());
    return run_with_params(epoch, all, params, emit);
  }
  // From another thread: the request `epoch` (being run, or about to be) is no longer
  // wanted; run() ends soon with a kCancelled status. Unknown epochs are ignored.
  virtual void cancel(uint64_t epoch) = 0;
  // Drain (retirement): requests in flight finish; later ones go to a new generation of
  // the stage's process. In process there is nothing to retire.
  virtual Status retire() { return Status(); }
  // The engine of an in-process language-model stage (the server drives it directly for
  // everything the OpenAI API offers: sessions, n choices, logprobs); null otherwise.
  virtual Engine* engine() { return nullptr; }
  // Host RAM the stage holds now. In process a stage cannot be told apart from its
  // neighbours by the process's RSS, so it is its own ledger: anonymous weights, resident
  // pages of its mapped weights (mincore), tokenizer and KV cache.
  virtual int64_t resident_bytes() const = 0;
  // Where it actually runs and which generation of its process serves it (0: in process).
  virtual std::string placement() const { return "in_process cpu"; }
  // The device class it actually computes on: "cpu" here and in workers; an external
  // backend's from its placement proof ("cpu", "gpu", "partial" offload, "unknown").
  virtual std::string actual_device() const { return "cpu"; }
  // What computes it: "edge-infer <commit>" in this process and in workers (the same
  // binary); an external server's own build line.
  virtual std::string backend_version() const;
  // False while the stage's process is gone (it died; the next run() starts another).
  virtual bool running() const { return true; }
  // How the stage's data moved (a worker: its shared-memory tensor pool's counters).
  virtual nlohmann::json transport_stats() const { return nlohmann::json::object(); }
  virtual uint32_t generation() const { return 0; }
};

class PipelineRuntime {
 public:
  // Reservations are taken on `ledger` (which must outlive the runtime) and released when
  // the runtime is destroyed or its start fails.
  static Expected<std::unique_ptr<PipelineRuntime>> start(const PipelineSpec& spec,
                                                          RamLedger& ledger,
                                                          const PipelineRunOptions& o = {});
  ~PipelineRuntime();  // cancels the requests still running and waits for them

  // Starts one request: graph inputs by name ("input.NAME" -> NAME). Refused (kUnavailable)
  // when `capacity` requests are in flight or the runtime is shutting down.
  // `params` go to the stages of contract text.generate (null: their defaults).
  Expected<PipelineHandle> submit(const std::map<std::string, PortValue>& inputs,
                                  const RequestParams* params = nullptr);
  // The next event routed to a graph output (its port renamed to the output's name), and
  // finally one end_of_request event; deadline_exceeded when none came within `timeout`.
  Expected<StageEvent> next(const PipelineHandle& h, std::chrono::milliseconds timeout);
  // The request ends soon with a kCancelled end_of_request (its stages are told); events
  // not read yet are dropped: after cancel() next() gives only that end.
  Status cancel(const PipelineHandle& h);
  // Events of the request waiting to be read, and the most that ever waited at once.
  Expected<std::pair<int32_t, int32_t>> stream_depth(const PipelineHandle& h) const;

  // submit() and next() until the end: the request's error, if any, is returned.
  Status run(const std::map<std::string, PortValue>& inputs,
             const std::function<void(const StageEvent&)>& on_output);

  // Retires a stage's process (drain: finish in flight, accept nothing new, exit); the
  // next request on it starts the next generation.
  Status retire_stage(const std::string& stage);

  // The engine of the in-process lm stage whose text reaches the graph's output "text"
  // (for `serve`); null when that stage runs elsewhere.
  Engine* text_engine() const;
  // The stage whose text reaches the graph's output "text" (null: none).
  const StageSpec* text_stage() const;
  const PipelineRunOptions& options() const { return options_; }
  const PipelineSpec& spec() const { return spec_; }
  int32_t capacity() const { return capacity_; }
  uint64_t epochs_issued() const { return epochs_.issued(); }
  // Measures every stage and holds it to its reservation (the first excess is returned).
  Status check_reservations();
  // Per stage: reservation, measured RSS, placement actually used, generation.
  nlohmann::json state_json() const;
  // Prometheus lines: per stage reserved and measured bytes and generation.
  std::string metrics_text() const;

 private:
  struct Started {
    const StageSpec* spec = nullptr;
    int64_t reserved_bytes = 0;
    std::atomic<int64_t> rss_bytes{0};  // resident_bytes() at the last check
    std::unique_ptr<StageRunner> runner;
    // The reservation's id on the ledger; 0 while the stage's process is dead (its memory
    // is free again until the next generation is admitted).
    std::mutex mu;
    uint64_t reservation = 0;
  };
  struct Request;
  PipelineRuntime(const PipelineSpec& spec, RamLedger& ledger, const PipelineRunOptions& o);
  Status start_stage(const StageSpec& s);
  Status check_rss(Started& st);
  Status ensure_reserved(Started& st);
  void release_if_dead(Started& st);
  static uint64_t reservation_of(Started& st);
  void run_request(Request& r);
  Status run_stages(Request& r);
  // One stage of a request: reads its channels, feeds the channels of its routes (and the
  // request's output queue), closes them at its end.
  Status run_stage(Request& r, Started& st, StageInputs& in,
                   const std::map<std::string, std::shared_ptr<Channel>>& channels);
  void deliver(Request& r, StageEvent e);
  std::shared_ptr<Request> find(const PipelineHandle& h) const;

  PipelineSpec spec_;
  RamLedger& ledger_;
  PipelineRunOptions options_;
  ThreadPool* compute_pool_for();
  std::vector<std::unique_ptr<ThreadPool>> compute_pools_;  // before stages_: outlive runners
  std::vector<std::unique_ptr<Started>> stages_;  // topological order
  int32_t capacity_ = 1;
  EpochCounter epochs_;
  const uint64_t token_;
  mutable std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<Request>> requests_;  // by epoch, until read to the end
  bool closing_ = false;
};

}  // namespace edge::pipeline
