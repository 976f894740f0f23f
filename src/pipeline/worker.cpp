// The worker's side of worker.h: handshake, then requests until retire or end of file.
#include "pipeline/worker.h"

#include <fmt/format.h>
#include <unistd.h>

#include "pipeline/artifact.h"
#include "pipeline/lm_stage.h"
#include "pipeline/worker_protocol.h"

namespace edge::pipeline {

namespace {

constexpr auto kForever = std::chrono::hours(24 * 365);

// Checks the hello and starts the stage; the error names what the pipeline asked for.
Expected<std::unique_ptr<StageRunner>> start_from_hello(const nlohmann::json& h) {
  ASSIGN_OR_RETURN(ContractRef ref, parse_contract_ref(h.value("contract", "")));
  const Contract* c = find_contract(ref);
  if (!c || ref.name != "text.generate")
    return Status::unsupported(fmt::format(
        "this worker does not implement contract {} (it implements text.generate@1)", ref.str()));
  const std::string model = h.value("model", "");
  ASSIGN_OR_RETURN(std::string sha, sha256_file(model));
  if (sha != h.value("sha256", ""))
    return Status::invalid_argument(
        fmt::format("{} (sha256 {}) differs from the declared artifact hash {}", model, sha,
                    h.value("sha256", "")));
  StageSpec s;
  s.name = h.value("stage", "worker");
  s.contract = ref;
  s.capacity = h.value("capacity", 1);
  PipelineRunOptions o;
  o.ctx = h.value("ctx", int64_t{4096});
  o.max_tokens = h.value("max_tokens", 64);
  o.n_threads = h.value("threads", 0);
  return start_lm_stage(model, s, o);
}

// Runs one request, sending each event once a credit is free (acks return credits).
Status serve_request(int fd, StageRunner& runner, const nlohmann::json& req, int32_t credits,
                     int32_t& in_flight) {
  std::map<std::string, PortValue> inputs;
  const nlohmann::json in = req.value("inputs", nlohmann::json::object());  // outlives items()
  if (!in.is_object()) return Status::invalid_argument("request inputs must be an object");
  for (const auto& [port, v] : in.items()) {
    if (!v.is_object()) return Status::invalid_argument("input '" + port + "' must be an object");
    inputs[port] = PortValue{v.value("text", ""), v.value("tokens", std::vector<int32_t>{})};
  }
  Status link;
  const Status st = runner.run(req.value("epoch", uint64_t{0}), inputs, [&](StageEvent e) {
    while (link.ok() && in_flight >= credits) {  // back-pressure: wait for the pipeline
      auto ack = receive_message(fd, kForever);
      if (!ack.ok())
        link = ack.status();
      else if ((*ack)["type"] == "ack")
        in_flight -= ack->value("n", 0);
    }
    if (!link.ok()) return;
    nlohmann::json m = {{"type", "event"},         {"epoch", e.epoch}, {"seq", e.seq},
                        {"terminal", e.terminal},  {"port", e.port},   {"text", e.value.text},
                        {"tokens", e.value.tokens}};
    if (!e.error.ok()) m["error"] = e.error.to_string();
    link = send_message(fd, m);
    ++in_flight;
  });
  if (!link.ok()) return link;
  if (!st.ok())
    return send_message(fd, {{"type", "failed"},
                             {"epoch", req.value("epoch", uint64_t{0})},
                             {"error", st.to_string()}});
  return Status();
}

}  // namespace

int run_worker(int fd) {
  auto hello = receive_message(fd, std::chrono::seconds(30));
  if (!hello.ok() || (*hello)["type"] != "hello") return 2;
  auto runner = start_from_hello(*hello);
  if (!runner.ok()) {
    (void)send_message(fd, {{"type", "error"}, {"message", runner.status().to_string()}});
    return 2;
  }
  const int32_t credits = std::max(1, hello->value("credits", 16));
  int32_t in_flight = 0;  // events sent and not yet acknowledged, across requests
  if (!send_message(fd, {{"type", "ready"},
                         {"contract", (*hello)["contract"]},
                         {"pid", getpid()},
                         {"generation", hello->value("generation", 1)},
                         {"placement", "cpu"}})
           .ok())
    return 1;
  for (;;) {
    auto msg = receive_message(fd, kForever);
    if (!msg.ok())
      return msg.status().code() == StatusCode::kUnavailable ? 0 : 1;  // EOF: the pipeline is gone
    const std::string type = (*msg)["type"];
    if (type == "retire") return 0;
    if (type == "ack") {  // acks of events already sent
      in_flight -= msg->value("n", 0);
      continue;
    }
    if (type != "request") return 1;
    if (!serve_request(fd, **runner, *msg, credits, in_flight).ok()) return 1;
  }
}

}  // namespace edge::pipeline
