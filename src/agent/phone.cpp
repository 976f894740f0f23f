#include "agent/phone.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace edge::agent {

std::string alarm_text(const Alarm& a) {
  const int h12 = a.hour24 % 12 == 0 ? 12 : a.hour24 % 12;
  return fmt::format("{}:{:02d} {}", h12, a.minute, a.hour24 < 12 ? "AM" : "PM");
}

nlohmann::json state_json(const DeviceState& s) {
  nlohmann::json alarms = nlohmann::json::array();
  for (const Alarm& a : s.alarms)
    alarms.push_back({{"time", alarm_text(a)}, {"enabled", a.enabled}});
  return {{"wifi", s.wifi},
          {"airplane", s.airplane},
          {"bluetooth", s.bluetooth},
          {"wifi_calling", s.wifi_calling},
          {"alarms", alarms}};
}

const std::vector<Variant>& all_variants() {
  static const std::vector<Variant> v = {{"base", false, false, false, false},
                                         {"renamed", true, false, false, false},
                                         {"reordered", false, true, false, false},
                                         {"decoys", false, false, true, false},
                                         {"deep", false, false, false, true}};
  return v;
}

Expected<Variant> variant_by_name(const std::string& name) {
  for (const Variant& v : all_variants())
    if (v.name == name) return v;
  return Status::invalid_argument("unknown variant '" + name +
                                  "' (base, renamed, reordered, decoys, deep)");
}

nlohmann::json UiTree::to_json() const {
  nlohmann::json nodes_json = nlohmann::json::array();
  for (const UiNode& n : nodes) {
    nlohmann::json j = {{"id", n.id}, {"role", n.role}, {"label", n.label}};
    if (!n.value.empty()) j["value"] = n.value;
    nodes_json.push_back(j);
  }
  return {{"screen", screen}, {"elements", nodes_json}};
}

std::string UiTree::to_text() const {
  std::string out = "screen: " + screen + "\n";
  for (const UiNode& n : nodes) {
    out += fmt::format("{} {} \"{}\"", n.id, n.role, n.label);
    if (!n.value.empty()) out += " = " + n.value;
    out += "\n";
  }
  return out;
}

const UiNode* UiTree::find(const std::string& id) const {
  for (const UiNode& n : nodes)
    if (n.id == id) return &n;
  return nullptr;
}

Phone::Phone(Variant v, DeviceState initial)
    : variant_(std::move(v)), initial_(initial), state_(std::move(initial)) {}

// The label of each element, plain and renamed (the renamed variant's synonyms).
std::string Phone::label(const std::string& key) const {
  static const std::map<std::string, std::pair<const char*, const char*>> kLabels = {
      {"open.settings", {"Settings", "System preferences"}},
      {"open.clock", {"Clock", "Alarms & timers"}},
      {"open.camera", {"Camera", "Camera"}},
      {"open.connections", {"Connections", "Connectivity"}},
      {"open.network", {"Network & internet", "Wireless & networks"}},
      {"open.display", {"Display", "Screen"}},
      {"open.decoy_app", {"Clock widgets", "Alarm sounds store"}},
      {"open.airplane_schedule", {"Airplane mode schedule", "Flight mode schedule"}},
      {"switch.wifi", {"Wi-Fi", "WLAN"}},
      {"switch.airplane", {"Airplane mode", "Flight mode"}},
      {"switch.bluetooth", {"Bluetooth", "BT radio"}},
      {"switch.wifi_calling", {"Wi-Fi calling", "WLAN calling"}},
      {"add_alarm", {"Add alarm", "New alarm"}},
      {"field.hour", {"Hour", "Hours"}},
      {"field.minute", {"Minute", "Minutes"}},
      {"period", {"AM/PM", "Morning/Evening"}},
      {"save", {"Save", "Confirm"}},
      {"cancel", {"Cancel", "Discard"}},
      {"timer", {"Timer", "Countdown"}},
  };
  auto it = kLabels.find(key);
  if (it == kLabels.end()) return key;
  return variant_.renamed ? it->second.second : it->second.first;
}

std::vector<Phone::Element> Phone::elements() const {
  const std::string& s = screen();
  auto onoff = [](bool b) { return std::string(b ? "on" : "off"); };
  std::vector<Element> e;
  auto add = [&](const std::string& key, const std::string& role, const std::string& value = "") {
    e.push_back({key, role, label(key), value});
  };
  auto add_switches = [&] {
    add("switch.wifi", "switch", onoff(state_.wifi));
    if (variant_.decoys) add("switch.wifi_calling", "switch", onoff(state_.wifi_calling));
    add("switch.airplane", "switch", onoff(state_.airplane));
    if (variant_.decoys) add("open.airplane_schedule", "item");
    add("switch.bluetooth", "switch", onoff(state_.bluetooth));
  };
  if (s == "home") {
    add("open.camera", "app");
    add("open.settings", "app");
    add("open.clock", "app");
    if (variant_.decoys) add("open.decoy_app", "app");
  } else if (s == "settings") {
    if (variant_.deep)
      add("open.connections", "item");
    else
      add_switches();
    add("open.display", "item");
  } else if (s == "connections") {
    add("open.network", "item");
  } else if (s == "network") {
    add_switches();
  } else if (s == "clock") {
    for (size_t i = 0; i < state_.alarms.size(); ++i) {
      e.push_back({"alarm." + std::to_string(i), "switch", alarm_text(state_.alarms[i]),
                   onoff(state_.alarms[i].enabled)});
    }
    add("add_alarm", "button");
    if (variant_.decoys) add("timer", "button");
  } else if (s == "editor") {
    add("field.hour", "field", draft_hour_);
    add("field.minute", "field", draft_minute_);
    add("period", "button", draft_period_);
    if (!editor_error_.empty()) e.push_back({"error", "text", editor_error_, ""});
    add("cancel", "button");
    add("save", "button");
  } else {  // a dead end: a screen that holds nothing the tasks need
    e.push_back({"text", "text", "Nothing to change here", ""});
  }
  if (variant_.reordered) std::reverse(e.begin(), e.end());
  return e;
}

