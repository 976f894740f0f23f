// Memory of a process as the kernel sees it (docs/measuring.md rule 4): RssAnon for what it
// allocated, RssFile for mapped files, RssShmem apart, from /proc/<pid>/status, for one
// process or summed over a process tree. Used by the harness's sampler and by pipeline
// stages held to their RAM reservation.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace edge {

struct RssSample {
  int64_t anon = 0;   // RssAnon, bytes
  int64_t file = 0;   // RssFile, bytes
  int64_t shmem = 0;  // RssShmem, bytes
  int processes = 0;  // processes summed
  int64_t anon_file() const { return anon + file; }
};

// One process's RssAnon/RssFile/RssShmem; not_found when the process is gone.
Expected<RssSample> read_rss(pid_t pid);
// root and every descendant (children from /proc/<pid>/task/*/children). Processes that
// exit while being read are skipped.
std::vector<pid_t> process_tree(pid_t root);
RssSample read_rss_tree(pid_t root);

// Start time of `pid` in clock ticks since boot (field 22 of /proc/<pid>/stat); -1 when the
// process is gone. With the pid, it names one process: a pid the kernel reused has another.
long long process_start_ticks(pid_t pid);

// Resident bytes of [addr, addr+len) (mincore over the pages the range touches).
struct Residency {
  int64_t resident = 0;
  int64_t total = 0;  // page-rounded length examined
};
Expected<Residency> mincore_residency(const void* addr, size_t len);

}  // namespace edge
