#include "server/sse.h"

namespace edge::server {

// dump() escapes newlines inside strings, so one event is always one "data:" line.
std::string sse_data(const nlohmann::json& event) {
  return "data: " + event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}
std::string sse_done() { return "data: [DONE]\n\n"; }
std::string sse_keep_alive() { return ": keep-alive\n\n"; }

}  // namespace edge::server
