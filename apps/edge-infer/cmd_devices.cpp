// edge-infer devices: the CPU, its features, and the kernel path chosen per op and
// weight type, with the reason (features plus a measured calibration).
#include <cstdio>

#include "commands.h"
#include "core/cpu_info.h"
#include "core/thread_pool.h"
#include "kernels/packed_api.h"

namespace edge::cli {

void register_devices(CLI::App& app, Context& ctx) {
  CLI::App* sub = app.add_subcommand("devices", "Print the CPU, its features and the chosen kernels");
  sub->callback([&ctx] {
    const CpuInfo& cpu = cpu_info();
    std::printf("threads: %d by default (%zu allowed CPUs on %d cores)\n", ThreadPool::default_threads(),
                cpu.allowed_cpus.size(), cpu.physical_cores);
    std::printf("caches: %s%s\n", cpu.caches.to_string().c_str(),
                cpu.caches_from_cpuid ? " (from cpuid: sysfs has no cache entries)" : "");
    std::printf("%s\n", packed_kernels_description().c_str());
    ctx.exit_code = 0;
  });
}

}  // namespace edge::cli
