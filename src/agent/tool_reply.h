// Turns a chat completion (OpenAI shape) into one phone action. A clean reply is one tool
// call with JSON arguments; anything else is repaired where the intent is unambiguous and
// every repair is recorded: extra calls ignored, arguments that are not JSON, a call written
// in the content as a <tool_call> tag, as a JSON object or as tap(e3). No usable action:
// kind "none" with the recovery "unparseable".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "agent/loop.h"

namespace edge::agent {

// The `tools` array the agent offers: tap(id), type(id, text), back(), done().
const nlohmann::json& phone_tools();

Decision parse_reply(const nlohmann::json& completion);

}  // namespace edge::agent
