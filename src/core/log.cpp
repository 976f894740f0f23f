#include "core/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace edge {

LogLevel log_level() {
  static const LogLevel level = [] {
    const char* e = std::getenv("EDGE_LOG");
    if (!e) return LogLevel::kWarn;
    if (!std::strcmp(e, "error")) return LogLevel::kError;
    if (!std::strcmp(e, "info")) return LogLevel::kInfo;
    if (!std::strcmp(e, "debug")) return LogLevel::kDebug;
    return LogLevel::kWarn;
  }();
  return level;
}

void log_line(LogLevel level, const std::string& msg) {
  static const char* names[] = {"error", "warn", "info", "debug"};
  std::fprintf(stderr, "[edge %s] %s\n", names[static_cast<int>(level)], msg.c_str());
}

}  // namespace edge
