#include "agent/scripted_policies.h"

#include <initializer_list>
#include <set>

namespace edge::agent {
namespace {

using Labels = std::initializer_list<const char*>;

const UiNode* find(const UiTree& t, Labels labels, const std::string& role = "") {
  for (const UiNode& n : t.nodes)
    for (const char* l : labels)
      if (n.label == l && (role.empty() || n.role == role)) return &n;
  return nullptr;
}
bool titled(const UiTree& t, Labels titles) {
  for (const char* l : titles)
    if (t.screen == l) return true;
  return false;
}
Decision act(const std::string& kind, const std::string& id = "", const std::string& text = "") {
  return Decision{Action{kind, id, text}, {}};
}

constexpr Labels kSettings = {"Settings", "System preferences"};
constexpr Labels kClock = {"Clock", "Alarms & timers"};
constexpr Labels kToNetwork = {"Connections", "Connectivity", "Network & internet",
                               "Wireless & networks"};

class Oracle : public Policy {
 public:
  Expected<Decision> decide(const Observation& o) override {
    const std::string& task = o.task->name;
    if (task == "open_clock") return open_clock(o.ui);
    if (task == "alarm_730am") return alarm(o.ui);
    if (task == "airplane_on") return set_switch(o.ui, {"Airplane mode", "Flight mode"}, "on");
    return set_switch(o.ui, {"Wi-Fi", "WLAN"}, task == "wifi_off" ? "off" : "on");
  }

 private:
  static Decision set_switch(const UiTree& t, Labels names, const std::string& want) {
    if (const UiNode* s = find(t, names, "switch"))
      return s->value == want ? act("done") : act("tap", s->id);
    if (titled(t, {"Home"})) return act("tap", find(t, kSettings, "app")->id);
    if (const UiNode* nav = find(t, kToNetwork, "item")) return act("tap", nav->id);
    return act("back");
  }
  static Decision open_clock(const UiTree& t) {
    if (titled(t, kClock)) return act("done");
    if (titled(t, {"Home"})) return act("tap", find(t, kClock, "app")->id);
    return act("back");
  }
  static Decision alarm(const UiTree& t) {
    if (titled(t, {"Edit alarm"})) {
      const UiNode* hour = find(t, {"Hour", "Hours"}, "field");
      const UiNode* minute = find(t, {"Minute", "Minutes"}, "field");
      const UiNode* period = find(t, {"AM/PM", "Morning/Evening"});
      if (hour->value != "7") return act("type", hour->id, "7");
      if (minute->value != "30") return act("type", minute->id, "30");
      if (period->value != "AM") return act("tap", period->id);
      return act("tap", find(t, {"Save", "Confirm"}, "button")->id);
    }
    if (titled(t, kClock))
      return find(t, {"7:30 AM"}) ? act("done")
                                  : act("tap", find(t, {"Add alarm", "New alarm"})->id);
    if (titled(t, {"Home"})) return act("tap", find(t, kClock, "app")->id);
    return act("back");
  }
};

// Taps every switch once and opens every menu once, then says done.
class ToggleAll : public Policy {
 public:
  Expected<Decision> decide(const Observation& o) override {
    for (const UiNode& n : o.ui.nodes) {
      const std::string key = o.ui.screen + "/" + n.label;
      if ((n.role == "switch" || n.role == "item" ||
           (n.role == "app" && find(o.ui, kSettings) == &n)) &&
          used_.insert(key).second)
        return act("tap", n.id);
    }
    if (o.ui.screen == "Home") return act("done");
    return act("back");
  }

 private:
  std::set<std::string> used_;
};

class Looping : public Policy {
 public:
  explicit Looping(std::string kind) : kind_(std::move(kind)) {}
  Expected<Decision> decide(const Observation& o) override {
    if (kind_ == "no_change") return act("tap", "e99");
    for (const UiNode& n : o.ui.nodes)
      if (n.role == "switch") return act("tap", n.id);
    if (const UiNode* s = find(o.ui, kSettings, "app")) return act("tap", s->id);
    if (const UiNode* nav = find(o.ui, kToNetwork, "item")) return act("tap", nav->id);
    return act("back");
  }

 private:
  std::string kind_;
};

}  // namespace

std::unique_ptr<Policy> make_oracle_policy() {
  return std::make_unique<Oracle>();
}
std::unique_ptr<Policy> make_toggle_all_policy() {
  return std::make_unique<ToggleAll>();
}
std::unique_ptr<Policy> make_looping_policy(const std::string& kind) {
  return std::make_unique<Looping>(kind);
}

}  // namespace edge::agent
