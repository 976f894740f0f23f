// The probes' bookkeeping: a process is ours only as our child with the same start time
// (a pid alone could have been reused); a report with a finding is not a pass.
#include "harness/probe.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/owned_process.h"
#include "harness/probe_pipeline_util.h"

namespace edge {
namespace {

TEST(OwnedProcess, OnlyOurChildrenAndOnlyTheSameProcess) {
  EXPECT_FALSE(OwnedProcess::child(1).ok()) << "init is not ours";
  EXPECT_FALSE(OwnedProcess::child(::getpid()).ok()) << "neither are we";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(pid, 0);
  auto p = OwnedProcess::child(pid);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_TRUE(p->alive());
  OwnedProcess other = *p;
  other.start_ticks += 1;  // the same pid, another process
  EXPECT_FALSE(other.alive());
  EXPECT_FALSE(other.signal(SIGKILL).ok()) << "a recycled pid must not be signalled";
  EXPECT_TRUE(p->signal(SIGKILL).ok());
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_FALSE(p->alive());
  EXPECT_FALSE(p->signal(SIGKILL).ok()) << "gone";
}

TEST(ProbeReport, AFailureOrAFindingIsNotAPass) {
  ProbeReport r;
  r.checks.push_back({"a", "pass", 0.1, "", nlohmann::json::object()});
  r.checks.push_back({"b", "skipped", 0, "no worker", nlohmann::json::object()});
  EXPECT_TRUE(r.passed());
  r.findings.push_back("worker of stage lm was still running after the pipeline stopped: killed");
  EXPECT_FALSE(r.passed()) << "cleanup is not a pass";
  const nlohmann::json j = r.to_json();
  EXPECT_EQ(j["passed"], false);
  EXPECT_EQ(j["skipped"], 1);
  r.findings.clear();
  r.checks.push_back({"c", "fail", 0, "why", nlohmann::json::object()});
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.to_json()["failed"], 1);
  EXPECT_EQ(r.check("b")->detail, "no worker");
  EXPECT_EQ(r.check("nope"), nullptr);
}

// Workers left behind after a pipeline stopped: one still running is killed, one that
// exited unreaped is reaped; both are findings, and the report no longer passes.
TEST(ProbeCleanup, LeftoversAreCleanedUpAndReported) {
  const pid_t running = ::fork();
  if (running == 0) {
    ::pause();
    ::_exit(0);
  }
  const pid_t exited = ::fork();
  if (exited == 0) ::_exit(0);
  ASSERT_GT(running, 0);
  ASSERT_GT(exited, 0);
  auto a = OwnedProcess::child(running), b = OwnedProcess::child(exited);
  ASSERT_TRUE(a.ok() && b.ok());
  ProbeReport r;
  r.checks.push_back({"a", "pass", 0, "", nlohmann::json::object()});
  probe_detail::check_cleanup({{"lm", 1, *a}, {"vocoder", 2, *b}}, r,
                              std::chrono::milliseconds(50));
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_NE(r.findings[0].find("still running after the pipeline stopped: killed by the probe"),
            std::string::npos)
      << r.findings[0];
  EXPECT_NE(r.findings[1].find("never reaped: reaped by the probe"), std::string::npos)
      << r.findings[1];
  EXPECT_FALSE(r.passed());
  EXPECT_FALSE(a->alive());
  EXPECT_FALSE(b->alive());
  int status = 0;
  EXPECT_EQ(::waitpid(running, &status, WNOHANG), -1) << "still waiting to be reaped";
  EXPECT_EQ(::waitpid(exited, &status, WNOHANG), -1) << "still waiting to be reaped";
}

}  // namespace
}  // namespace edge
