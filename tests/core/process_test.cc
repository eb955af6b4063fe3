#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "core/coprocess.h"
#include "core/interrupt.h"
#include "core/process.h"
#include "core/ranks.h"

#include <thread>

namespace slapo {
namespace {

ProcessOptions timeout(double s) {
  ProcessOptions o;
  o.timeout_s = s;
  return o;
}

ProcessOptions env(std::map<std::string, std::string> vars) {
  ProcessOptions o;
  o.env = std::move(vars);
  return o;
}

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
  const ProcessResult r = run_process({"sh", "-c", "sleep 30 & sleep 30"}, timeout(0.3));
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
  const ProcessResult r = run_process({"sh", "-c", "echo $SLAPO_TP"}, env({{"SLAPO_TP", "4"}}));
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

TEST(ProcessTest, RunsInTheGivenDirectory) {
  ProcessOptions o;
  o.cwd = "/tmp";
  EXPECT_EQ(run_process({"pwd"}, o).out, "/tmp\n");
  o.cwd = "/nonexistent/dir";
  const ProcessResult r = run_process({"pwd"}, o);
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.error.find("cannot enter the directory '/nonexistent/dir'"), std::string::npos)
      << r.error;
}

TEST(ProcessTest, AnAddressSpaceLimitFailsABigAllocation) {
  // 256 MiB of address space: a shell starts, a 1 GiB allocation in it does not.
  ProcessOptions o;
  o.address_space_bytes = 256 << 20;
  const ProcessResult small = run_process({"sh", "-c", "echo fits"}, o);
  EXPECT_EQ(small.exit_code, 0) << small.err;
  const ProcessResult big =
      run_process({"/usr/bin/python3", "-c", "b = bytearray(1 << 30); print(len(b))"}, o);
  EXPECT_NE(big.exit_code, 0);
  EXPECT_NE(big.err.find("MemoryError"), std::string::npos) << big.err;
  EXPECT_FALSE(big.oom_killed);  // the allocation failed; nobody was killed
}

TEST(ProcessTest, AWatcherEndsTheGroupEarly) {
  ProcessOptions o;
  std::string seen;
  o.watch = [&](const std::string& chunk) {
    seen += chunk;
    return seen.find("step 3") != std::string::npos;
  };
  const ProcessResult r = run_process(
      {"sh", "-c", "for i in 1 2 3 4 5 6 7 8; do echo step $i; sleep 0.2; done; sleep 30 & wait"},
      o);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_LT(r.duration_s, 5.0);
  EXPECT_EQ(r.out.find("step 8"), std::string::npos) << r.out;
}

TEST(ProcessTest, AGrandchildThatLeftTheGroupDoesNotHoldTheRunOpen) {
  // setsid puts the sleeper in a group of its own, holding the output pipe: the run still ends
  // about a second after the shell exits.
  const ProcessResult r = run_process({"sh", "-c", "setsid sleep 20 & echo done"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "done\n");
  EXPECT_LT(r.duration_s, 5.0);
  std::system("pkill -f '^sleep 20$'");
}

TEST(ProcessTest, AnInterruptEndsTheRunningChildrenAndSaysSo) {
  clear_interrupt();
  std::thread interrupter([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    request_interrupt();
  });
  const ProcessResult r = run_process({"sh", "-c", "sleep 30 & sleep 30"});
  interrupter.join();
  EXPECT_TRUE(r.interrupted);
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(r.duration_s, 5.0);
  // A child started while the flag is up is ended at once.
  const ProcessResult late = run_process({"sleep", "30"});
  EXPECT_TRUE(late.interrupted);
  EXPECT_LT(late.duration_s, 5.0);
  clear_interrupt();
  EXPECT_EQ(run_process({"true"}).exit_code, 0);
}

TEST(RanksTest, WhenARankFailsItsPeersAreEndedAfterAGrace) {
  RanksOptions o;
  o.nproc = 3;
  o.argv = {"sh", "-c", "[ \"$RANK\" = 1 ] && { echo 'rank one broke' >&2; exit 4; }; sleep 30"};
  const std::vector<ProcessResult> r = run_ranks(o);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[1].exit_code, 4);
  EXPECT_FALSE(r[1].peer_failed);
  for (int i : {0, 2}) {
    EXPECT_TRUE(r[i].peer_failed) << i;
    EXPECT_FALSE(r[i].stopped) << i;
    EXPECT_GE(r[i].duration_s, kPeerGraceS - 0.5);
    EXPECT_LT(r[i].duration_s, kPeerGraceS + 5);
  }
  EXPECT_EQ(first_rank_failure(r), "rank 1 exited with 4: rank one broke");
}

TEST(ProcessTest, AnArgumentTooLongIsACleanRefusal) {
  const ProcessResult r = run_process({"echo", std::string(200 << 10, 'x')});
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.start_errno, E2BIG);
  EXPECT_NE(r.error.find("Argument list too long"), std::string::npos) << r.error;
}

// Whether a process whose command line is exactly `args` exists.
bool running(const std::string& args) {
  const std::string command = "ps -eo args | grep -qx -- '" + args + "'";
  return std::system(command.c_str()) == 0;
}

TEST(ProcessTest, ChildrenDieWithTheProcessThatStartedThem) {
  // A parent that starts a trial and a coprocess, then is killed with SIGKILL (no handler runs):
  // both children go with it.
  const std::string trial = "sleep 31.25", server = "sleep 32.25";
  const pid_t parent = fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    auto coprocess = Coprocess::start({"sleep", "32.25"});
    run_process({"sleep", "31.25"});
    _exit(0);
  }
  for (int i = 0; i < 50 && !(running(trial) && running(server)); ++i) usleep(50000);
  ASSERT_TRUE(running(trial) && running(server));
  kill(parent, SIGKILL);
  waitpid(parent, nullptr, 0);
  for (int i = 0; i < 50 && (running(trial) || running(server)); ++i) usleep(50000);
  EXPECT_FALSE(running(trial));
  EXPECT_FALSE(running(server));
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
