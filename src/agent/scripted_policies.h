// Policies without a model, for testing the suite itself: an oracle that reads the UI tree
// the way a careful person would (labels and their usual synonyms, never the hidden keys),
// a careless one that toggles every switch it meets, and two that loop.
#pragma once

#include <memory>
#include <string>

#include "agent/loop.h"

namespace edge::agent {

std::unique_ptr<Policy> make_oracle_policy();
std::unique_ptr<Policy> make_toggle_all_policy();
// kind: "self_undo" (taps the first switch over and over) or "no_change" (taps an id that
// is not on screen).
std::unique_ptr<Policy> make_looping_policy(const std::string& kind);

}  // namespace edge::agent
