// Pinned artifacts: a stage's model files, projector or server binary are named with
// their sha256, and a file that differs is refused before the stage starts.
#pragma once

#include <functional>
#include <string>

#include "core/status.h"
#include "pipeline/graph/graph.h"

namespace edge::pipeline {

// Symbolic artifacts: a path "SCHEME:NAME" (e.g. "demo:lm") whose scheme the program
// registered names a file the program itself provides (edge-infer registers "demo", its
// built-in demo models, written once into the cache folder). The pipeline file cannot pin
// such a file in advance, so loading resolves the name and pins the file to its hash at
// load (Artifact::symbol keeps the name; plan and the runtime state report both).
using ArtifactResolver = std::function<Expected<std::string>(const std::string& name)>;
void register_artifact_scheme(const std::string& scheme, ArtifactResolver resolve);
// Whether `path` is "SCHEME:NAME" for some scheme (registered or not): letters, digits and
// '-' before the colon, at least two of them (so "C:" is a path).
bool is_symbolic_path(const std::string& path);
// Resolves a symbolic `a` in place: path, symbol and sha256 (the resolved file's hash; a
// pinned hash the file must match, when the file gave one). An unregistered scheme is refused.
Status resolve_symbolic_artifact(Artifact* a);

// Lowercase hex SHA-256 of a file's bytes (streamed; OpenSSL's EVP digest).
Expected<std::string> sha256_file(const std::string& path);

// The artifact's path with relative paths resolved against the pipeline file's folder.
std::string artifact_path(const PipelineSpec& p, const Artifact& a);

// Every artifact of `s` exists and hashes to its pinned value; the error names the stage,
// the artifact and both hashes ("differs from the declared artifact hash").
Status verify_artifacts(const PipelineSpec& p, const StageSpec& s);

}  // namespace edge::pipeline
