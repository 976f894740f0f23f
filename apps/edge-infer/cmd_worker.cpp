// edge-infer worker --fd N
// A pipeline stage in its own process, started by a pipeline (never by hand): serves the
// stage over the socket it inherited as descriptor N (src/pipeline/worker/worker.h).
#include "commands.h"
#include "pipeline/worker/worker.h"

namespace edge::cli {

void register_worker(CLI::App& app, Context& ctx) {
  auto fd = std::make_shared<int>(-1);
  CLI::App* sub = app.add_subcommand(
      "worker", "Serve one pipeline stage over an inherited socket (spawned by pipelines)");
  sub->add_option("--fd", *fd, "the socket's descriptor")->required();
  sub->callback([fd, &ctx] {
    if (*fd < 0) {
      ctx.exit_code = report_error(Status::invalid_argument("--fd must be a descriptor"));
      return;
    }
    ctx.exit_code = pipeline::run_worker(*fd);
  });
}

}  // namespace edge::cli
