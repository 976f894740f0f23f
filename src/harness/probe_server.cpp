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

  // A stream nobody reads, once the engine holds it paused (saturated); -1 (the check failed,
  // named) otherwise.
  int stalled_stream(Running& c) {
    // The counter is read before the request is sent: read after, it may already include the
    // whole stream. A poll with any figure unreadable (-1) decides nothing.
    double generated_before = -1;
    eventually([&] { return (generated_before = metric("edge_generated_tokens_total")) >= 0; });
    const double whole = static_cast<double>(o_.n) * o_.max_tokens;
    const int fd = open_stream(8192);
    if (!c.expect(fd >= 0, "cannot connect")) return -1;
    const auto t0 = Clock::now();
    bool seen_running = false, ended = false;
    double last_generated = -1;
    int steady_polls = 0;
    const bool settled = eventually([&] {
      const double paused = metric("edge_requests_paused");
      const double running = metric("edge_requests_running");
      const double waiting = metric("edge_requests_waiting");
      const double generated = metric("edge_generated_tokens_total");
      if (paused < 0 || running < 0 || waiting < 0 || generated < 0) return false;
      // Ended: seen running and now gone, or gone with every token counted. On a fast machine
      // a short stream runs and finishes between two polls; a request not yet admitted is
      // also out of flight, so the count (not merely its moving) tells the two apart.
      const bool in_flight = running + waiting > 0;
      ended = !in_flight && (seen_running || generated - generated_before >= whole);
      seen_running = seen_running || in_flight;
      if (ended) return true;
      // A pause alone can be momentary: the writer drains the queue into socket buffers that
      // still had room and the request resumes. Paused with nothing generated over several
      // polls, the buffers are full.
      steady_polls = paused > 0 && generated == last_generated ? steady_polls + 1 : 0;
      last_generated = generated;
      return steady_polls >= 5;
    });
    if (!c.expect(!ended,
                  "the stream ended before it filled the socket buffers: raise --n or "
                  "--stream-tokens") ||
        !c.expect(settled,
                  "the stream never stayed paused (nothing stops it at the high-water "
                  "mark)")) {
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
