// Server-sent events framing: "data: <json>\n\n" per event, "data: [DONE]\n\n" at the end,
// and ": keep-alive\n\n" comments (ignored by clients) while nothing is ready, which also
// reveals a client that went away.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace edge::server {

std::string sse_data(const nlohmann::json& event);
std::string sse_done();
std::string sse_keep_alive();

}  // namespace edge::server
