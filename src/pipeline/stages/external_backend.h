// The process behind an external stage: an OpenAI-compatible server (our own
// `edge-infer serve`, or llama.cpp's llama-server) started from its pinned binary and
// model. This file knows its command line, its output (kept for the placement proof and
// for error messages), when it is ready, and how it ends. Every process started here is
// owned: spawned directly (posix_spawn, no shell), known by pid and start time, reaped,
// and a signal only ever goes to a process with the pid *and* start time we spawned.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "pipeline/graph/graph.h"

namespace edge::pipeline {

enum class ServerFlavour { kEdgeInfer, kLlamaServer };
const char* server_flavour_name(ServerFlavour f);

// The declared flavour ("edge-infer", "llama-server"), or, when none is declared, the one
// the binary's file name says: a name containing "llama-server" is llama.cpp's server,
// anything else is taken for ours.
Expected<ServerFlavour> server_flavour(const std::string& declared, const std::string& binary);

struct BackendLaunch {
  std::string stage;  // for messages
  ServerFlavour flavour = ServerFlavour::kEdgeInfer;
  std::string binary, model;
  std::string projector;  // the media encoders' file (--mmproj), for a multimodal backend
  int64_t ctx = 4096;     // positions per sequence
  int threads = 0;        // 0: the server's default
  int32_t capacity = 1;   // sequences served at once
  EngineSettings engine;  // ours: the same kv type, batch and budget as the in-process stage
  std::vector<std::string> extra_args;
  std::chrono::milliseconds ready_timeout{std::chrono::seconds(120)};
};

// The command (argv[0] is the binary). Ours is given port 0 and reports the port it bound;
// llama-server is given `port`. llama-server's -c is the context of all its slots
// together, so it gets ctx x capacity for each slot to hold ctx.
std::vector<std::string> backend_argv(const BackendLaunch& l, int port);

// Where the backend says the model went, from its output lines: ours prints
// "edge-infer: placement cpu (CPU; dense kernels X)"; llama-server logs the devices it uses
// ("using device Vulkan0 (...)") and "offloaded N/M layers to GPU". "cpu" when nothing was
// offloaded; "unreported" when the backend said nothing either way.
std::string placement_proof(ServerFlavour f, const std::vector<std::string>& lines);
// Where the backend says its vision encoder runs: ours prints "edge-infer: vision placement
// cpu (...)"; llama.cpp's mtmd logs "CLIP using NAME backend" (CPU, Vulkan0, ...).
// "unreported" without such a line.
std::string vision_placement_proof(ServerFlavour f, const std::vector<std::string>& lines);
// A multimodal backend's proof: the model's, then "; vision " and the encoder's.
inline constexpr const char* kVisionProofSeparator = "; vision ";
// The device class a placement proof shows: "cpu" (ours; llama-server with no layer
// offloaded), "gpu" (every layer offloaded), "partial" (some), "unknown" (no such line).
// With a vision part, both must agree: a model on the GPU beside a CLIP on the CPU is
// "partial".
std::string device_of_proof(const std::string& proof);
// The build a backend reported at start: ours "edge-infer: build COMMIT ...", llama-server's
// "build: N (HASH) ..." line; "unreported" without one.
std::string backend_version(ServerFlavour f, const std::vector<std::string>& lines);

class BackendOutput;

// One started backend process, ready to serve (GET /health answered 200).
class BackendProcess {
 public:
  // Spawns it, then waits for readiness; the process dying meanwhile or the timeout ends
  // the wait with an error naming the stage, the exit status and the last output lines.
  static Expected<std::unique_ptr<BackendProcess>> start(const BackendLaunch& l,
                                                         uint32_t generation);
  ~BackendProcess();  // stop(5 s)

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  uint32_t generation() const { return generation_; }
  const std::string& proof() const { return proof_; }
  const std::string& version() const { return version_; }

  // Whether it has not exited; reaps it when it has. Not thread-safe (the owner's lock).
  bool running();
  // Waits up to `timeout` for it to exit by itself (reaped when it has).
  bool wait_exit(std::chrono::milliseconds timeout);
  // SIGTERM (ours drains: streams in flight finish), SIGKILL when it has not exited within
  // `grace`, reaped. Safe to call again.
  void stop(std::chrono::milliseconds grace);
  // "exit status N" or "killed by signal N" once reaped; "running" before.
  std::string exit_description() const;
  // The last `n` lines it printed (stdout and stderr together).
  std::string output_tail(size_t n) const;

 private:
  BackendProcess() = default;
  Status wait_ready(const BackendLaunch& l);
  void signal_ours(int sig) const;

  pid_t pid_ = -1;
  long long start_ticks_ = -1;
  int port_ = 0;
  uint32_t generation_ = 0;
  int wait_status_ = 0;
  bool reaped_ = false;
  std::string proof_;
  std::string version_;
  std::unique_ptr<BackendOutput> output_;
};

}  // namespace edge::pipeline
