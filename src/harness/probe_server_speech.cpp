// The speech half of the server probe: POST /v1/audio/speech as a client that reads the
// audio stream at once (the baseline), late (a slow consumer must lose nothing: the same
// bytes), or hangs up after the first bytes (the utterance is cancelled in the pipeline,
// edge_tts_cancelled_total says so, and the next one is unchanged). Streams go through
// raw sockets with a small receive buffer so that the probe decides when to read.
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "harness/probe_check.h"
#include "harness/probe_server_speech.h"
#include "harness/raw_http.h"

namespace edge::probe_detail {
namespace {

using nlohmann::json;

class SpeechClient {
 public:
  SpeechClient(const RawTarget& t, const ServerProbeOptions& o) : t_(t), o_(o) {}

  // A streamed PCM utterance; -1 when it cannot connect.
  int open() const {
    const json body = {{"model", "tts-1"},
                       {"voice", "alloy"},
                       {"input", o_.speech.text},
                       {"response_format", "pcm"},
                       {"stream_format", "audio"}};
    return raw_http_request(t_.host, t_.port, "POST", "/v1/audio/speech", body.dump(),
                            t_.auth_header, 8192);
  }
  // Reads the whole stream (after `pause`); the check fails unless it is a complete 200.
  bool read_whole(Running& c, std::chrono::milliseconds pause, std::string* pcm) const {
    const int fd = open();
    if (!c.expect(fd >= 0, "cannot connect")) return false;
    std::this_thread::sleep_for(pause);
    const RawResponse r = parse_raw_response(read_to_end(fd));
    c.figures()["bytes"] = r.body.size();
    if (!c.expect(r.status == 200, "status " + std::to_string(r.status) + ": " + r.body.substr(0, 300)) ||
        !c.expect(r.complete, "the audio stream was cut short") ||
        !c.expect(!r.body.empty(), "no audio"))
      return false;
    *pcm = r.body;
    return true;
  }
  // Opens a stream, waits for its first audio bytes and hangs up; false when none came.
  bool hang_up_after_first_bytes(Running& c) const {
    const int fd = open();
    if (!c.expect(fd >= 0, "cannot connect")) return false;
    std::string got;
    char buf[4096];
    const auto deadline = Clock::now() + o_.timeout;
    size_t head_end = std::string::npos;
    while (Clock::now() < deadline) {
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
      head_end = got.find("\r\n\r\n");
      if (head_end != std::string::npos && got.size() > head_end + 8) break;
    }
    close(fd);
    return c.expect(head_end != std::string::npos && got.size() > head_end + 8,
                    "no audio before the hang-up");
  }

 private:
  const RawTarget& t_;
  const ServerProbeOptions& o_;
};

}  // namespace

void server_speech_checks(const RawTarget& t, const MetricReader& metric,
                          const ServerProbeOptions& o, ProbeReport& report) {
  SpeechClient cl(t, o);
  std::string baseline;
  {
    Running c(report, "speech.baseline");
    if (!cl.read_whole(c, std::chrono::milliseconds(0), &baseline)) return;
  }
  {
    Running c(report, "speech.slow_consumer");
    c.figures()["pause_s"] = o.speech.slow_consumer_pause.count() / 1000.0;
    std::string late;
    if (cl.read_whole(c, o.speech.slow_consumer_pause, &late))
      c.expect(late == baseline, "the audio read late differs from the baseline");
  }
  {
    Running c(report, "speech.abort");
    const double before = metric("edge_tts_cancelled_total");
    if (c.expect(before >= 0, "/metrics has no edge_tts_cancelled_total") &&
        cl.hang_up_after_first_bytes(c)) {
      const auto t0 = Clock::now();
      bool cancelled = false;
      while (!cancelled && Clock::now() < t0 + o.timeout) {
        cancelled = metric("edge_tts_cancelled_total") > before;
        if (!cancelled) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      c.expect(cancelled, "the pipeline never cancelled the utterance of a client that hung up");
      c.figures()["hangup_to_cancel_s"] = since(t0);
    }
  }
  {
    Running c(report, "speech.after_abort");
    std::string again;
    if (cl.read_whole(c, std::chrono::milliseconds(0), &again))
      c.expect(again == baseline, "the audio differs from the baseline");
  }
  Running(report, "speech.vocoder_killed")
      .skip(
          "the server's vocoder is not this program's child, so it does not signal it; probe "
          "the speech pipeline with --pipeline FILE");
}

}  // namespace edge::probe_detail
