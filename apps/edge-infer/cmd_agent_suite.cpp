// edge-infer agent-suite --server URL [--repeats N] [--tasks a,b] [--variants a,b]
//   [--max-steps S] [--policy model|oracle|toggle-all|loop] [--model NAME] [--api-key K]:
// the phone-agent suite (src/agent/) against an OpenAI-compatible server, as JSON: pass
// rate per task over repeats, falsely claimed done, damage, loops, every recovery. Exit 1
// when a request to the server failed (the report still comes out).
#include <cstdio>
#include <memory>

#include "agent/loop.h"
#include "agent/model_policy.h"
#include "agent/scripted_policies.h"
#include "commands.h"

namespace edge::cli {

namespace {

struct AgentSuiteArgs {
  agent::ModelPolicyOptions model;
  std::vector<std::string> tasks, variants;
  int repeats = 3, max_steps = 20;
  std::string policy = "model";
};

int run_agent_suite(const AgentSuiteArgs& a) {
  if (a.policy == "model" && a.model.server.empty())
    return report_error(Status::invalid_argument("--server URL is needed for --policy model"));
  agent::SuiteOptions o;
  o.tasks = a.tasks, o.variants = a.variants, o.repeats = a.repeats;
  o.limits.max_steps = a.max_steps;
  agent::PolicyFactory make = [&a]() -> std::unique_ptr<agent::Policy> {
    if (a.policy == "oracle") return agent::make_oracle_policy();
    if (a.policy == "toggle-all") return agent::make_toggle_all_policy();
    if (a.policy == "loop") return agent::make_looping_policy("self_undo");
    return agent::make_model_policy(a.model);
  };
  auto report = agent::run_suite(o, make);
  if (!report.ok()) return report_error(report.status());
  (*report)["policy"] = a.policy;
  if (a.policy == "model") (*report)["server"] = a.model.server;
  for (const auto& w : (*report)["warnings"])
    std::fprintf(stderr, "edge-infer: warning: %s\n", w.get<std::string>().c_str());
  // Replies are model output: whatever bytes they hold, the report still prints.
  std::printf("%s\n", report->dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  // The server failing (unreachable, errors) is not a model's low score: say so in the status.
  return (*report)["total"]["policy_errors"].get<int>() > 0 ? 1 : 0;
}

}  // namespace

void register_agent_suite(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<AgentSuiteArgs>();
  CLI::App* sub = app.add_subcommand(
      "agent-suite", "Phone-agent tasks against an OpenAI-compatible server (tools API)");
  sub->add_option("--server", a->model.server, "server base URL, e.g. http://127.0.0.1:8080");
  sub->add_option("--model", a->model.model, "model name sent with each request");
  sub->add_option("--api-key", a->model.api_key, "bearer key");
  sub->add_option("-r,--repeats", a->repeats, "runs per task and variant")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--tasks", a->tasks, "tasks (default: all)")->delimiter(',');
  sub->add_option("--variants", a->variants, "variants (default: all)")->delimiter(',');
  sub->add_option("--max-steps", a->max_steps, "actions per episode")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--max-tokens", a->model.max_tokens, "max_tokens per step")
      ->capture_default_str();
  sub->add_flag("--ui-json", a->model.ui_json,
                "show the model the UI tree as JSON (default: one line per element)");
  sub->add_flag("--constrained", a->model.constrained,
                "tool_choice required, one call per step: the server's constrained decoding holds every reply to a "
                "well-formed call");
  sub->add_option("--policy", a->policy, "who acts: the model, or a scripted policy (no server)")
      ->check(CLI::IsMember({"model", "oracle", "toggle-all", "loop"}))
      ->capture_default_str();
  sub->callback([a, &ctx] { ctx.exit_code = run_agent_suite(*a); });
}

}  // namespace edge::cli
