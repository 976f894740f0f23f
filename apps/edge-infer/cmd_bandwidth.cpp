// edge-infer bandwidth [-t THREADS] [--mib 1024] [--passes 10]: the streaming read
// ceiling on these threads, as JSON with provenance.
#include <cstdio>

#include "commands.h"
#include "core/thread_pool.h"
#include "harness/bandwidth.h"
#include "harness/provenance.h"

namespace edge::cli {

void register_bandwidth(CLI::App& app, Context& ctx) {
  struct Args {
    int threads = 0;
    int mib = 1024;
    int passes = 10;
  };
  auto a = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("bandwidth", "Measure the streaming read bandwidth ceiling");
  sub->add_option("-t,--threads", a->threads, "threads (default: all allowed cores)");
  sub->add_option("--mib", a->mib, "buffer size in MiB")->capture_default_str();
  sub->add_option("--passes", a->passes)->capture_default_str();
  sub->callback([a, &ctx] {
    ThreadPool pool(a->threads > 0 ? a->threads : ThreadPool::default_threads());
    auto r = measure_read_bandwidth(pool, static_cast<uint64_t>(a->mib) << 20, a->passes);
    if (!r) {
      ctx.exit_code = report_error(r.status());
      return;
    }
    nlohmann::json j = r->to_json();
    j["provenance"] = machine_provenance();
    std::printf("%s\n", j.dump(2).c_str());
  });
}

}  // namespace edge::cli
