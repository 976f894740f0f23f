// edge-infer measure-rss [--interval-ms 10] [--label NAME] -- CMD [ARGS...]
// Runs another program (e.g. llama.cpp's llama-cli) and measures it the way bench-init
// measures us: RssAnon and RssAnon+RssFile peaks over its whole process tree, sampled
// every interval, the wall time, and the time from its creation to the first byte it
// writes on stdout (with --no-display-prompt, llama-cli's first byte is its first token).
// Its stdout is passed through to our stderr; the JSON goes to our stdout.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "commands.h"
#include "harness/provenance.h"
#include "harness/rss_sampler.h"

namespace edge::cli {
namespace {

struct MeasureArgs {
  std::vector<std::string> command;
  int interval_ms = 10;
  std::string label;
};

using Clock = std::chrono::steady_clock;

int run_measure(const MeasureArgs& a) {
  if (a.command.empty()) return report_error(Status::invalid_argument("measure-rss needs -- CMD [ARGS...]"));
  int out_pipe[2];
  if (pipe(out_pipe) != 0) return report_error(Status::io_error("pipe failed"));
  const auto t0 = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) return report_error(Status::io_error("fork failed"));
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    close(out_pipe[0]);
    close(out_pipe[1]);
    std::vector<char*> argv;
    for (const std::string& s : a.command) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::perror("execvp");
    _exit(127);
  }
  close(out_pipe[1]);
  RssSampler sampler(pid, a.interval_ms);
  sampler.start();
  double first_byte_s = -1;
  int64_t out_bytes = 0;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(out_pipe[0], buf, sizeof(buf));
    if (n <= 0) break;
    if (first_byte_s < 0) first_byte_s = std::chrono::duration<double>(Clock::now() - t0).count();
    out_bytes += n;
    (void)!fwrite(buf, 1, static_cast<size_t>(n), stderr);
  }
  close(out_pipe[0]);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  const double wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  sampler.stop();
  nlohmann::json j;
  j["label"] = a.label;
  j["command"] = a.command;
  j["exit_code"] = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  j["wall_s"] = wall_s;
  j["first_stdout_byte_s"] = first_byte_s;
  j["stdout_bytes"] = out_bytes;
  j["peak"] = {{"rss_anon", sampler.peak_anon()}, {"rss_anon_file", sampler.peak_anon_file()},
               {"rss_file", sampler.peak_file()}, {"samples", sampler.samples()},
               {"max_processes", sampler.max_processes()}};
  j["sample_interval_ms"] = a.interval_ms;
  j["provenance"] = {{"machine", machine_provenance()}};
  std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return 0;
}

}  // namespace

void register_measure_rss(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<MeasureArgs>();
  CLI::App* sub = app.add_subcommand("measure-rss", "Run a program and sample its process tree's RssAnon/RssFile "
                                                    "peaks and time to first stdout byte");
  sub->add_option("--interval-ms", a->interval_ms, "sampling interval (<= 20)")->capture_default_str();
  sub->add_option("--label", a->label, "name recorded in the JSON");
  sub->add_option("command", a->command, "the program and its arguments (after --)")->required();
  sub->callback([a, &ctx] { ctx.exit_code = run_measure(*a); });
}

}  // namespace edge::cli
