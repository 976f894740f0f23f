// The server probe: a real client of `serve` over HTTP. Streams go through raw sockets so
// that the probe decides when to read and when to hang up; a small receive buffer keeps
// a stalled reader from hiding a whole response in socket buffers.
#include <httplib.h>
#include <unistd.h>

#include <thread>

#include "harness/probe.h"
#include "harness/probe_check.h"
#include "harness/probe_server_speech.h"
#include "harness/raw_http.h"

namespace edge {

using namespace probe_detail;
using nlohmann::json;

namespace {

struct Url {
  std::string host, port;
};

Expected<Url> parse_url(std::string u) {
  if (u.rfind("http://", 0) != 0) return Status::invalid_argument("only http:// URLs: " + u);
  u = u.substr(7);
  u = u.substr(0, u.find('/'));
  const size_t colon = u.rfind(':');
  if (colon == std::string::npos) return Url{u, "80"};
  return Url{u.substr(0, colon), u.substr(colon + 1)};
}

class ServerClient {
 public:
  ServerClient(Url u, std::string base, const ServerProbeOptions& o)
      : url_(std::move(u)), http_(base), o_(o) {
    http_.set_read_timeout(static_cast<time_t>(o.timeout.count()), 0);
    if (!o.api_key.empty()) auth_.emplace("Authorization", "Bearer " + o.api_key);
  }

