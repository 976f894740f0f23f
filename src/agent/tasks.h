// The agent suite's tasks: a goal in words, the device state the phone starts in, the
// state that counts as done, and what must not happen on the way (collateral damage).
// Judged from the phone's state and change log only, never from the agent's claims.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "agent/phone.h"
#include "core/status.h"

namespace edge::agent {

struct MustNot {
  std::string name;                            // "bluetooth changed", "alarm at 7:30 PM", ...
  std::function<bool(const Phone&)> violated;  // true when it happened
};

struct Task {
  std::string name;  // wifi_on, wifi_on_already, wifi_off, airplane_on, open_clock, alarm_730am
  std::string goal;  // what the agent is told
  DeviceState initial;
  std::function<bool(const Phone&)> achieved;
  std::vector<MustNot> must_not;
};

const std::vector<Task>& all_tasks();
Expected<Task> task_by_name(const std::string& name);

// The names of the must_not checks a finished episode violated.
std::vector<std::string> violations(const Task& t, const Phone& p);

}  // namespace edge::agent
