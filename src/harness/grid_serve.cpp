#include "harness/grid_serve.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "core/process_rss.h"
#include "harness/grid_process.h"
#include "pipeline/stages/external_stage.h"

namespace edge {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

Expected<int> free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Status::unavailable("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return Status::unavailable("no free port");
  }
  const int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

std::string make_prompt(int words) {
  static const char* kWords[] = {"the",  "quick", "brown", "fox",   "jumps",   "over",    "a",
                                 "lazy", "dog",   "while", "seven", "wizards", "quietly", "judge"};
  std::string p;
  for (int i = 0; i < words; ++i) p += (i ? " " : "") + std::string(kWords[i % 14]);
  return p;
}

struct OneRequest {
  Clock::time_point t0;
  std::vector<Clock::time_point> stamps;
  std::string error;
};

OneRequest stream_one(int port, const std::string& model_id, const std::string& prompt,
                      int max_tokens, int seed, double timeout_s) {
  OneRequest r;
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(10, 0);
  cli.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::duration<double>(timeout_s)));
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.headers = {{"Content-Type", "application/json"}, {"Accept", "text/event-stream"}};
  req.body =
      json{{"model", model_id}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0},
           {"stream", true},    {"seed", seed},     {"ignore_eos", true}}
          .dump();
  int status = 0;
  std::string body;
  pipeline::SseReader sse;
  req.response_handler = [&](const httplib::Response& resp) {
    status = resp.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (status != 200) {
      body.append(data, std::min<size_t>(n, 300));
      return true;
    }
    return sse.feed(std::string_view(data, n), [&](const std::string& payload) {
      if (payload == "[DONE]") return false;
      const json j = json::parse(payload, nullptr, false);
      if (!j.is_object() || !j.contains("choices") || j["choices"].empty()) return true;
      // One chunk per generated token (its text may be empty: part of a UTF-8 sequence),
      // except the closing chunk that carries only the finish reason.
      const json& c = j["choices"][0];
      const bool closing = c.contains("finish_reason") && !c["finish_reason"].is_null() &&
                           c.value("text", std::string()).empty();
      if (!closing) r.stamps.push_back(Clock::now());
      return true;
    });
  };
  r.t0 = Clock::now();
  const httplib::Result res = cli.send(req);
  if (status != 200 && status != 0)
    r.error = "HTTP " + std::to_string(status) + ": " + body;
  else if (!res && r.stamps.empty())
    r.error = httplib::to_string(res.error());
  return r;
}

Status wait_ready(int port, OwnedProcess& server, double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (Clock::now() < deadline) {
    if (!server.alive()) return Status::unavailable("the server exited before it was ready");
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(1, 0);
    if (auto r = c.Get("/health"); r && r->status == 200) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return Status::deadline_exceeded("the server was not ready in time");
}

std::string served_model_id(int port) {
  httplib::Client c("127.0.0.1", port);
  auto r = c.Get("/v1/models");
  if (!r || r->status != 200) return "m";
  const json j = json::parse(r->body, nullptr, false);
  if (j.is_object() && j.contains("data") && !j["data"].empty())
    return j["data"][0].value("id", "m");
  return "m";
}

// Samples the server's process tree on a thread until stopped (before the server is).
class TreeSampler {
 public:
  TreeSampler(pid_t pid, int interval_ms, ServeArmResult& out) : out_(out) {
    if (interval_ms <= 0) return;
    const auto t0 = Clock::now();
    thread_ = std::thread([this, pid, interval_ms, t0] {
      while (!stop_) {
        const RssSample s = read_rss_tree(pid);
        if (s.processes > 0) {
          out_.rss.push_back(
              {std::chrono::duration<double>(Clock::now() - t0).count(), s.anon, s.anon_file()});
          out_.peak_anon = std::max(out_.peak_anon, s.anon);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
      }
    });
  }
  ~TreeSampler() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  ServeArmResult& out_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

void ServeLevelResult::add_metrics(std::map<std::string, double>& m) const {
  const std::string c = "c" + std::to_string(streams) + "_";
  m[c + "throughput_tok_s"] = wall_s > 0 ? static_cast<double>(tokens) / wall_s : 0;
  m[c + "ttft_ms_p50"] = percentile(ttft_ms, 0.5);
  m[c + "ttft_ms_p99"] = percentile(ttft_ms, 0.99);
  m[c + "itl_ms_p50"] = percentile(itl_ms, 0.5);
  m[c + "itl_ms_p99"] = percentile(itl_ms, 0.99);
  m[c + "errors"] = errors;
}

ServeLevelResult run_serve_level(int port, const std::string& model_id, const ServeLoad& load,
                                 int streams, int level_seed) {
  ServeLevelResult out;
  out.streams = streams;
  out.requests = std::max(load.requests, streams);
  const std::string prompt = make_prompt(load.prompt_words);
  std::vector<OneRequest> done(static_cast<size_t>(out.requests));
  std::mutex mu;
  int next = 0;
  const auto t0 = Clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < streams; ++w) {
    workers.emplace_back([&] {
      for (;;) {
        int i;
        {
          std::lock_guard<std::mutex> l(mu);
          if (next >= out.requests) return;
          i = next++;
        }
        // unique_prompts: a different first word per request, so no prefix cache serves it.
        const std::string p =
            load.unique_prompts ? "request " + std::to_string(i + 1000 * level_seed) + " " + prompt
                                : prompt;
        done[static_cast<size_t>(i)] =
            stream_one(port, model_id, p, load.max_tokens, 1000 + i, load.request_timeout_s);
      }
    });
  }
  for (std::thread& t : workers) t.join();
  out.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  for (const OneRequest& r : done) {
    if (!r.error.empty() || r.stamps.empty()) {
      out.errors++;
      if (out.error_samples.size() < 2)
        out.error_samples.push_back(r.error.empty() ? "no tokens" : r.error);
      continue;
    }
    out.tokens += static_cast<int64_t>(r.stamps.size());
    out.ttft_ms.push_back(ms_since(r.t0, r.stamps[0]));
    for (size_t k = 1; k < r.stamps.size(); ++k)
      out.itl_ms.push_back(ms_since(r.stamps[k - 1], r.stamps[k]));
  }
  return out;
}

Expected<ServeArmResult> run_serve_arm(const ServeLoad& load, const std::vector<int>& cpus,
                                       int level_seed) {
  ASSIGN_OR_RETURN(int port, free_port());
  std::vector<std::string> argv = load.command;
  for (std::string& a : argv)
    for (size_t i = a.find("{port}"); i != std::string::npos; i = a.find("{port}"))
      a.replace(i, 6, std::to_string(port));
  const auto t0 = Clock::now();
  ASSIGN_OR_RETURN(OwnedProcess server, OwnedProcess::spawn(argv, cpus));
  ServeArmResult r;
  TreeSampler sampler(server.pid(), load.rss_interval_ms, r);
  if (Status s = wait_ready(port, server, load.ready_timeout_s); !s.ok()) {
    sampler.stop();
    r.stopped = server.stop(5.0);
    return s.with_context(argv[0]);
  }
  r.ready_s = std::chrono::duration<double>(Clock::now() - t0).count();
  r.model_id = served_model_id(port);
  (void)stream_one(port, r.model_id, make_prompt(load.prompt_words), 4, 1,
                   load.request_timeout_s);  // warm-up
  for (size_t i = 0; i < load.streams.size(); ++i)
    r.levels.push_back(run_serve_level(port, r.model_id, load, load.streams[i],
                                       level_seed * 16 + static_cast<int>(i)));
  sampler.stop();
  r.stopped = server.stop(10.0);
  return r;
}

}  // namespace edge
