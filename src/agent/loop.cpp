#include "agent/loop.h"

#include <map>

namespace edge::agent {

std::string Action::to_string() const {
  if (kind == "tap") return "tap(" + id + ")";
  if (kind == "type")
    return "type(" + id + "," +
           nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
           ")";
  if (kind == "back" || kind == "done") return kind + "()";
  return "none";
}

nlohmann::json Episode::to_json() const {
  return {{"task", task},
          {"variant", variant},
          {"repeat", repeat},
          {"passed", passed},
          {"achieved", achieved},
          {"claimed_done", claimed_done},
          {"falsely_claimed_done", claimed_done && !achieved},
          {"violations", violations},
          {"end", end},
          {"error", error},
          {"steps", steps},
          {"no_change_steps", no_change_steps},
          {"self_undos", self_undos},
          {"actions", actions},
          {"recoveries", recoveries},
          {"unusable_replies", unusable_replies},
          {"final_state", final_state}};
}

namespace {

Status apply(Phone& p, const Action& a) {
  if (a.kind == "tap") return p.tap(a.id);
  if (a.kind == "type") return p.type(a.id, a.text);
  if (a.kind == "back") return p.back();
  return Status::invalid_argument("no action");
}

}  // namespace

Episode run_episode(const Task& t, const Variant& v, Policy& policy, const LoopLimits& lim) {
  Episode ep;
  ep.task = t.name, ep.variant = v.name, ep.end = "max_steps";
  Phone phone(v, t.initial);
  // Snapshots after each step (the first: before any): a step that returns to the one two
  // before, having changed something in between, undid its predecessor.
  std::vector<std::string> seen = {phone.snapshot()};
  int streak = 0;
  Observation obs;
  obs.task = &t;
  for (int step = 0; step < lim.max_steps; ++step) {
    obs.ui = phone.ui(), obs.step = step;
    auto d = policy.decide(obs);
    if (!d.ok()) {
      ep.end = "policy_error", ep.error = d.status().to_string();
      break;
    }
    ++ep.steps;
    for (const std::string& r : d->recoveries)
      ep.recoveries.push_back("step " + std::to_string(step) + ": " + r);
    ep.actions.push_back(d->action.to_string());
    if (d->action.kind == "none" && !d->unusable_reply.empty())
      ep.unusable_replies.push_back("step " + std::to_string(step) + ": " + d->unusable_reply);
    obs.history.push_back(d->action.to_string());
    if (d->action.kind == "done") {
      ep.claimed_done = true, ep.end = "done";
      break;
    }
    const Status st = apply(phone, d->action);
    if (!st.ok()) ep.actions.back() += " -> " + st.message();
    const std::string now = phone.snapshot();
    if (now == seen.back()) {
      ++ep.no_change_steps;
      if (++streak >= lim.no_change_streak) {
        ep.end = "no_change_loop";
        break;
      }
      continue;  // nothing changed: not a new state
    }
    streak = 0;
    if (seen.size() >= 2 && now == seen[seen.size() - 2] && ++ep.self_undos >= lim.self_undos) {
      seen.push_back(now);
      ep.end = "self_undo_loop";
      break;
    }
    seen.push_back(now);
  }
  ep.achieved = t.achieved(phone);
  ep.violations = violations(t, phone);
  // Done means noticed: an agent that reaches the state but never says so has not
  // recognised completion (the seed's lesson), so it does not pass.
  ep.passed = ep.achieved && ep.violations.empty() && ep.claimed_done;
  ep.final_state = state_json(phone.state());
  ep.final_state["screen"] = phone.screen();
  return ep;
}

namespace {

struct Tally {
  int runs = 0, passes = 0, achieved = 0, false_done = 0, unnoticed = 0, damaged = 0, loops = 0,
      recoveries = 0, policy_errors = 0;
  void add(const Episode& e) {
    ++runs;
    passes += e.passed, achieved += e.achieved, false_done += e.claimed_done && !e.achieved;
    unnoticed += e.achieved && !e.claimed_done, damaged += !e.violations.empty();
    loops += e.end == "no_change_loop" || e.end == "self_undo_loop";
    recoveries += static_cast<int>(e.recoveries.size()), policy_errors += e.end == "policy_error";
  }
  nlohmann::json to_json() const {
    return {{"runs", runs},
            {"passes", passes},
            {"pass_rate", runs ? static_cast<double>(passes) / runs : 0.0},
            {"achieved", achieved},
            {"falsely_claimed_done", false_done},
            {"achieved_not_claimed", unnoticed},
            {"damaged", damaged},
            {"loops", loops},
            {"recoveries", recoveries},
            {"policy_errors", policy_errors}};
  }
};

template <typename T, typename F>
Expected<std::vector<T>> pick(const std::vector<std::string>& names, const std::vector<T>& all,
                              F by_name) {
  if (names.empty()) return all;
  std::vector<T> out;
  for (const std::string& n : names) {
    auto x = by_name(n);
    if (!x.ok()) return x.status();
    out.push_back(*x);
  }
  return out;
}

}  // namespace

Expected<nlohmann::json> run_suite(const SuiteOptions& o, const PolicyFactory& make_policy) {
  if (o.repeats < 1) return Status::invalid_argument("repeats must be at least 1");
  ASSIGN_OR_RETURN(auto tasks, pick(o.tasks, all_tasks(), task_by_name));
  ASSIGN_OR_RETURN(auto variants, pick(o.variants, all_variants(), variant_by_name));
  std::map<std::string, Tally> per_task, per_cell;
  Tally total;
  nlohmann::json episodes = nlohmann::json::array();
  // Repeats outermost: an interrupted run still has every cell once.
  for (int r = 0; r < o.repeats; ++r) {
    for (const Task& t : tasks) {
      for (const Variant& v : variants) {
        auto policy = make_policy();
        Episode e = run_episode(t, v, *policy, o.limits);
        e.repeat = r;
        per_task[t.name].add(e), per_cell[t.name + "/" + v.name].add(e), total.add(e);
        episodes.push_back(e.to_json());
      }
    }
  }
  nlohmann::json j;
  j["repeats"] = o.repeats;
  j["max_steps"] = o.limits.max_steps;
  j["total"] = total.to_json();
  for (const auto& [name, tally] : per_task) j["tasks"][name] = tally.to_json();
  for (const auto& [name, tally] : per_cell) j["cells"][name] = tally.to_json();
  j["episodes"] = episodes;
  j["warnings"] = nlohmann::json::array();
  if (o.repeats < 3)
    j["warnings"].push_back("repeats < 3: a pass rate from " + std::to_string(o.repeats) +
                            " run(s) per cell shows that a failure reproduces, not a rate; "
                            "do not rank builds on it");
  return j;
}

}  // namespace edge::agent
