// Pinned artifacts: a stage's model files, projector or server binary are named with
// their sha256, and a file that differs is refused before the stage starts.
#pragma once

#include <string>

#include "core/status.h"
#include "pipeline/graph/graph.h"

namespace edge::pipeline {

// Lowercase hex SHA-256 of a file's bytes (streamed; OpenSSL's EVP digest).
Expected<std::string> sha256_file(const std::string& path);

// The artifact's path with relative paths resolved against the pipeline file's folder.
std::string artifact_path(const PipelineSpec& p, const Artifact& a);

// Every artifact of `s` exists and hashes to its pinned value; the error names the stage,
// the artifact and both hashes ("differs from the declared artifact hash").
Status verify_artifacts(const PipelineSpec& p, const StageSpec& s);

}  // namespace edge::pipeline
