#include "agent/tasks.h"

#include <algorithm>

namespace edge::agent {
namespace {

// The alarms the phone starts with (a morning one and a disabled evening one).
DeviceState start_state(bool wifi) {
  DeviceState s;
  s.wifi = wifi;
  s.alarms = {{6, 45, true}, {21, 0, false}};
  return s;
}

MustNot unchanged(const std::string& what, bool DeviceState::*field) {
  return {what + " changed",
          [field](const Phone& p) { return p.state().*field != p.initial().*field; }};
}

// Toggled at all, even if toggled back: "already on" allows no toggle.
MustNot never_toggled(const std::string& name) {
  return {name + " toggled", [name](const Phone& p) {
            return std::any_of(p.changes().begin(), p.changes().end(),
                               [&](const std::string& c) { return c.rfind(name + " ", 0) == 0; });
          }};
}

// The alarms the phone started with are all there, unchanged, whatever was added.
MustNot existing_alarms_kept() {
  return {"existing alarms changed", [](const Phone& p) {
            const auto& now = p.state().alarms;
            for (const Alarm& a : p.initial().alarms)
              if (std::count(now.begin(), now.end(), a) <
                  std::count(p.initial().alarms.begin(), p.initial().alarms.end(), a))
                return true;
            return false;
          }};
}

MustNot new_alarm_at(int hour24, int minute, const std::string& name) {
  return {name, [=](const Phone& p) {
            auto n = [&](const std::vector<Alarm>& v) {
              return std::count_if(v.begin(), v.end(), [&](const Alarm& a) {
                return a.hour24 == hour24 && a.minute == minute;
              });
            };
            return n(p.state().alarms) > n(p.initial().alarms);
          }};
}

MustNot alarms_unchanged() {
  return {"alarms changed", [](const Phone& p) { return p.state().alarms != p.initial().alarms; }};
}

std::vector<MustNot> radios_except(const std::string& keep) {
  std::vector<MustNot> m;
  if (keep != "wifi") m.push_back(unchanged("wifi", &DeviceState::wifi));
  if (keep != "airplane") m.push_back(unchanged("airplane", &DeviceState::airplane));
  m.push_back(unchanged("bluetooth", &DeviceState::bluetooth));
  m.push_back(unchanged("wifi_calling", &DeviceState::wifi_calling));
  return m;
}

std::vector<Task> make_tasks() {
  std::vector<Task> t;
  auto with = [](std::vector<MustNot> a, std::vector<MustNot> b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  t.push_back({"wifi_on", "Turn Wi-Fi on.", start_state(false),
               [](const Phone& p) { return p.state().wifi; },
               with(radios_except("wifi"), {alarms_unchanged()})});
  t.push_back({"wifi_on_already", "Turn Wi-Fi on.", start_state(true),
               [](const Phone& p) { return p.state().wifi; },
               with(radios_except("wifi"), {never_toggled("wifi"), alarms_unchanged()})});
  t.push_back({"wifi_off", "Turn Wi-Fi off.", start_state(true),
               [](const Phone& p) { return !p.state().wifi; },
               with(radios_except("wifi"), {alarms_unchanged()})});
  t.push_back({"airplane_on", "Turn airplane mode on.", start_state(true),
               [](const Phone& p) { return p.state().airplane; },
               with(radios_except("airplane"), {alarms_unchanged()})});
  t.push_back({"open_clock", "Open the clock app.", start_state(true),
               [](const Phone& p) { return p.screen() == "clock"; },
               with(radios_except(""), {alarms_unchanged()})});
  t.push_back({"alarm_730am", "Add an alarm for 7:30 AM and save it.", start_state(true),
               [](const Phone& p) {
                 const auto& a = p.state().alarms;
                 return std::any_of(a.begin(), a.end(), [](const Alarm& x) {
                   return x.hour24 == 7 && x.minute == 30 && x.enabled;
                 });
               },
               with(radios_except(""),
                    {new_alarm_at(19, 30, "alarm at 7:30 PM"), existing_alarms_kept()})});
  return t;
}

}  // namespace

const std::vector<Task>& all_tasks() {
  static const std::vector<Task> tasks = make_tasks();
  return tasks;
}

Expected<Task> task_by_name(const std::string& name) {
  for (const Task& t : all_tasks())
    if (t.name == name) return t;
  return Status::invalid_argument(
      "unknown task '" + name +
      "' (wifi_on, wifi_on_already, wifi_off, airplane_on, open_clock, alarm_730am)");
}

std::vector<std::string> violations(const Task& t, const Phone& p) {
  std::vector<std::string> v;
  for (const MustNot& m : t.must_not)
    if (m.violated(p)) v.push_back(m.name);
  return v;
}

}  // namespace edge::agent
