// An `edge-infer serve --port 0` child process for the server e2e tests: started on a
// small made model, waited for until it prints its URL, stopped with SIGTERM (a clean
// exit is part of every test: a crash fails it).
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace edge::e2e {

inline std::string server_tmp_dir() {
  static std::string dir = [] {
    std::string d = ::testing::TempDir() + "/edge_server_e2e_" + std::to_string(::getpid());
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A random qwen3 model with the synthetic tokenizer made by `make-model <flags>`, written
// once per test run under `name`; "" if make-model failed.
inline std::string made_model(const std::string& name, const std::string& flags) {
  std::string p = server_tmp_dir() + "/" + name + ".gguf";
  if (std::filesystem::exists(p)) return p;
  std::string cmd = std::string(EDGE_BINARY) + " make-model --arch qwen3 " + flags + " -o " + p + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return std::string();
  return p;
}

// A tiny random qwen3 model with the synthetic tokenizer, written once per test run.
inline const std::string& tiny_model() {
  static std::string path =
      made_model("tiny_qwen3", "--layers 2 --dim 64 --heads 4 --kv-heads 2 --vocab 512 --ctx 1024 --seed 7");
  return path;
}

class ServerProcess {
 public:
  // extra: more `serve` flags. Returns false (and records a failure) if it never listens.
  bool start(const std::string& model, const std::vector<std::string>& extra = {}) {
    log_ = server_tmp_dir() + "/serve_" + std::to_string(++counter()) + ".log";
    std::vector<std::string> args = {EDGE_BINARY, "serve", "--port", "0"};
    if (!model.empty()) {
      args.push_back("-m");
      args.push_back(model);
    }
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = fork();
    if (pid_ == 0) {
      FILE* f = std::fopen(log_.c_str(), "w");
      if (f) {
        dup2(fileno(f), 1);
        dup2(fileno(f), 2);
      }
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string out = read_file(log_);
      const size_t p = out.find("listening on http://");
      if (p != std::string::npos && out.find('\n', p) != std::string::npos) {
        url_ = out.substr(p + 20, out.find('\n', p) - p - 20);
        url_ = "http://" + url_;
        return true;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        ADD_FAILURE() << "edge-infer serve exited early:\n" << out;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "edge-infer serve never printed its URL:\n" << read_file(log_);
    return false;
  }

  // SIGTERM, then the exit status (0 on a clean shutdown; 128+signal for a crash).
  int stop() {
    terminate();
    return wait_exit();
  }
  // SIGTERM only (the server drains; wait_exit() collects it).
  void terminate() {
    if (pid_ > 0) kill(pid_, SIGTERM);
  }
  // Waits up to `seconds` for the exit (then SIGKILL: 137). -1 if not running.
  int wait_exit(int seconds = 10) {
    if (pid_ <= 0) return -1;
    int status = 0;
    for (int i = 0; i < seconds * 20; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return 137;
  }
  bool alive() const { return pid_ > 0 && kill(pid_, 0) == 0; }
  ~ServerProcess() {
    if (pid_ > 0) stop();
  }

  // Resident set (VmRSS) in KiB, from /proc.
  long rss_kib() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return -1;
  }

  const std::string& url() const { return url_; }
  int port() const { return std::atoi(url_.substr(url_.rfind(':') + 1).c_str()); }
  std::string log() const { return read_file(log_); }
  pid_t pid() const { return pid_; }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  pid_t pid_ = -1;
  std::string url_, log_;
};

struct CommandResult {
  int code = -1;
  std::string out;
};

// Runs a shell command, capturing stdout (stderr goes to the test log).
inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int rc = pclose(p);
  r.code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  return r;
}

inline bool have_node_openai() {
  return std::system("node --version > /dev/null 2>&1") == 0 &&
         std::filesystem::exists(std::string(EDGE_TEST_NODE_DIR) + "/node_modules/openai/package.json");
}

// node tests/e2e/<script> <node_modules dir> <base url> [args...]
inline CommandResult run_node(const std::string& script, const std::string& url, const std::string& args = "") {
  const std::string cmd = "node '" + std::string(EDGE_SOURCE_DIR) + "/tests/e2e/" + script + "' '" +
                          EDGE_TEST_NODE_DIR + "/node_modules' '" + url + "' " + args;
  return run_command(cmd);
}

}  // namespace edge::e2e
