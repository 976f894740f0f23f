#include "agent/model_policy.h"

#include <httplib.h>

#include "agent/tool_reply.h"

namespace edge::agent {

using nlohmann::json;

namespace {

constexpr const char* kSystem =
    "You operate a phone for the user. Each turn you see the current screen as a list of "
    "elements (id, role, label, value). Call exactly one tool per turn: tap(id), type(id, "
    "text), back(), or done() once the goal is reached. Change nothing the goal does not ask "
    "for.";

class ModelPolicy : public Policy {
 public:
  explicit ModelPolicy(ModelPolicyOptions o) : o_(std::move(o)) {
    while (!o_.server.empty() && o_.server.back() == '/') o_.server.pop_back();
    if (o_.server.size() > 3 && o_.server.compare(o_.server.size() - 3, 3, "/v1") == 0)
      o_.server.resize(o_.server.size() - 3);
  }
  Expected<Decision> decide(const Observation& obs) override {
    httplib::Client cli(o_.server);
    if (!cli.is_valid()) return Status::invalid_argument("bad server URL '" + o_.server + "'");
    cli.set_read_timeout(o_.timeout_s, 0);
    cli.set_connection_timeout(10, 0);
    httplib::Headers h;
    if (!o_.api_key.empty()) h.emplace("Authorization", "Bearer " + o_.api_key);
    auto res =
        cli.Post("/v1/chat/completions", h, step_request(o_, obs).dump(), "application/json");
    if (!res)
      return Status::unavailable("POST " + o_.server +
                                 "/v1/chat/completions: " + httplib::to_string(res.error()));
    if (res->status != 200)
      return Status::unavailable("the server answered " + std::to_string(res->status) + ": " +
                                 res->body.substr(0, 300));
    const json body = json::parse(res->body, nullptr, false);
    if (body.is_discarded()) return Decision{Action{"none", "", ""}, {"reply_not_json"}};
    return parse_reply(body);
  }

 private:
  ModelPolicyOptions o_;
};

}  // namespace

json step_request(const ModelPolicyOptions& o, const Observation& obs) {
  std::string user = "Goal: " + obs.task->goal + "\n\n" +
                     (o.ui_json ? obs.ui.to_json().dump() + "\n" : obs.ui.to_text());
  if (!obs.history.empty()) {
    user += "\nYour actions so far:";
    for (const std::string& a : obs.history) user += " " + a + ";";
    user += "\n";
  }
  json req = {{"messages", json::array({{{"role", "system"}, {"content", kSystem}},
                                        {{"role", "user"}, {"content", user}}})},
              {"tools", phone_tools()},
              {"tool_choice", o.constrained ? "required" : "auto"},
              {"max_tokens", o.max_tokens},
              {"temperature", o.temperature}};
  if (!o.model.empty()) req["model"] = o.model;
  if (o.constrained) req["parallel_tool_calls"] = false;  // one action per step
  return req;
}

std::unique_ptr<Policy> make_model_policy(const ModelPolicyOptions& o) {
  return std::make_unique<ModelPolicy>(o);
}

}  // namespace edge::agent
