// Reference data of the conformance tests (numbers an independent implementation produced,
// kept under tests/data/<family>/ with the commands that made them) and the models those
// numbers were made on, rebuilt by the data folder's make_models.sh with our make-model.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "e2e/server_process.h"

namespace edge::e2e {

// A little-endian f32 file as floats.
inline std::vector<float> read_f32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> v;
  float x;
  while (in.read(reinterpret_cast<char*>(&x), sizeof x)) v.push_back(x);
  return v;
}

// Runs data_dir/make_models.sh into a temporary folder named `name` and returns it.
inline std::string make_conformance_models(const std::string& data_dir, const std::string& name) {
  const std::string d = server_tmp_dir() + "/" + name;
  const CommandResult r =
      run_command("sh " + data_dir + "make_models.sh " + d + " " + EDGE_BINARY + " 2>&1");
  EXPECT_EQ(r.code, 0) << r.out;
  return d;
}

}  // namespace edge::e2e
