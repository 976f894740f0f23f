// `edge-infer probe` as a user runs it: over a pipeline file whose language model runs in a
// worker (the probe starts it, kills it after the first token and expects the explicit
// error), and over a real `serve` (saturation, same text, a hang-up cancels in the engine);
// a probe that cannot saturate the stream fails, named, and exits 1.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "pipeline/graph/artifact.h"
#include "server_process.h"

namespace edge::e2e {
namespace {

using nlohmann::json;

const json* find_check(const json& report, const std::string& name) {
  for (const json& c : report["checks"])
    if (c["name"] == name) return &c;
  return nullptr;
}

TEST(ProbeCli, PipelineWorkerKilledIsAnExplicitErrorAndNothingIsLeftBehind) {
  ASSERT_FALSE(tiny_model().empty());
  const std::string file = server_tmp_dir() + "/probe_worker.yaml";
  {
    std::ofstream f(file);
    f << "stages:\n  - name: lm\n    kind: lm\n    contract: text.generate@1\n    placement: "
         "worker\n"
         "    reservation: 1GiB\n    artifacts: [{role: model, path: "
      << tiny_model() << ", sha256: " << *pipeline::sha256_file(tiny_model())
      << "}]\nroutes: [input.prompt -> lm.prompt, lm.tokens -> output.ids]\n";
  }
  const CommandResult r =
      run_command(std::string(EDGE_BINARY) + " probe --pipeline " + file + " --ctx 256");
  EXPECT_EQ(r.code, 0) << r.out;
  const json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_TRUE(j["passed"].get<bool>());
  EXPECT_TRUE(j["findings"].empty()) << j["findings"].dump();
  const json* killed = find_check(j, "text.worker_killed");
  ASSERT_NE(killed, nullptr);
  EXPECT_EQ((*killed)["result"], "pass") << killed->dump();
  EXPECT_NE((*killed)["figures"]["error"].get<std::string>().find("generation 1"),
            std::string::npos);
  ASSERT_NE(find_check(j, "text.after_worker_killed"), nullptr);
  EXPECT_EQ((*find_check(j, "text.after_worker_killed"))["figures"]["generation"], 2);
  EXPECT_TRUE(j.contains("provenance"));
}

TEST(ProbeCli, ServerProbeOverHttp) {
  ASSERT_FALSE(tiny_model().empty());
  ServerProcess server;
  ASSERT_TRUE(server.start(tiny_model(), {"--max-seqs", "16"}));
  // Too few tokens to fill the socket buffers: saturation fails, said plainly, exit 1.
  CommandResult r = run_command(std::string(EDGE_BINARY) + " probe --server " + server.url() +
                                " --n 2 --stream-tokens 20");
  EXPECT_EQ(r.code, 1) << r.out;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_FALSE(j["passed"].get<bool>());
  ASSERT_NE(find_check(j, "server.saturation"), nullptr);
  EXPECT_EQ((*find_check(j, "server.saturation"))["result"], "fail");
  EXPECT_NE((*find_check(j, "server.saturation"))["detail"].get<std::string>().find("ended before"),
            std::string::npos)
      << r.out;

  r = run_command(std::string(EDGE_BINARY) + " probe --server " + server.url());
  EXPECT_EQ(r.code, 0) << r.out;
  j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  for (const char* name :
       {"server.baseline", "server.saturation", "server.same_text_after_saturation",
        "server.cancel", "server.after_cancel"}) {
    const json* c = find_check(j, name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_EQ((*c)["result"], "pass") << c->dump();
  }
  // What a client cannot do over HTTP is skipped, with the reason, never passed.
  EXPECT_EQ((*find_check(j, "server.worker_killed"))["result"], "skipped");
  EXPECT_EQ((*find_check(j, "speech"))["result"], "skipped");  // this server does not speak
  EXPECT_EQ(j["skipped"], 3);
  EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace edge::e2e
