// The wire between a pipeline and an `edge-infer worker`: a Unix stream socket carrying
// messages of a 4-byte little-endian length and a JSON body (at most 16 MiB). The pipeline
// speaks first:
//   hello    {stage, contract, model, sha256, capacity, ctx, max_tokens, threads, generation,
//   credits} ready    {contract, generation, pid, placement}      or  error {message} request
//   {epoch, inputs: {port: {text, tokens}}} event    {epoch, seq, terminal, port, text, tokens,
//   error?}   (at most `credits` unacked) ack      {n} (the pipeline consumed n events) retire {}:
//   finish what is in flight, accept nothing new, exit 0
// Streamed inputs (a vocoder's codes while the talker still speaks): request {..., streamed:
// [port]}, then input {epoch, port, text, tokens} per chunk (at most kWorkerInputCredits
// unacknowledged; the worker sends input_ack {epoch, n} as its stage takes each) and
// input_end {epoch, port, error?}. A vocoder's events carry audio PCM in [-1, 1] as a
// shared f32 tensor {tensor: descriptor} in a buffer the worker announced (announce, with
// its memfd), which the pipeline copies and gives back with release {buffer}.
#pragma once

#include <chrono>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace edge::pipeline {

inline constexpr uint32_t kMaxWorkerMessage = 16u << 20;
inline constexpr int32_t kWorkerInputCredits = 16;

Status send_message(int fd, const nlohmann::json& msg);
// Waits up to `timeout` for one whole message. deadline_exceeded when none came in time,
// unavailable when the peer closed the connection (a worker that died), invalid_format
// for a malformed one.
Expected<nlohmann::json> receive_message(int fd, std::chrono::milliseconds timeout);

// File descriptors passed with a message (SCM_RIGHTS): shared-memory tensor buffers
// (shm_tensor.h). Same framing, so both kinds share one socket; the descriptors ride on the
// frame's first bytes. A side that may be sent descriptors must read with
// receive_message_with_fds: receive_message reads such a message but the kernel closes its
// descriptors (nothing leaks, nothing arrives).

// An owned descriptor, closed when dropped: what arrives from a peer is ours to close
// whatever we make of the message.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset(int fd = -1);  // closes the one held

 private:
  int fd_ = -1;
};

// The most descriptors one message may carry (either direction).
inline constexpr size_t kMaxMessageFds = 8;

struct MessageWithFds {
  nlohmann::json msg;
  std::vector<UniqueFd> fds;  // in the order the sender listed them
};

// invalid_argument for more than kMaxMessageFds descriptors; otherwise as send_message.
Status send_message_with_fds(int fd, const nlohmann::json& msg, std::span<const int> fds);
// As receive_message, plus the descriptors that came with the message (close-on-exec).
// More than `max_fds` of them (or more than kMaxMessageFds: the kernel truncates) is
// invalid_format; the message is still read whole, so the stream stays in step, and every
// descriptor that arrived with it is closed.
Expected<MessageWithFds> receive_message_with_fds(int fd, std::chrono::milliseconds timeout,
                                                  size_t max_fds = kMaxMessageFds);

}  // namespace edge::pipeline
