// Runs @huggingface/jinja (tests/tokenizer/ref_chat_template.mjs) over a batch of
// (template, variables) cases for the chat-template tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "tok_test_util.h"

namespace edge::testing {

using ojson = nlohmann::ordered_json;

struct Case {
  size_t template_index;
  std::string label;
  ojson vars;
};

inline bool have_node() { return std::system("node --version > /dev/null 2>&1") == 0; }

inline std::vector<ojson> run_reference_renders(const std::vector<std::string>& templates,
                                                const std::vector<Case>& cases) {
  ojson input = {{"templates", ojson::array()}, {"cases", ojson::array()}};
  for (const auto& t : templates) input["templates"].push_back(t);
  for (const auto& c : cases) input["cases"].push_back({{"template", c.template_index}, {"vars", c.vars}});
  std::string path = (std::filesystem::temp_directory_path() / "edge_chat_ref_XXXXXX").string();
  const int fd = mkstemp(path.data());
  EXPECT_GE(fd, 0);
  const std::string body = input.dump();
  EXPECT_EQ(write(fd, body.data(), body.size()), static_cast<ssize_t>(body.size()));
  close(fd);
  const std::string cmd = "node '" + std::string(EDGE_SOURCE_DIR) + "/tests/tokenizer/ref_chat_template.mjs' '" +
                          node_dir() + "' '" + path + "'";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  char buf[65536];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  if (p) {
    EXPECT_EQ(pclose(p), 0) << cmd;
  }
  std::remove(path.c_str());
  std::vector<ojson> results;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t e = out.find('\n', pos);
    if (e == std::string::npos) e = out.size();
    ojson j = ojson::parse(out.substr(pos, e - pos), nullptr, false);
    if (!j.is_discarded()) results.push_back(std::move(j));
    pos = e + 1;
  }
  return results;
}

}  // namespace edge::testing
