// A simulated phone for the agent suite (docs/agent-suite.md): a home screen, settings with Wi-Fi,
// airplane-mode and Bluetooth switches, a clock app with alarms and an alarm editor with a
// Save button. The agent sees only a UI tree (ids, roles, labels, values); tasks are judged
// by the device state behind it, never by what the agent says.
//
// Variants change what the agent sees but not the device: renamed labels, reordered items,
// decoys (look-alike switches and apps that must not be touched) and deep menus (the
// network switches two levels below Settings). Ids are positional ("e1", "e2", ...), so a
// label, not an id, is what tells an element apart.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace edge::agent {

struct Alarm {
  int hour24 = 0;  // 0..23
  int minute = 0;
  bool enabled = true;
  bool operator==(const Alarm&) const = default;
};
// "7:30 AM"
std::string alarm_text(const Alarm& a);

// What the tasks judge.
struct DeviceState {
  bool wifi = false, airplane = false, bluetooth = true, wifi_calling = false;
  std::vector<Alarm> alarms;
  bool operator==(const DeviceState&) const = default;
};
nlohmann::json state_json(const DeviceState& s);

struct Variant {
  std::string name;  // base | renamed | reordered | decoys | deep
  bool renamed = false, reordered = false, decoys = false, deep = false;
};
const std::vector<Variant>& all_variants();
Expected<Variant> variant_by_name(const std::string& name);

// One element on screen. role: app | item (opens a screen) | switch | field | button | text.
struct UiNode {
  std::string id, role, label, value;  // value: "on"/"off" for a switch, a field's text
};
struct UiTree {
  std::string screen;  // the title the agent sees
  std::vector<UiNode> nodes;
  nlohmann::json to_json() const;
  // One line per element: `e3 switch "Wi-Fi" = off`.
  std::string to_text() const;
  const UiNode* find(const std::string& id) const;
};

class Phone {
 public:
  Phone(Variant v, DeviceState initial);

  UiTree ui() const;
  // The actions of the agent's tools. An error (unknown id, a field that is not one) leaves
  // the phone unchanged.
  Status tap(const std::string& id);
  Status type(const std::string& id, const std::string& text);
  Status back();

  const DeviceState& state() const { return state_; }
  const DeviceState& initial() const { return initial_; }
  const std::string& screen() const { return stack_.back(); }  // internal screen name
  // Every switch change and saved alarm, in order: "wifi on", "bluetooth off", "alarm 7:30 AM".
  const std::vector<std::string>& changes() const { return changes_; }
  // Everything an action can change (state, screen stack, editor draft): two equal
  // snapshots mean the action did nothing.
  std::string snapshot() const;

 private:
  struct Element {
    std::string key;  // what it does (hidden from the agent): "switch.wifi", "open.clock", ...
    std::string role, label, value;
  };
  std::vector<Element> elements() const;
  std::string label(const std::string& key) const;
  Status activate(const Element& e);
  Status save_alarm();
  void set_switch(const std::string& name, bool* field);

  Variant variant_;
  DeviceState initial_, state_;
  std::vector<std::string> stack_{"home"};
  std::string draft_hour_ = "6", draft_minute_ = "00", draft_period_ = "PM", editor_error_;
  std::vector<std::string> changes_;
};

}  // namespace edge::agent
