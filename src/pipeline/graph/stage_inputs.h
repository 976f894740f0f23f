// Stage-to-stage streaming: every route into a stage is a bounded channel of chunks, so a
// consumer starts while its producer is still producing (a vocoder speaks before the talker
// has finished) and a slow consumer stalls its producer at the channel's capacity instead
// of growing a queue. A stage reads its inputs through StageInputs: chunk by chunk, or
// gathered whole (what a stage that needs all of its input does).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace edge::pipeline {

// A value on a port: text, token ids, or audio samples (one of them). As a chunk of a
// stream, the next chunk continues it.
struct PortValue {
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<float> samples;  // audio PCM in [-1, 1] (audio.pcm@1: 24 kHz mono)
  // An image (vision.encode@1 input "image": u8 [height][width][3], RGB).
  std::vector<uint8_t> pixels;
  int64_t width = 0, height = 0;
  // LM input embeddings (vision.encode@1 output: f32 [rows][n_embd]).
  std::vector<float> embeddings;
  int64_t rows = 0;
  // A media file as it came (chat.generate@1 "image" and "audio": the PNG, JPEG or WAV bytes,
  // passed on unchanged to a server that decodes them itself); `encoding` names its format
  // ("png", "jpeg", "wav"). Graph inputs read from files keep these beside the decoded form.
  std::string encoded;
  std::string encoding;
  bool empty() const {
    return text.empty() && tokens.empty() && samples.empty() && pixels.empty() && embeddings.empty() &&
           encoded.empty();
  }
  void append(const PortValue& more);
};

// One route's chunks, in order, at most `capacity` waiting.
class Channel {
 public:
  explicit Channel(int32_t capacity) : capacity_(capacity) {}

  // Producer: waits while full. False when the consumer has gone or `stop` is set.
  bool push(PortValue v, const std::atomic<bool>& stop);
  // Producer: the end of the stream; a non-OK status ends it in error.
  void close(const Status& st = Status());
  // Consumer: the next chunk, nullopt at the end, the producer's error if it failed, or
  // cancelled when `stop` is set.
  Expected<std::optional<PortValue>> pop(const std::atomic<bool>& stop);
  // Consumer: gone (it failed or ended early); the producer's pushes fail from now on, and
  // a pop (from another thread of the consumer's) ends with kCancelled.
  void abandon();
  // Called after every chunk popped (outside the lock): a remote producer's credit returns.
  void set_on_pop(std::function<void()> f);
  int32_t high_water() const;

 private:
  const int32_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<PortValue> q_;
  bool closed_ = false, abandoned_ = false;
  std::function<void()> on_pop_;
  Status end_;
  int32_t high_water_ = 0;
};

// A stage's inputs for one request: port -> its channel.
class StageInputs {
 public:
  StageInputs(std::map<std::string, std::shared_ptr<Channel>> ports,
              const std::atomic<bool>& stop)
      : ports_(std::move(ports)), stop_(stop) {}
  bool has(const std::string& port) const { return ports_.count(port) > 0; }
  // The next chunk of `port` (nullopt at its end; not_found for a port nothing feeds).
  Expected<std::optional<PortValue>> next(const std::string& port);
  // Every port read to its end, each port's chunks joined.
  Expected<std::map<std::string, PortValue>> gather();
  // The stage has finished (or failed): producers still pushing stop waiting.
  void abandon_all();
  std::vector<std::string> ports() const;

 private:
  std::map<std::string, std::shared_ptr<Channel>> ports_;
  const std::atomic<bool>& stop_;
};

}  // namespace edge::pipeline
