// The shape every media-encoder stage shares (vision.encode@1, audio.encode@1): one input
// value in, all of its LM input-embedding rows out as one terminal "embeddings" event
// (f32 [rows][n_embd]), one encode at a time on the stage's own pool, a cancel honoured
// before the encode starts. A subclass says only how it checks and encodes its input.
// Reservation "plan": the projector's weights and one encode (encoder_plan).
#pragma once

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "pipeline/graph/executor.h"
#include "pipeline/graph/stage_kind.h"

namespace edge::pipeline {

// An encoder kind's plan_reservation: `Bytes` of its projector (the model artifact).
template <Expected<int64_t> (*Bytes)(const std::string& projector_path)>
Expected<PlannedBytes> encoder_plan(const StageSpec&, const Artifact& projector,
                                    const std::string& projector_path, const PipelinePlanOptions&) {
  ASSIGN_OR_RETURN(int64_t bytes, Bytes(projector_path));
  return PlannedBytes{bytes, fmt::format("projector {}: weights + one encode", projector.path)};
}

class EncoderStageRunner : public StageRunner {
 public:
  Status run(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
             const std::function<void(StageEvent)>& emit) final {
    auto it = inputs.find(input_port_);
    if (it == inputs.end() || it->second.empty())
      return Status::invalid_argument(fmt::format("stage '{}': no {}", name_, input_port_));
    StageEvent e;
    {
      std::lock_guard<std::mutex> l(encode_mu_);  // one encode at a time on the stage's pool
      if (cancelled(epoch)) return Status::cancelled(fmt::format("stage '{}': cancelled", name_));
      auto rows = encode(it->second, pool_, &e.value.rows);
      if (!rows) return rows.status().with_context(fmt::format("stage '{}'", name_));
      e.value.embeddings = std::move(*rows);
    }
    e.epoch = epoch, e.seq = 0, e.terminal = true, e.stage = name_, e.port = "embeddings";
    emit(std::move(e));
    return Status();
  }
  void cancel(uint64_t epoch) override {
    std::lock_guard<std::mutex> l(mu_);
    cancelled_ = epoch;
  }
  int64_t resident_bytes() const override { return resident_; }

 protected:
  EncoderStageRunner(std::string name, std::string input_port, int threads, int64_t resident)
      : name_(std::move(name)),
        input_port_(std::move(input_port)),
        pool_(std::max(1, threads)),
        resident_(resident) {}
  // The rows of one input value: f32 [*rows][n_embd]; invalid_argument names what is wrong
  // with the input.
  virtual Expected<std::vector<float>> encode(const PortValue& in, ThreadPool& pool,
                                              int64_t* rows) = 0;

 private:
  bool cancelled(uint64_t epoch) {
    std::lock_guard<std::mutex> l(mu_);
    return cancelled_ == epoch;
  }
  std::string name_, input_port_;
  ThreadPool pool_;
  int64_t resident_ = 0;
  std::mutex encode_mu_, mu_;
  uint64_t cancelled_ = 0;
};

}  // namespace edge::pipeline
