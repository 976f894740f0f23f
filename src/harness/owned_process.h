// A process this program owns, named by pid and start time (so a recycled pid is never
// mistaken for it): the probes signal only such processes, and only after checking that
// the pid still names the same process and that it is our child (spawned directly by
// this process, e.g. a pipeline worker).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "core/status.h"

namespace edge {

struct OwnedProcess {
  pid_t pid = -1;
  uint64_t start_ticks = 0;  // /proc/PID/stat field 22: clock ticks after boot

  // The child `pid` of this process, as it is now; refused when it is not our child.
  static Expected<OwnedProcess> child(pid_t pid);
  // True while the same process (pid and start time) exists, a zombie included.
  bool alive() const;
  // Signals it after checking it is still the same child; refused otherwise.
  Status signal(int sig) const;
  std::string to_string() const;  // "pid 123 (started at tick 456)"
};

}  // namespace edge
