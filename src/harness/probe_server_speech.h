// The speech checks of the server probe (probe.h): run when the server speaks
// (/metrics carries edge_tts_*).
#pragma once

#include <functional>
#include <string>

#include "harness/probe.h"

namespace edge::probe_detail {

struct RawTarget {
  std::string host, port;
  std::string auth_header;  // "Authorization: Bearer KEY\r\n" or ""
};
// A value of /metrics; -1 when absent or unreachable.
using MetricReader = std::function<double(const std::string&)>;

void server_speech_checks(const RawTarget& t, const MetricReader& metric,
                          const ServerProbeOptions& o, ProbeReport& report);

}  // namespace edge::probe_detail
