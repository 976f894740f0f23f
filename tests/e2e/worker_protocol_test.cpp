// The worker wire protocol (pipeline/worker/worker_protocol.h) against a real `edge-infer
// worker` process, as the stage contracts are pinned by their fixtures: a scripted session
// (hello, ready, request, events, ack, done; a request cancelled while the worker waits for
// credits; retire and a clean exit) is recorded as the sequence of message types and their
// field names, and must equal tests/data/worker_protocol/text.generate@1.session.json. A
// changed message shape fails here: a deployed pipeline and a worker of another build must
// still understand each other, so a change means a new protocol version and a new fixture
// (EDGE_UPDATE_FIXTURES=1 writes a missing one; an existing one is never rewritten). A worker
// asked for a contract version it does not implement, or given a model whose bytes differ
// from the pinned hash, answers `error` naming it and exits before loading anything.
#include "pipeline/worker/worker_protocol.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "convert/random_model.h"
#include "pipeline/graph/artifact.h"
#include "pipeline/worker/request_params_json.h"

namespace edge::pipeline {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

const std::string kFixture =
    std::string(EDGE_SOURCE_DIR) + "/tests/data/worker_protocol/text.generate@1.session.json";

class WorkerProtocol : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("edge_worker_protocol_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    RandomModelOptions o;
    o.n_layer = 2, o.n_embd = 64, o.n_vocab = 512, o.seed = 5;
    model_ = (dir_ / "lm.gguf").string();
    ASSERT_TRUE(write_random_model(o, model_).ok());
    hash_ = *sha256_file(model_);
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
    fs::remove_all(dir_);
  }

  // `edge-infer worker --fd N` on one end of a socket pair; ours is fd_.
  void spawn() {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    pid_ = ::fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      ::close(sv[0]);
      const std::string fd = std::to_string(sv[1]);
      ::execl(EDGE_BINARY, EDGE_BINARY, "worker", "--fd", fd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(sv[1]);
    fd_ = sv[0];
  }
  int exit_code() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  nlohmann::json hello(const std::string& contract, const std::string& sha, int credits) const {
    return {{"type", "hello"}, {"stage", "lm"},   {"contract", contract}, {"model", model_},
            {"sha256", sha},   {"capacity", 2},   {"ctx", 256},           {"max_tokens", 4},
            {"threads", 1},    {"generation", 1}, {"credits", credits}};
  }

  // The transcript: each shape of message (direction, type, field names) once, in the order
  // it first appeared; how many events a stream takes does not change it.
  void record(const char* from, const nlohmann::json& m) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : m.items()) keys.push_back(k);
    const nlohmann::json entry = {{"from", from}, {"type", m.value("type", "")}, {"fields", keys}};
    for (const auto& e : transcript_)
      if (e == entry) return;
    transcript_.push_back(entry);
  }
  void send(const nlohmann::json& m) {
    record("pipeline", m);
    ASSERT_TRUE(send_message(fd_, m).ok());
  }
  nlohmann::json receive() {
    auto m = receive_message(fd_, seconds(30));
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    if (!m.ok()) return nlohmann::json::object();
    record("worker", *m);
    return *m;
  }
  // Reads epoch's events up to its done / failed (acknowledging each), returns that end.
  nlohmann::json drain(uint64_t epoch) {
    for (;;) {
      nlohmann::json m = receive();
      if (m.empty()) return m;
      if (m["type"] == "event") {
        send({{"type", "ack"}, {"epoch", epoch}, {"n", 1}});
        continue;
      }
      return m;
    }
  }

  fs::path dir_;
  std::string model_, hash_;
  pid_t pid_ = -1;
  int fd_ = -1;
  nlohmann::json transcript_ = nlohmann::json::array();
};

TEST_F(WorkerProtocol, SessionMatchesTheRecordedFixture) {
  spawn();
  send(hello("text.generate@1", hash_, 1));  // one credit: the worker waits for each ack
  const nlohmann::json ready = receive();
  ASSERT_EQ(ready.value("type", ""), "ready") << ready.dump();
  EXPECT_EQ(ready["contract"], "text.generate@1");
  EXPECT_EQ(ready["generation"], 1);
  EXPECT_GT(ready["pid"].get<int>(), 0);

  send({{"type", "request"}, {"epoch", 1}, {"inputs", {{"prompt", {{"tokens", {1, 2, 3, 4}}}}}}});
  const nlohmann::json done = drain(1);
  EXPECT_EQ(done.value("type", ""), "done") << done.dump();

  // Cancelled while its first event waits for an ack that never comes (and 200 tokens to go).
  RequestParams long_answer;
  long_answer.max_tokens = 200;
  long_answer.ignore_eos = true;
  send({{"type", "request"},
        {"epoch", 2},
        {"inputs", {{"prompt", {{"tokens", {5, 6, 7}}}}}},
        {"params", request_params_json(long_answer)}});
  const nlohmann::json first = receive();
  EXPECT_EQ(first.value("type", ""), "event") << first.dump();
  send({{"type", "cancel"}, {"epoch", 2}});
  nlohmann::json end = receive();
  while (end.value("type", "") == "event") end = receive();  // sent before the cancel landed
  EXPECT_EQ(end.value("type", ""), "failed") << end.dump();
  EXPECT_EQ(end.value("code", ""), "cancelled") << end.dump();

  send({{"type", "retire"}});
  EXPECT_EQ(exit_code(), 0);

  const std::string got = transcript_.dump(2) + "\n";
  if (!fs::exists(kFixture) && std::getenv("EDGE_UPDATE_FIXTURES")) {
    fs::create_directories(fs::path(kFixture).parent_path());
    std::ofstream(kFixture, std::ios::binary) << got;
  }
  ASSERT_TRUE(fs::exists(kFixture)) << "no fixture; EDGE_UPDATE_FIXTURES=1 writes it:\n" << got;
  std::ifstream in(kFixture, std::ios::binary);
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str()) << "the worker protocol's messages changed shape";
}

TEST_F(WorkerProtocol, RefusesAContractVersionItDoesNotImplement) {
  spawn();
  send(hello("text.generate@9", hash_, 16));
  const nlohmann::json m = receive();
  ASSERT_EQ(m.value("type", ""), "error") << m.dump();
  EXPECT_NE(m["message"].get<std::string>().find("does not implement contract text.generate@9"),
            std::string::npos)
      << m.dump();
  EXPECT_EQ(exit_code(), 2);
}

TEST_F(WorkerProtocol, RefusesAModelThatDiffersFromItsPinnedHash) {
  spawn();
  send(hello("text.generate@1", std::string(64, '0'), 16));
  const nlohmann::json m = receive();
  ASSERT_EQ(m.value("type", ""), "error") << m.dump();
  const std::string msg = m["message"].get<std::string>();
  EXPECT_NE(msg.find("differs from the declared artifact hash"), std::string::npos) << msg;
  EXPECT_NE(msg.find(hash_), std::string::npos) << msg;  // the file's actual hash, named
  EXPECT_EQ(exit_code(), 2);
}

}  // namespace
}  // namespace edge::pipeline
