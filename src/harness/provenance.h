// Provenance stamped on every result (docs/measuring.md rules 1, 11): what code, flags, CPU, kernel
// path and weight types actually produced a number — read back from the loaded engine,
// never from the command line.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace edge {

class Model;

// Build and machine facts (commit, compiler and flags, CPU, allowed cores, time).
nlohmann::json machine_provenance();
// Adds what the loaded model really uses: format, architecture, kernel path, the count
// and bytes of tensors per weight type, file size and a content fingerprint.
nlohmann::json model_provenance(const Model& model);
// A cheap fingerprint of a (possibly multi-GB) file: size plus FNV-1a of its first and
// last MiB. Labelled as such in results; not a cryptographic hash.
std::string file_fingerprint(const std::string& path);
std::string iso_time_now();

}  // namespace edge
