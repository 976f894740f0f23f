// Stage contracts: what a stage consumes and produces, versioned. A contract names each
// port (name, element type, shape with symbolic dims, modality) and has a canonical JSON
// wire form; tests/pipeline/graph/conformance/<name>@<version>.json pins that form byte for byte,
// so changing a port without bumping the version fails a test, and a worker whose
// contract version differs is refused at its handshake.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace edge::pipeline {

enum class Modality { kText, kTokens, kImage, kAudio, kEmbeddings, kSpeechCodes };
const char* modality_name(Modality m);

struct PortSpec {
  std::string name;
  std::string dtype;               // "i32", "f32", "f16", "u8", "s16", "utf8"
  std::vector<std::string> shape;  // dims: a number ("3") or a symbol ("n_tokens")
  Modality modality = Modality::kText;
  bool required = true;   // inputs only: must be routed
  bool streamed = false;  // arrives (or leaves) in chunks, each acknowledged
  // Fixed properties of the data, part of the contract: e.g. sample_rate 24000, channels 1,
  // format s16le for PCM. Connected ports must agree on every attribute both declare.
  std::vector<std::pair<std::string, std::string>> attributes;
};

// "name@version", e.g. "speech.codes@1".
struct ContractRef {
  std::string name;
  int32_t version = 0;
  std::string str() const { return name + "@" + std::to_string(version); }
  bool operator==(const ContractRef&) const = default;
};
Expected<ContractRef> parse_contract_ref(const std::string& s);

struct Contract {
  ContractRef ref;
  std::string summary;
  std::vector<PortSpec> inputs, outputs;

  const PortSpec* input(const std::string& port) const;
  const PortSpec* output(const std::string& port) const;
};

// Canonical wire form: keys in a fixed order, one port per line, ending in a newline.
std::string contract_wire_json(const Contract& c);

// The contracts this build implements, one entry per (name, version).
const std::vector<Contract>& builtin_contracts();
const Contract* find_contract(const ContractRef& ref);

// Two ports can be connected when dtype and modality agree and every dimension either
// matches or one side is symbolic. Returns "" or what differs.
std::string port_mismatch(const PortSpec& out, const PortSpec& in);

}  // namespace edge::pipeline
