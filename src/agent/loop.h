// The agent loop: one action per step from a policy (a model behind the OpenAI tools API,
// or a scripted one for tests), applied to the phone until the policy says done, a loop is
// detected or the step limit is reached; then the episode is judged by the device state.
// The suite runs tasks x variants x repeats and reports pass rates per task.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/phone.h"
#include "agent/tasks.h"
#include "core/status.h"

namespace edge::agent {

struct Action {
  std::string kind;  // tap | type | back | done | none (nothing usable came back)
  std::string id, text;
  std::string to_string() const;  // tap(e3), type(e1,"7"), back(), done(), none
};

// What the agent sees at one step.
struct Observation {
  const Task* task = nullptr;
  UiTree ui;
  int step = 0;
  std::vector<std::string> history;  // earlier actions, as Action::to_string()
};

struct Decision {
  Action action;
  // How the action was obtained when the reply was not one clean tool call: every
  // repair is recorded ("json_in_content", "extra_tool_calls_ignored", "unparseable", ...).
  std::vector<std::string> recoveries;
  std::string unusable_reply;  // with kind "none": the start of what came back, to read later
};

class Policy {
 public:
  virtual ~Policy() = default;
  // An error (the server unreachable) ends the episode; a reply without a usable action is
  // a Decision with kind "none" and a recovery saying why.
  virtual Expected<Decision> decide(const Observation& o) = 0;
};
using PolicyFactory = std::function<std::unique_ptr<Policy>()>;

struct LoopLimits {
  int max_steps = 20;
  int no_change_streak = 3;  // this many actions in a row that change nothing: a loop
  int self_undos = 2;        // this many returns to the state of two steps before: a loop
};

struct Episode {
  std::string task, variant;
  int repeat = 0;
  bool achieved = false, claimed_done = false, passed = false;
  std::vector<std::string> violations;
  std::string end;  // done | max_steps | no_change_loop | self_undo_loop | policy_error
  std::string error;
  int steps = 0, no_change_steps = 0, self_undos = 0;
  std::vector<std::string> actions, recoveries;
  std::vector<std::string> unusable_replies;  // "step N: <start of the reply>"
  nlohmann::json final_state;
  nlohmann::json to_json() const;
};

Episode run_episode(const Task& t, const Variant& v, Policy& policy, const LoopLimits& lim);

struct SuiteOptions {
  std::vector<std::string> tasks;     // empty: all
  std::vector<std::string> variants;  // empty: all
  int repeats = 3;
  LoopLimits limits;
};

// Per task: runs, passes, pass_rate, falsely_claimed_done, damaged, loops, recoveries; per
// task and variant; every episode; a warning when repeats < 3.
Expected<nlohmann::json> run_suite(const SuiteOptions& o, const PolicyFactory& make_policy);

}  // namespace edge::agent
