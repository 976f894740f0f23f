// The policy of a model behind an OpenAI-compatible server: each step is one
// POST /v1/chat/completions with the phone's tools, the goal, the screen as a UI tree and
// the actions so far; the reply becomes one action (tool_reply.h).
#pragma once

#include <memory>
#include <string>

#include "agent/loop.h"

namespace edge::agent {

struct ModelPolicyOptions {
  std::string server;  // http://127.0.0.1:8080 (a trailing /v1 is accepted)
  std::string model;   // the request's "model" ("" : the server's default)
  std::string api_key;
  int max_tokens = 96;
  double temperature = 0.0;
  int timeout_s = 120;
  bool ui_json = false;  // the screen as the UI tree's JSON instead of one line per element
  // tool_choice "required" and one call per step: the server holds the reply to a
  // well-formed call of one of the phone's tools (constrained decoding), so a reply can
  // no longer fail to parse; "auto" lets the model answer in text.
  bool constrained = false;
};

std::unique_ptr<Policy> make_model_policy(const ModelPolicyOptions& o);

// The chat request of one step (exposed for tests and for reading what the model saw).
nlohmann::json step_request(const ModelPolicyOptions& o, const Observation& obs);

}  // namespace edge::agent
