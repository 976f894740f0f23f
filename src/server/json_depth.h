// A cheap bound on JSON nesting, checked before nlohmann parses a body: its parser, its
// conversions and dump() recurse once per level, so a 4 MiB "[[[[…" would overflow the
// stack of a handler thread. One pass, no allocation; strings and escapes are skipped so
// brackets inside them do not count. Malformed text is left for the real parser.
#pragma once

#include <string_view>

namespace edge::server {

// Request bodies (and JSON carried inside them, e.g. tool-call arguments) nest at most this deep.
inline constexpr int kMaxJsonDepth = 128;

// True when arrays/objects in `text` nest deeper than `max_depth` levels.
bool json_nesting_exceeds(std::string_view text, int max_depth = kMaxJsonDepth);

}  // namespace edge::server
