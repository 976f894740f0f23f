#include "pipeline/graph/stage_inputs.h"

#include <fmt/format.h>

#include <algorithm>

namespace edge::pipeline {

namespace {
// Waits are sliced so that a cancelled request (the stop flag, set without notifying every
// channel) is noticed within this long.
constexpr auto kStopCheck = std::chrono::milliseconds(20);
}  // namespace

void PortValue::append(const PortValue& more) {
  text += more.text;
  tokens.insert(tokens.end(), more.tokens.begin(), more.tokens.end());
  samples.insert(samples.end(), more.samples.begin(), more.samples.end());
  embeddings.insert(embeddings.end(), more.embeddings.begin(), more.embeddings.end());
  rows += more.rows;
  if (pixels.empty()) {  // an image is one chunk: the first one stands
    pixels = more.pixels;
    width = more.width, height = more.height;
  }
  if (encoded.empty()) {  // a file is one chunk too
    encoded = more.encoded;
    encoding = more.encoding;
  }
}

bool Channel::push(PortValue v, const std::atomic<bool>& stop) {
  std::unique_lock<std::mutex> l(mu_);
  while (!abandoned_ && static_cast<int32_t>(q_.size()) >= capacity_) {
    if (stop) return false;
    cv_.wait_for(l, kStopCheck);
  }
  if (abandoned_ || stop) return false;
  q_.push_back(std::move(v));
  high_water_ = std::max(high_water_, static_cast<int32_t>(q_.size()));
  l.unlock();
  cv_.notify_all();
  return true;
}

void Channel::close(const Status& st) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (closed_) return;
    closed_ = true;
    end_ = st;
  }
  cv_.notify_all();
}

Expected<std::optional<PortValue>> Channel::pop(const std::atomic<bool>& stop) {
  std::unique_lock<std::mutex> l(mu_);
  while (q_.empty() && !closed_ && !abandoned_) {
    if (stop) return Status::cancelled("the request was cancelled");
    cv_.wait_for(l, kStopCheck);
  }
  if (abandoned_) return Status::cancelled("the consumer has gone");
  if (!q_.empty()) {
    PortValue v = std::move(q_.front());
    q_.pop_front();
    const std::function<void()> popped = on_pop_;
    l.unlock();
    cv_.notify_all();  // room for the producer
    if (popped) popped();
    return std::optional<PortValue>(std::move(v));
  }
  if (!end_.ok()) return end_;
  return std::optional<PortValue>();
}

void Channel::abandon() {
  {
    std::lock_guard<std::mutex> l(mu_);
    abandoned_ = true;
    q_.clear();
  }
  cv_.notify_all();
}

void Channel::set_on_pop(std::function<void()> f) {
  std::lock_guard<std::mutex> l(mu_);
  on_pop_ = std::move(f);
}

int32_t Channel::high_water() const {
  std::lock_guard<std::mutex> l(mu_);
  return high_water_;
}

Expected<std::optional<PortValue>> StageInputs::next(const std::string& port) {
  auto it = ports_.find(port);
  if (it == ports_.end()) return Status::not_found(fmt::format("no route feeds port '{}'", port));
  return it->second->pop(stop_);
}

Expected<std::map<std::string, PortValue>> StageInputs::gather() {
  std::map<std::string, PortValue> all;
  for (auto& [port, ch] : ports_) {
    PortValue& acc = all[port];
    for (;;) {
      ASSIGN_OR_RETURN(std::optional<PortValue> chunk, ch->pop(stop_));
      if (!chunk) break;
      acc.append(*chunk);
    }
  }
  return all;
}

void StageInputs::abandon_all() {
  for (auto& [port, ch] : ports_) ch->abandon();
}

std::vector<std::string> StageInputs::ports() const {
  std::vector<std::string> out;
  for (const auto& [port, ch] : ports_) out.push_back(port);
  return out;
}

}  // namespace edge::pipeline
