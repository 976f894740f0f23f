// Contracts: each built-in contract's wire form equals its conformance fixture byte for
// byte (tests/pipeline/graph/conformance/<name>@<version>.json), so a port cannot change without a
// version bump; references parse and refuse malformed names; port compatibility rules.
#include "pipeline/graph/contract.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace edge::pipeline {
namespace {

const std::string kFixtures = std::string(EDGE_SOURCE_DIR) + "/tests/pipeline/graph/conformance";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Contract, EveryContractMatchesItsConformanceFixture) {
  // EDGE_UPDATE_FIXTURES=1 writes missing fixtures for a NEW contract version; an existing
  // fixture is never rewritten: a changed wire form needs a new version.
  const bool write_new = std::getenv("EDGE_UPDATE_FIXTURES") != nullptr;
  std::set<std::string> expected_files;
  for (const Contract& c : builtin_contracts()) {
    const std::string path = kFixtures + "/" + c.ref.str() + ".json";
    expected_files.insert(c.ref.str() + ".json");
    const std::string wire = contract_wire_json(c);
    if (!std::filesystem::exists(path) && write_new) std::ofstream(path, std::ios::binary) << wire;
    ASSERT_TRUE(std::filesystem::exists(path)) << "no conformance fixture for " << c.ref.str();
    EXPECT_EQ(wire, slurp(path)) << c.ref.str()
                                 << ": the wire form changed; bump the contract version instead";
    EXPECT_EQ(nlohmann::json::parse(wire)["contract"], c.ref.str());
  }
  // A fixture without a contract means a version was dropped: a deployed worker speaking
  // it would no longer be understood.
  for (const auto& e : std::filesystem::directory_iterator(kFixtures))
    EXPECT_TRUE(expected_files.count(e.path().filename().string()))
        << e.path() << " has no contract";
}

TEST(Contract, ReferencesParseAndRefuseMalformedNames) {
  auto r = parse_contract_ref("speech.codes@1");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->name, "speech.codes");
  EXPECT_EQ(r->version, 1);
  for (const char* bad : {"speech.codes", "@1", "x@", "x@0", "x@-1", "x@1a", "x@99999999"})
    EXPECT_FALSE(parse_contract_ref(bad).ok()) << bad;
  EXPECT_NE(find_contract({"audio.pcm", 1}), nullptr);
  EXPECT_NE(find_contract({"audio.pcm", 2}), nullptr);
  EXPECT_EQ(find_contract({"audio.pcm", 3}), nullptr);
}

TEST(Contract, PortsConnectWhenTypeModalityAndFixedDimsAgree) {
  const PortSpec codes_out{"codes", "i32", {"n_frames"}, Modality::kSpeechCodes, true, true};
  PortSpec in = codes_out;
  EXPECT_EQ(port_mismatch(codes_out, in), "");
  in.dtype = "f32";
  EXPECT_EQ(port_mismatch(codes_out, in), "dtype i32 vs f32");
  in = codes_out;
  in.modality = Modality::kAudio;
  EXPECT_EQ(port_mismatch(codes_out, in), "modality speech_codes vs audio");
  in = codes_out;
  in.shape = {"n", "2"};
  EXPECT_EQ(port_mismatch(codes_out, in), "rank 1 vs 2");
  const PortSpec img{"image", "u8", {"h", "w", "3"}, Modality::kImage, true, false};
  PortSpec img4 = img;
  img4.shape[2] = "4";
  EXPECT_EQ(port_mismatch(img, img4), "dimension 2: 3 vs 4");
  img4.shape[2] = "channels";  // symbolic matches anything
  EXPECT_EQ(port_mismatch(img, img4), "");
  PortSpec pcm24{"pcm", "s16", {"n"}, Modality::kAudio, true, true, {{"sample_rate", "24000"}}};
  PortSpec pcm16 = pcm24;
  pcm16.attributes = {{"sample_rate", "16000"}, {"channels", "1"}};
  EXPECT_EQ(port_mismatch(pcm24, pcm16), "sample_rate 24000 vs 16000");
}

}  // namespace
}  // namespace edge::pipeline
