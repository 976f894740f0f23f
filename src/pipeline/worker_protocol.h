// The wire between a pipeline and an `edge-infer worker`: a Unix stream socket carrying
// messages of a 4-byte little-endian length and a JSON body (at most 16 MiB). The pipeline
// speaks first:
//   hello    {stage, contract, model, sha256, capacity, ctx, max_tokens, threads, generation,
//   credits} ready    {contract, generation, pid, placement}      or  error {message} request
//   {epoch, inputs: {port: {text, tokens}}} event    {epoch, seq, terminal, port, text, tokens,
//   error?}   (at most `credits` unacked) ack      {n} (the pipeline consumed n events) retire {}:
//   finish what is in flight, accept nothing new, exit 0
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace edge::pipeline {

inline constexpr uint32_t kMaxWorkerMessage = 16u << 20;

Status send_message(int fd, const nlohmann::json& msg);
// Waits up to `timeout` for one whole message. deadline_exceeded when none came in time,
// unavailable when the peer closed the connection (a worker that died), invalid_format
// for a malformed one.
Expected<nlohmann::json> receive_message(int fd, std::chrono::milliseconds timeout);

}  // namespace edge::pipeline
