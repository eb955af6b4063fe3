#include <gtest/gtest.h>

#include <csignal>

#include "core/process.h"

namespace slapo {
namespace {

TEST(ProcessTest, CapturesOutputAndExitCode) {
  const ProcessResult r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(ProcessTest, SignalsAreReported) {
  const ProcessResult r = run_process({"sh", "-c", "kill -SEGV $$"});
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(signal_name(r.signal), "SIGSEGV");
}

TEST(ProcessTest, TimeoutKillsTheWholeGroup) {
  // The shell starts a grandchild that would outlive it; both must die at the time limit.
  const ProcessResult r = run_process({"sh", "-c", "sleep 30 & sleep 30"}, {{}, 0.3});
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.duration_s, 5.0);
  EXPECT_EQ(r.signal, SIGKILL);
}

TEST(ProcessTest, ArgumentsAreNotInterpretedByAShell) {
  const ProcessResult r =
      run_process({"printf", "%s|", "; rm -rf /tmp/nothing", "$(echo hi)", "'\"quoted\"'"});
  EXPECT_EQ(r.out, "; rm -rf /tmp/nothing|$(echo hi)|'\"quoted\"'|");
}

TEST(ProcessTest, EnvironmentIsAdded) {
  const ProcessResult r = run_process({"sh", "-c", "echo $SLAPO_TP"}, {{{"SLAPO_TP", "4"}}, 0});
  EXPECT_EQ(r.out, "4\n");
}

TEST(ProcessTest, MissingExecutable) {
  const ProcessResult r = run_process({"/nonexistent/worker"});
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.error.find("cannot run '/nonexistent/worker'"), std::string::npos);
}

TEST(ProcessTest, AForkedBodyThatThrowsSaysWhyOnItsStandardError) {
  const ProcessResult r =
      fork_and_run([]() -> int { throw std::runtime_error("the model did not build"); });
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("uncaught exception: the model did not build"), std::string::npos) << r.err;
}

TEST(ProcessTest, SelfExecutableIsThisTestProgram) {
  EXPECT_NE(self_executable().find("core_test"), std::string::npos) << self_executable();
}

TEST(ProcessTest, TailLines) {
  EXPECT_EQ(tail_lines("a\nb\nc\n", 2), "b\nc\n");
  EXPECT_EQ(tail_lines("a\nb\nc", 5), "a\nb\nc");
  EXPECT_EQ(tail_lines("", 3), "");
}

}  // namespace
}  // namespace slapo