UiTree Phone::ui() const {
  static const std::map<std::string, std::pair<const char*, const char*>> kTitles = {
      {"home", {"Home", "Home"}},
      {"settings", {"Settings", "System preferences"}},
      {"connections", {"Connections", "Connectivity"}},
      {"network", {"Network & internet", "Wireless & networks"}},
      {"clock", {"Clock", "Alarms & timers"}},
      {"editor", {"Edit alarm", "Edit alarm"}}};
  UiTree t;
  auto it = kTitles.find(screen());
  t.screen =
      it == kTitles.end() ? screen() : (variant_.renamed ? it->second.second : it->second.first);
  int n = 0;
  for (const Element& el : elements())
    t.nodes.push_back({"e" + std::to_string(++n), el.role, el.label, el.value});
  return t;
}

std::string Phone::snapshot() const {
  std::string s = state_json(state_).dump();
  for (const std::string& screen : stack_) s += "/" + screen;
  if (screen() == "editor")
    s += "|" + draft_hour_ + ":" + draft_minute_ + draft_period_ + editor_error_;
  return s;
}

void Phone::set_switch(const std::string& name, bool* field) {
  *field = !*field;
  changes_.push_back(name + (*field ? " on" : " off"));
}

Status Phone::activate(const Element& e) {
  if (e.key.rfind("open.", 0) == 0) {
    stack_.push_back(e.key.substr(5));
    if (stack_.back() == "decoy_app" || stack_.back() == "camera") stack_.back() = "dead_end";
    return Status();
  }
  if (e.key == "switch.wifi")
    set_switch("wifi", &state_.wifi);
  else if (e.key == "switch.airplane")
    set_switch("airplane", &state_.airplane);
  else if (e.key == "switch.bluetooth")
    set_switch("bluetooth", &state_.bluetooth);
  else if (e.key == "switch.wifi_calling")
    set_switch("wifi_calling", &state_.wifi_calling);
  else if (e.key.rfind("alarm.", 0) == 0) {
    Alarm& a = state_.alarms[std::stoul(e.key.substr(6))];
    a.enabled = !a.enabled;
    changes_.push_back("alarm " + alarm_text(a) + (a.enabled ? " on" : " off"));
  } else if (e.key == "add_alarm") {
    draft_hour_ = "6", draft_minute_ = "00", draft_period_ = "PM", editor_error_.clear();
    stack_.push_back("editor");
  } else if (e.key == "period") {
    draft_period_ = draft_period_ == "AM" ? "PM" : "AM";
  } else if (e.key == "save") {
    return save_alarm();
  } else if (e.key == "cancel") {
    stack_.pop_back();
  } else if (e.key == "timer") {
    stack_.push_back("dead_end");
  }
  return Status();  // a text or field tapped: nothing happens
}

// The draft becomes an alarm only through Save; an invalid time stays in the editor with
// a message on screen.
Status Phone::save_alarm() {
  auto parse = [](const std::string& s, int lo, int hi) {
    if (s.empty() || s.size() > 2 || !std::all_of(s.begin(), s.end(), ::isdigit)) return -1;
    const int v = std::stoi(s);
    return v < lo || v > hi ? -1 : v;
  };
  const int h = parse(draft_hour_, 1, 12), m = parse(draft_minute_, 0, 59);
  if (h < 0 || m < 0) {
    editor_error_ = "Invalid time";
    return Status::invalid_argument("the alarm editor holds an invalid time");
  }
  Alarm a{h % 12 + (draft_period_ == "PM" ? 12 : 0), m, true};
  state_.alarms.push_back(a);
  changes_.push_back("alarm " + alarm_text(a));
  stack_.pop_back();
  return Status();
}

Status Phone::tap(const std::string& id) {
  const std::vector<Element> e = elements();
  const UiTree t = ui();
  for (size_t i = 0; i < t.nodes.size(); ++i)
    if (t.nodes[i].id == id) return activate(e[i]);
  return Status::not_found("no element '" + id + "' on this screen");
}

Status Phone::type(const std::string& id, const std::string& text) {
  const std::vector<Element> e = elements();
  const UiTree t = ui();
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    if (t.nodes[i].id != id) continue;
    if (e[i].role != "field") return Status::invalid_argument("'" + id + "' is not a text field");
    (e[i].key == "field.hour" ? draft_hour_ : draft_minute_) = text.substr(0, 8);
    editor_error_.clear();
    return Status();
  }
  return Status::not_found("no element '" + id + "' on this screen");
}

Status Phone::back() {
  if (stack_.size() > 1) stack_.pop_back();  // leaving the editor discards its draft
  return Status();
}

}  // namespace edge::agent