  // A value of /metrics; -1 when absent or unreachable.
  double metric(const std::string& name) {
    auto r = http_.Get("/metrics", auth_);
    if (!r || r->status != 200) return -1;
    const size_t p = r->body.find("\n" + name + " ");
    return p == std::string::npos ? -1 : std::atof(r->body.c_str() + p + name.size() + 2);
  }
  bool ready() {
    auto r = http_.Get("/health/ready");
    return r && r->status == 200;
  }
  // POST /v1/completions (stream) on a raw socket; -1 when it cannot connect.
  int open_stream(int rcvbuf) {
    const json body = {{"prompt", o_.prompt}, {"max_tokens", o_.max_tokens},
                       {"n", o_.n},           {"ignore_eos", true},
                       {"stream", true},      {"temperature", 0}};
    const std::string auth =
        o_.api_key.empty() ? "" : "Authorization: Bearer " + o_.api_key + "\r\n";
    return raw_http_request(url_.host, url_.port, "POST", "/v1/completions", body.dump(), auth,
                            rcvbuf);
  }
  template <typename F>
  bool eventually(F&& f) {
    const auto deadline = Clock::now() + o_.timeout;
    while (Clock::now() < deadline) {
      if (f()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return f();
  }

  // A stream nobody reads, once the engine has paused it (saturated); -1 (the check failed,
  // named) otherwise. Seen running and then gone without a pause: it ended first (more
  // choices or tokens are needed to fill the socket buffers), no need to wait longer.
  int stalled_stream(Running& c) {
    // On a fast machine a short stream can run and finish between two polls, so "ended"
    // is also told by the generated-token counter having moved with nothing in flight. The
    // counter is read before the request is sent: read after, it may already include the
    // whole stream (then nothing would ever move and the probe would wait out its timeout).
    const double generated_before = metric("edge_generated_tokens_total");
    const int fd = open_stream(8192);
    if (!c.expect(fd >= 0, "cannot connect")) return -1;
    const auto t0 = Clock::now();
    bool seen_running = false, ended = false;
    eventually([&] {
      if (metric("edge_requests_paused") > 0) return true;
      const double in_flight = metric("edge_requests_running") + metric("edge_requests_waiting");
      const bool generated = metric("edge_generated_tokens_total") > generated_before;
      ended = (seen_running || generated) && in_flight == 0;
      seen_running = seen_running || in_flight > 0;
      return ended;
    });
    if (!c.expect(!ended,
                  "the stream ended before it filled the socket buffers: raise --n or "
                  "--stream-tokens") ||
        !c.expect(metric("edge_requests_paused") > 0,
                  "the stream never paused (nothing stops it at the high-water mark)")) {
      close(fd);
      return -1;
    }
    c.figures()["seconds_to_pause"] = since(t0);
    return fd;
  }

 private:
  Url url_;
  httplib::Client http_;
  httplib::Headers auth_;
  const ServerProbeOptions& o_;
};

// The text of each choice of an SSE completion stream (HTTP/1.1 chunked), and whether it
// ended with [DONE].
struct Streamed {
  std::vector<std::string> texts;
  bool done = false;
  std::string error;
};
Streamed parse_stream(const std::string& raw) {
  Streamed s;
  const std::string body = parse_raw_response(raw).body;
  for (size_t at = body.find("data: "); at != std::string::npos; at = body.find("data: ", at + 6)) {
    const size_t end = body.find("\n\n", at);
    const std::string data =
        body.substr(at + 6, end == std::string::npos ? std::string::npos : end - at - 6);
    if (data == "[DONE]") {
      s.done = true;
      continue;
    }
    const json j = json::parse(data, nullptr, false);
    if (j.contains("error")) s.error = j["error"].dump();
    if (!j.contains("choices")) continue;
    for (const json& c : j["choices"]) {
      const size_t i = c.value("index", 0);
      if (s.texts.size() <= i) s.texts.resize(i + 1);
      s.texts[i] += c.value("text", "");
    }
  }
  return s;
}

// The reference stream every later check compares with; false when there is none.
bool run_baseline(ServerClient& cl, const ServerProbeOptions& o, ProbeReport& report,
                  Streamed* baseline) {
  Running c(report, "server.baseline");
  if (!c.expect(cl.ready(), "not ready: GET /health/ready is not 200")) return false;
  const int fd = cl.open_stream(0);
  if (!c.expect(fd >= 0, "cannot connect")) return false;
  *baseline = parse_stream(read_to_end(fd));
  c.figures()["choices"] = baseline->texts.size();
  return c.expect(
      baseline->done && baseline->error.empty() && static_cast<int>(baseline->texts.size()) == o.n,
      "the stream did not end cleanly with every choice");
}

}  // namespace

ProbeReport probe_server(const std::string& url, const ServerProbeOptions& o) {
  ProbeReport report;
  report.target = "server " + url;
  auto u = parse_url(url);
  std::string base = url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.size() > 3 && base.compare(base.size() - 3, 3, "/v1") == 0) base.resize(base.size() - 3);
  Streamed baseline;
  if (!u.ok()) {
    Running(report, "server.baseline").fail(u.status().to_string());
    return report;
  }
  ServerClient cl(*u, base, o);
  if (!run_baseline(cl, o, report, &baseline)) return report;
  int fd = -1;
  {
    Running c(report, "server.saturation");
    fd = cl.stalled_stream(c);
  }
  {
    Running c(report, "server.same_text_after_saturation");
    if (fd < 0) {
      c.skip("no saturated stream");
    } else {
      const Streamed got = parse_stream(read_to_end(fd));
      c.expect(got.done && got.error.empty(), "the stream did not end cleanly");
      c.expect(got.texts == baseline.texts, "the text differs from the baseline");
    }
  }
  {
    Running c(report, "server.cancel");
    const double before = cl.metric("edge_engine_requests_cancelled_total");
    const int s = cl.stalled_stream(c);
    if (s >= 0) {
      close(s);
      const auto t0 = Clock::now();
      c.expect(
          cl.eventually([&] { return cl.metric("edge_engine_requests_cancelled_total") > before; }),
          "the engine never cancelled the request of a client that hung up");
      c.figures()["hangup_to_cancel_s"] = since(t0);
      c.expect(cl.eventually([&] { return cl.metric("edge_kv_blocks_used") == 0; }),
               "KV blocks still held after the cancel");
    }
  }
  {
    Running c(report, "server.after_cancel");
    const int f = cl.open_stream(0);
    if (c.expect(f >= 0, "cannot connect"))
      c.expect(parse_stream(read_to_end(f)).texts == baseline.texts,
               "the text differs from the baseline");
  }
  if (cl.metric("edge_tts_requests") >= 0)
    server_speech_checks(
        {u->host, u->port, o.api_key.empty() ? "" : "Authorization: Bearer " + o.api_key + "\r\n"},
        [&cl](const std::string& name) { return cl.metric(name); }, o, report);
  else
    Running(report, "speech").skip("the server does not speak (no edge_tts_* in /metrics)");
  Running(report, "server.stale_handle").skip("the HTTP API has no request handles to go stale");
  Running(report, "server.worker_killed")
      .skip(
          "the server's processes are not this program's children, so it does not signal them; "
          "probe its pipeline with --pipeline FILE");
  return report;
}

}  // namespace edge
