// Symbolic artifacts (pipeline/graph/artifact.h): a path "SCHEME:NAME" of a registered scheme
// is resolved at load and pinned to the resolved file's hash; an unknown scheme, a name the
// resolver refuses and a declared hash the file does not match are refused by name; a plain
// path without a hash is still refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "pipeline/graph/artifact.h"
#include "pipeline/graph/graph.h"

namespace edge::pipeline {
namespace {

std::string graph_with(const std::string& artifact) {
  return "stages:\n  - name: lm\n    kind: lm\n    contract: text.generate@1\n    reservation: "
         "1GiB\n"
         "    artifacts: [" +
         artifact + "]\nroutes: [input.prompt -> lm.prompt, lm.text -> output.text]\n";
}

class SymbolicArtifact : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ =
        (std::filesystem::temp_directory_path() / ("edge_symbolic_" + std::to_string(::getpid())))
            .string();
    std::ofstream(file_) << "model bytes";
    const std::string f = file_;
    register_artifact_scheme("testdemo", [f](const std::string& name) -> Expected<std::string> {
      if (name == "lm") return f;
      return Status::not_found("no test artifact '" + name + "'");
    });
  }
  void TearDown() override { std::filesystem::remove(file_); }
  std::string file_;
};

TEST_F(SymbolicArtifact, ResolvesAndPinsToTheFileHash) {
  auto p = parse_pipeline(graph_with("{role: model, path: \"testdemo:lm\"}"), "/nowhere");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  const Artifact& a = p->stages[0].artifacts[0];
  EXPECT_EQ(a.symbol, "testdemo:lm");
  EXPECT_EQ(a.path, file_);
  EXPECT_EQ(a.sha256, *sha256_file(file_));
  EXPECT_TRUE(verify_artifacts(*p, p->stages[0]).ok());
  // A declared hash is kept as a pin the resolved file must match.
  auto pinned = parse_pipeline(
      graph_with("{role: model, path: \"testdemo:lm\", sha256: " + a.sha256 + "}"), "");
  EXPECT_TRUE(pinned.ok()) << pinned.status().to_string();
}

TEST_F(SymbolicArtifact, RefusesWhatItCannotResolveOrPin) {
  struct Case {
    std::string artifact, says;
  };
  const std::string wrong(64, 'a');
  for (const Case& c : {Case{"{role: model, path: \"nosuch:lm\"}", "no 'nosuch:' paths"},
                        Case{"{role: model, path: \"testdemo:gone\"}", "no test artifact 'gone'"},
                        Case{"{role: model, path: \"testdemo:lm\", sha256: " + wrong + "}",
                             "differs from the declared artifact hash"},
                        Case{"{role: model, path: lm.gguf}", "needs a pinned sha256"}}) {
    auto p = parse_pipeline(graph_with(c.artifact), "");
    ASSERT_FALSE(p.ok()) << c.artifact;
    EXPECT_NE(p.status().message().find(c.says), std::string::npos) << p.status().to_string();
    EXPECT_NE(p.status().to_string().find("stage 'lm'"), std::string::npos)
        << p.status().to_string();
  }
  EXPECT_FALSE(is_symbolic_path("C:/models/lm.gguf"));  // one letter: a drive, not a scheme
  EXPECT_FALSE(is_symbolic_path("./lm.gguf"));
  EXPECT_TRUE(is_symbolic_path("demo:lm"));
}

}  // namespace
}  // namespace edge::pipeline
