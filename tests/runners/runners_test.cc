// Runners: faults become statuses with reasons, the next trial runs normally; measurements make
// sense; the command runner passes knob values verbatim.

#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>
#include <chrono>
#include <thread>

#include <cmath>
#include <fstream>

#include "core/error.h"
#include "core/interrupt.h"
#include "core/metrics.h"
#include "models/model_spec.h"
#include "runners/available_memory.h"
#include "runners/heap_policy.h"
#include "runners/inprocess_runner.h"
#include "runners/runner_spec.h"
#include "runners/single_node_runner.h"
#include "runners/subprocess_runner.h"
#include "runners/tracking_allocator.h"
#include "runners/worker_protocol.h"
#include "runners/workload.h"

namespace slapo::runners {
namespace {

Config config(const std::string& json) { return Config::from_json(json); }

// A fake worker: behaves as the config's "mode" says, ignoring the workload.
SubprocessOptions fake_worker(double timeout_s = 5) {
  SubprocessOptions o;
  o.worker = {
      "sh", "-c",
      "case \"$4\" in"
      "  *segv*) echo dying >&2; kill -SEGV $$ ;;"
      "  *abort*) kill -ABRT $$ ;;"
      "  *hang*) sleep 60 ;;"
      "  *exit3*) echo bad config >&2; exit 3 ;;"
      "  *garbage*) echo 'not json at all' ;;"
      "  *) echo '{\"status\": \"ok\", \"error\": \"\", \"metrics\": {\"samples_per_s\": 42}}' ;;"
      "esac",
      "worker"};
  o.workload_json = "{}";
  o.timeout_s = timeout_s;
  return o;
}

TEST(SubprocessRunnerTest, EveryFaultBecomesAStatusAndTheNextTrialRuns) {
  SubprocessRunner runner(fake_worker(0.5));
  const auto results = runner.run({config(R"({"mode": "segv"})"), config(R"({"mode": "ok"})"),
                                   config(R"({"mode": "abort"})"), config(R"({"mode": "hang"})"),
                                   config(R"({"mode": "exit3"})"), config(R"({"mode": "garbage"})"),
                                   config(R"({"mode": "ok"})")});
  ASSERT_EQ(results.size(), 7u);
  EXPECT_EQ(results[0].status, TrialStatus::kCrashed);
  EXPECT_EQ(results[0].error, "worker killed by SIGSEGV");
  EXPECT_NE(results[0].log_tail.find("dying"), std::string::npos);
  EXPECT_EQ(results[1].status, TrialStatus::kOk);
  EXPECT_EQ(results[1].metrics.at("samples_per_s"), 42);
  EXPECT_EQ(results[2].error, "worker killed by SIGABRT");
  EXPECT_EQ(results[3].status, TrialStatus::kTimeout);
  EXPECT_LT(results[3].metrics.at("wall_s"), 5.0);
  EXPECT_EQ(results[4].status, TrialStatus::kRuntimeError);
  EXPECT_EQ(results[4].error, "worker exited with code 3");
  EXPECT_NE(results[4].log_tail.find("bad config"), std::string::npos);
  EXPECT_EQ(results[5].status, TrialStatus::kCrashed);
  EXPECT_NE(results[5].error.find("garbled worker output"), std::string::npos);
  EXPECT_EQ(results[6].status, TrialStatus::kOk);
}

// slapo-tune's own worker process for `workload_json`.
SubprocessOptions real_worker(const std::string& workload_json) {
  SubprocessOptions o;
  o.worker = {SLAPO_TUNE, "worker"};
  o.timeout_s = 120;
  o.workload_json = workload_json;
  return o;
}

TEST(SubprocessRunnerTest, RealWorkerReportsOomAndNonFiniteLoss) {
  SubprocessOptions o = real_worker(
      R"({"model": "gpt-tiny", "seq_len": 16, "warmup": 0, "steps": 2, "threads": 1, "memory_budget": 20000})");
  const TrialResult oom = SubprocessRunner(o).run({config(R"({"batch_size": 8})")})[0];
  EXPECT_EQ(oom.status, TrialStatus::kOom) << oom.error << oom.log_tail;
  EXPECT_NE(oom.error.find("slapo memory budget of"), std::string::npos) << oom.error;
  o.workload_json =
      R"({"model": "gpt-tiny", "seq_len": 16, "warmup": 0, "steps": 4, "threads": 1, "optimizer": "sgd", "lr": 1e30})";
  const TrialResult nan = SubprocessRunner(o).run({config(R"({"batch_size": 8})")})[0];
  EXPECT_EQ(nan.status, TrialStatus::kRuntimeError) << nan.error;
  EXPECT_NE(nan.error.find("non-finite loss"), std::string::npos) << nan.error;
  o.worker = {"/nonexistent/slapo-tune", "worker"};
  EXPECT_THROW(SubprocessRunner(o).run({config("{}")}), Error);
}

TEST(SubprocessRunnerTest, ATrialsTimedStepsFindTheirPagesResident) {
  if (heap_policy() != "retained") GTEST_SKIP() << "this environment configures malloc itself";
  // The logits of 64 samples of 16 positions over 32768 words: 128 MiB tensors, mapped on their
  // own by glibc (above its 32 MiB threshold) unless the heap has room for them, and a step of
  // 404 MiB, more than the heap's 256 MiB pad gives it: the tracking allocator keeps them.
  const SubprocessOptions o = real_worker(
      R"({"model": "gpt-tiny", "vocab": 32768, "seq_len": 16, "warmup": 1, "steps": 2, "threads": 2})");
  const TrialResult r = SubprocessRunner(o).run({config(R"({"batch_size": 64})")})[0];
  ASSERT_EQ(r.status, TrialStatus::kOk) << r.error << r.log_tail;
  const double step_pages = r.metrics.at(metric::kPeakBytes) / 4096;
  EXPECT_GT(step_pages, (400 << 20) / 4096);
  // Without the large blocks kept, every step faulted its logits in again: 84,000 pages.
  EXPECT_LT(r.metrics.at(metric::kPageFaultsPerStep), step_pages / 50);
}

TEST(InProcessRunnerTest, PeakMemoryIsMonotoneInBatchAndInCheckpointing) {
  const Workload w = Workload::from_json(
      R"({"model": "gpt-mini", "seq_len": 128, "warmup": 0, "steps": 1, "threads": 2})", "test");
  InProcessRunner runner(w);
  auto peak = [&](int batch, double ratio) {
    Config c;
    c.set("batch_size", int64_t{batch});
    c.set("ckpt_ratio", ratio);
    const TrialResult r = runner.run({c})[0];
    EXPECT_EQ(r.status, TrialStatus::kOk) << r.error;
    return r.metrics.at("peak_bytes");
  };
  // Big enough that activations, not the optimizer's state, make the peak.
  const double b2 = peak(2, 0.0), b4 = peak(4, 0.0), b8 = peak(8, 0.0);
  EXPECT_LT(b2, b4);
  EXPECT_LT(b4, b8);
  const double c0 = b8, c5 = peak(8, 0.5), c10 = peak(8, 1.0);
  EXPECT_GT(c0, c5);
  EXPECT_GT(c5, c10);
}

TEST(InProcessRunnerTest, MetricsAndFailures) {
  const Workload w = Workload::from_json(
      R"({"model": "gpt-tiny", "warmup": 1, "steps": 3, "threads": 1})", "test");
  const TrialResult ok = measure_trial(w, config(R"({"batch_size": 4, "attn": "baddbmm"})"));
  ASSERT_EQ(ok.status, TrialStatus::kOk) << ok.error;
  for (const char* m :
       {"samples_per_s", "tokens_per_s", "step_ms_median", "step_ms_p10", "step_ms_p90",
        "peak_bytes", "tflops", "loss_first", "loss_last", "build_ms", "max_rss_bytes"}) {
    EXPECT_TRUE(ok.metrics.count(m)) << m;
  }
  EXPECT_LE(ok.metrics.at("step_ms_p10"), ok.metrics.at("step_ms_median"));
  EXPECT_LE(ok.metrics.at("step_ms_median"), ok.metrics.at("step_ms_p90"));
  EXPECT_NEAR(ok.metrics.at("tokens_per_s"), ok.metrics.at("samples_per_s") * 16,
              1e-6 * ok.metrics.at("tokens_per_s"));
  // The fusions train the same model: the same losses as the plain run, dropout included.
  const TrialResult plain = measure_trial(w, config(R"({"batch_size": 4})"));
  const TrialResult fused = measure_trial(
      w,
      config(
          R"({"batch_size": 4, "fuse_bias_gelu": true, "fuse_bias_dropout_add": true, "fuse_layer_norm": true})"));
  ASSERT_EQ(fused.status, TrialStatus::kOk) << fused.error;
  EXPECT_NEAR(fused.metrics.at("loss_last"), plain.metrics.at("loss_last"),
              1e-5 * plain.metrics.at("loss_last"));
  EXPECT_NE(fused.metrics.at("loss_last"), fused.metrics.at("loss_first"));
  const TrialResult unknown = measure_trial(w, config(R"({"zero_stage": 2})"));
  EXPECT_EQ(unknown.status, TrialStatus::kInvalid);
  EXPECT_NE(unknown.error.find("knob 'zero_stage' is not understood"), std::string::npos);
  // Two tensor-parallel ranks cannot run in one process: invalid, saying how to run it.
  const TrialResult layout = measure_trial(w, config(R"({"tp": 2})"));
  EXPECT_EQ(layout.status, TrialStatus::kInvalid);
  EXPECT_NE(layout.error.find("needs 2 ranks"), std::string::npos) << layout.error;
}

// Without a memory budget, this machine's memory holds a trial (runners/machine_memory.h): a step
// past its ceiling fails as out of memory, saying whose memory, where the kernel's killer would
// have ended the worker. With a budget, the budget alone.
TEST(InProcessRunnerTest, WithoutABudgetAStepPastThisMachinesMemoryIsOutOfMemory) {
  struct HeldTo {
    explicit HeldTo(const char* bytes) { setenv(kAvailableMemoryVariable, bytes, 1); }
    ~HeldTo() { unsetenv(kAvailableMemoryVariable); }
  };
  Workload w = Workload::from_json(
      R"({"model": "gpt-tiny", "seq_len": 16, "warmup": 0, "steps": 1, "threads": 1})", "test");
  const TrialResult unheld = measure_trial(w, config(R"({"batch_size": 8})"));
  ASSERT_EQ(unheld.status, TrialStatus::kOk) << unheld.error;
  const double peak = unheld.metrics.at(metric::kPeakBytes);
  // A machine whose ceiling (three quarters of what it has available) is under that peak.
  const std::string under = std::to_string(static_cast<long long>(peak));
  {
    const HeldTo held(under.c_str());
    const TrialResult oom = measure_trial(w, config(R"({"batch_size": 8})"));
    EXPECT_EQ(oom.status, TrialStatus::kOom) << oom.error;
    EXPECT_NE(oom.error.find("out of this machine's memory: past"), std::string::npos) << oom.error;
    EXPECT_EQ(TrackingAllocator::instance().budget(), 0u);  // lifted after the trial
    // The space's budget, over the step's peak, is what holds it then.
    w.memory_budget = static_cast<int64_t>(2 * peak);
    EXPECT_EQ(measure_trial(w, config(R"({"batch_size": 8})")).status, TrialStatus::kOk);
  }
  // One with room for it.
  const std::string over = std::to_string(static_cast<long long>(2 * peak));
  const HeldTo held(over.c_str());
  w.memory_budget = 0;
  EXPECT_EQ(measure_trial(w, config(R"({"batch_size": 8})")).status, TrialStatus::kOk);
}

TEST(WorkloadTest, ParsesAndRejectsWithTheKey) {
  const Workload w = Workload::from_json(
      R"({"model": "gpt-mini", "memory_budget": "64MiB", "optimizer": "sgd"})", "s.toml");
  EXPECT_EQ(w.memory_budget, 64u << 20);
  EXPECT_EQ(Workload::from_json(w.to_json(), "x").to_json(), w.to_json());
  auto error = [](const std::string& json) {
    try {
      Workload::from_json(json, "s.toml");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error(R"({"model": "gpt-mini", "stpes": 3})").substr(0, 40),
            "s.toml: [workload] unknown key 'stpes' (");
  EXPECT_EQ(error(R"({"model": "gpt-mini", "steps": 0})"),
            "s.toml: [workload] steps: expected a positive integer, found 0");
  EXPECT_EQ(error(R"({"steps": 3})"), "s.toml: [workload] needs model = \"<preset>\"");
  EXPECT_NE(error(R"({"model": "gpt-mini", "memory_budget": "lots"})").find("memory_budget"),
            std::string::npos);
}

TEST(WorkloadTest, TheCanonicalJsonIsTheRecordedTaskKey) {
  // Tasks recorded earlier are found by this text: its keys, their order and which are left out
  // when at their default must not change.
  EXPECT_EQ(
      Workload::from_json(R"({"model": "gpt-tiny"})", "s").to_json(),
      R"({"model":"gpt-tiny","batch_size":8,"dtype":"float32","optimizer":"adamw","lr":0.0001,"warmup":2,)"
      R"("steps":5,"threads":2,"seed":0})");
  EXPECT_EQ(
      Workload::from_json(
          R"({"data_dtype": "int32", "data": "t.bin", "memory_budget": 1024, "seed": 3,
                                    "vocab": 64, "seq_len": 8, "template": "gpt", "model": "gpt-tiny"})",
          "s")
          .to_json(),
      R"({"model":"gpt-tiny","template":"gpt","batch_size":8,"seq_len":8,"vocab":64,"dtype":"float32",)"
      R"("optimizer":"adamw","lr":0.0001,"warmup":2,"steps":5,"threads":2,"seed":3,"memory_budget":1024,)"
      R"("data":"t.bin","data_dtype":"int32"})");
}

TEST(WorkloadTest, LayersMakeADeeperOrShallowerVariantOfThePreset) {
  const Workload deep = Workload::from_json(R"({"model": "gpt-tiny", "layers": 5})", "s.toml");
  EXPECT_EQ(deep.spec().layers, 5);
  EXPECT_NE(deep.to_json().find("\"layers\":5"), std::string::npos);
  EXPECT_EQ(Workload::from_json(deep.to_json(), "s").spec().layers, 5);
  EXPECT_EQ(Workload::from_json(R"({"model": "gpt-tiny"})", "s").spec().layers,
            models::model_preset("gpt-tiny").layers);
  try {
    Workload::from_json(R"({"model": "gpt-tiny", "layers": 0})", "s.toml");
    FAIL() << "layers = 0 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layers"), std::string::npos) << e.what();
  }
}

TEST(RunnerSpecTest, RoundTripsThroughJsonAndFromTheTaskRecord) {
  Workload w = Workload::from_json(R"({"model": "gpt-tiny", "steps": 2})", "s");
  const RunnerSpec spec = RunnerSpec::for_workload(w, "subprocess", 1, 30, /*fork_server=*/false);
  const RunnerSpec back = RunnerSpec::from_json(spec.to_json(), "spec");
  EXPECT_EQ(back.to_json(), spec.to_json());
  EXPECT_EQ(back.kind, "subprocess");
  EXPECT_FALSE(back.fork_server);
  EXPECT_EQ(back.timeout_s, 30);
  EXPECT_EQ(spec.natural_objective(), "samples_per_s");
  EXPECT_EQ(spec.workload_key(), w.to_json());
  // Several ranks make it single-node; the task record gives the same spec back.
  const RunnerSpec ranks = RunnerSpec::for_workload(w, "subprocess", 2, 600, true);
  EXPECT_EQ(ranks.kind, "single-node");
  const RunnerSpec again =
      RunnerSpec::from_task(ranks.workload_key(), "single-node", 2, "samples_per_s");
  EXPECT_EQ(again.to_json(), ranks.to_json());
  EXPECT_EQ(make_runner(again)->world_size(), 2);

  CommandOptions c;
  c.argv = {"sh", "-c", "echo speed=1"};
  c.metrics = {{"speed", "speed=([0-9]+)"}};
  c.metric_name = "speed";
  c.oom_pattern = "out of memory";
  c.oom_exit_code = 3;
  c.nproc = 2;
  const RunnerSpec command = RunnerSpec::for_command(c);
  EXPECT_EQ(
      command.workload_key(),
      R"x({"command":["sh","-c","echo speed=1"],"metric_regex":"speed=([0-9]+)","oom_pattern":"out of memory",)x"
      R"x("oom_exit_code":3,"timeout_s":0.0,"nproc":2})x");
  const RunnerSpec replayed = RunnerSpec::from_task(command.workload_key(), "command", 2, "speed");
  EXPECT_EQ(replayed.to_json(), command.to_json());
  EXPECT_EQ(RunnerSpec::from_json(command.to_json(), "spec").natural_objective(), "speed");
  EXPECT_EQ(make_runner(replayed)->kind(), "command");

  auto error = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error([&] { RunnerSpec::for_workload(w, "inprocess", 2, 600, true); }),
            "the inprocess runner runs one rank; 2 ranks per trial need processes (single-node)");
  EXPECT_EQ(error([&] { RunnerSpec::for_workload(w, "remote", 1, 600, true); }),
            "runner 'remote': expected inprocess, subprocess or single-node");
  EXPECT_EQ(error([] { RunnerSpec::from_json("[1]", "spec.json"); }),
            "spec.json: not a runner spec (a JSON object with a kind)");
}

TEST(WorkerProtocolTest, EveryMessageRoundTrips) {
  Config c;
  c.set("batch_size", int64_t{8});
  EXPECT_EQ(
      worker_argv({"/bin/w", "worker"}, "{}", c),
      (std::vector<std::string>{"/bin/w", "worker", "--workload", "{}", "--config", c.to_json()}));
  EXPECT_EQ(fork_server_argv({"/bin/w", "worker"}),
            (std::vector<std::string>{"/bin/w", "worker", "--serve"}));
  const std::optional<TrialRequest> request =
      decode_request(encode_request({"{\"model\":1}", c.to_json(), 12.5}));
  ASSERT_TRUE(request.has_value());
  EXPECT_EQ(request->workload_json, "{\"model\":1}");
  EXPECT_EQ(request->config_json, c.to_json());
  EXPECT_EQ(request->timeout_s, 12.5);
  std::string why;
  EXPECT_FALSE(decode_request("{\"workload\": 3, \"config\": \"{}\"}", &why).has_value());
  EXPECT_EQ(why, "fork server: not a request: {\"workload\": 3, \"config\": \"{}\"}");
  ProcessResult p;
  p.started = true;
  p.exit_code = 0;
  p.signal = 9;
  p.timed_out = true;
  p.out = "line\n\xff";  // not UTF-8: replaced, not a broken answer
  p.err = "e";
  p.duration_s = 1.5;
  const std::optional<ProcessResult> back = decode_response(encode_response(p));
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->started && back->timed_out);
  EXPECT_EQ(back->signal, 9);
  EXPECT_EQ(back->out.substr(0, 5), "line\n");
  EXPECT_EQ(back->err, "e");
  EXPECT_EQ(back->duration_s, 1.5);
  EXPECT_FALSE(back->oom_killed);
  // A worker the kernel's out-of-memory killer ended is out of memory, not a crash (the fork
  // server answers for the process it waited on).
  p.timed_out = false;
  p.oom_killed = true;
  const std::optional<ProcessResult> killed = decode_response(encode_response(p));
  ASSERT_TRUE(killed.has_value());
  EXPECT_TRUE(killed->oom_killed);
  const TrialResult oom = worker_result(*killed, 60, 5);
  EXPECT_EQ(oom.status, TrialStatus::kOom) << oom.error;
  EXPECT_NE(oom.error.find("out-of-memory killer"), std::string::npos) << oom.error;
  p.oom_killed = false;
  EXPECT_EQ(worker_result(p, 60, 5).status, TrialStatus::kCrashed);
  EXPECT_FALSE(decode_response("not json").has_value());
  EXPECT_FALSE(decode_response("{\"exit_code\": \"zero\"}").has_value());
}

TEST(WorkloadTest, TrainsOnATokenFile) {
  const std::string path = ::testing::TempDir() + "/tokens_" + std::to_string(getpid()) + ".u16";
  {
    std::ofstream out(path, std::ios::binary);
    for (uint16_t i = 0; i < 4000; ++i) {
      const uint16_t t = static_cast<uint16_t>(i % 128);
      out.write(reinterpret_cast<const char*>(&t), 2);
    }
  }
  const Workload w = Workload::from_json(
      R"({"model": "gpt-tiny", "warmup": 0, "steps": 2, "threads": 1, "data": ")" + path + "\"}",
      "t");
  EXPECT_EQ(measure_trial(w, config(R"({"batch_size": 4})")).status, TrialStatus::kOk);
  const Workload small_vocab = Workload::from_json(
      R"({"model": "gpt-tiny", "vocab": 64, "steps": 1, "data": ")" + path + "\"}", "t");
  const TrialResult r = measure_trial(small_vocab, config(R"({"batch_size": 4})"));
  EXPECT_EQ(r.status, TrialStatus::kInvalid);
  EXPECT_NE(r.error.find("token ids outside [0, 64)"), std::string::npos) << r.error;
}

// ---- the fork server ----------------------------------------------------------------------------

TEST(ForkServerTest, TrialsAreForkedFromOneServer) {
  SubprocessOptions o;
  o.worker = {SLAPO_TUNE, "worker"};
  o.workload_json =
      R"({"model": "gpt-tiny", "batch_size": 4, "seq_len": 16, "warmup": 1, "steps": 1, "threads": 1})";
  o.fork_server = true;
  o.timeout_s = 60;
  SubprocessRunner runner(o);
  const auto results = runner.run({config(R"({"ckpt_ratio": 0.5})"), config(R"({"zero_stage": 1})"),
                                   config(R"({"attn": "baddbmm"})")});
  EXPECT_EQ(results[0].status, TrialStatus::kOk) << results[0].error << results[0].log_tail;
  EXPECT_GT(results[0].metrics.at("samples_per_s"), 0);
  EXPECT_EQ(results[1].status, TrialStatus::kInvalid);  // refused in the child, the server goes on
  EXPECT_NE(results[1].error.find("knob 'zero_stage' is not understood"), std::string::npos)
      << results[1].error;
  EXPECT_EQ(results[2].status, TrialStatus::kOk) << results[2].error << results[2].log_tail;
  // A fork costs far less than a new process that loads LibTorch (~0.4 s here).
  EXPECT_LT(results[2].metrics.at("wall_s"), results[2].metrics.at("build_ms") / 1000 + 0.3);

  // The time limit kills the forked child; the server answers the next request.
  o.timeout_s = 0.3;
  o.workload_json =
      R"({"model": "gpt-mini", "batch_size": 64, "seq_len": 256, "warmup": 5, "steps": 50, "threads": 1})";
  SubprocessRunner slow(o);
  const auto late = slow.run({config("{}")});
  EXPECT_EQ(late[0].status, TrialStatus::kTimeout) << late[0].error;
}

TEST(ForkServerTest, AServerThatDiesIsStartedAgain) {
  SubprocessOptions o;
  // Answers one request, then exits: the second trial finds it gone and is measured once more by
  // a new server; so is the third.
  o.worker = {
      "sh", "-c",
      "read request; printf '%s\\n' '{\"started\": true, \"timed_out\": false, \"exit_code\": 0, \"signal\": 0, "
      "\"out\": \"{\\\"status\\\": \\\"ok\\\", \\\"error\\\": \\\"\\\", \\\"metrics\\\": "
      "{\\\"samples_per_s\\\": 7}}\\n\", \"err\": \"\", \"duration_s\": 0.01}'",
      "worker"};
  o.workload_json = "{}";
  o.fork_server = true;
  o.timeout_s = 5;
  SubprocessRunner runner(o);
  const auto results =
      runner.run({config(R"({"a": 1})"), config(R"({"a": 2})"), config(R"({"a": 3})")});
  for (const TrialResult& r : results) {
    EXPECT_EQ(r.status, TrialStatus::kOk) << r.error << r.log_tail;
    EXPECT_EQ(r.metrics.at("samples_per_s"), 7);
  }
  // A server that dies at every request: the trial fails after its one retry, saying so.
  o.worker = {"sh", "-c", "read request; exit 1", "worker"};
  SubprocessRunner dying(o);
  const TrialResult lost = dying.run({config(R"({"a": 1})")})[0];
  EXPECT_EQ(lost.status, TrialStatus::kRuntimeError);
  EXPECT_EQ(lost.error,
            "the fork server stopped answering during this trial, and again when it was measured "
            "once more");
}

TEST(ForkServerTest, AnInterruptEndsTheServerAndTheTrialIsInterrupted) {
  clear_interrupt();
  SubprocessOptions o;
  o.worker = {"sh", "-c", "read request; sleep 30", "worker"};  // a trial that would run on
  o.workload_json = "{}";
  o.fork_server = true;
  o.timeout_s = 60;
  SubprocessRunner runner(o);
  std::thread interrupter([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    request_interrupt();
  });
  const TrialResult r = runner.run({config("{}")})[0];
  interrupter.join();
  clear_interrupt();
  EXPECT_EQ(r.status, TrialStatus::kInterrupted) << r.error << r.log_tail;
  EXPECT_LT(r.metrics.at("wall_s"), 10.0);
}

// ---- several ranks per trial ------------------------------------------------------------------

// A fake worker rank: rank 1 misbehaves as the config's "mode" says; every other rank reports.
SingleNodeOptions fake_ranks(double timeout_s = 5) {
  SingleNodeOptions o;
  o.worker = {
      "sh", "-c",
      "if [ \"$RANK\" = 1 ]; then case \"$4\" in"
      "  *segv*) kill -SEGV $$ ;;"
      "  *oom*) echo '{\"status\": \"oom\", \"error\": \"budget\", \"metrics\": {}}'; exit 0 ;;"
      "  *hang*) sleep 60 ;;"
      "esac; fi;"
      "case \"$4\" in"
      "  *ok*) printf '{\"status\": \"ok\", \"error\": \"\", \"metrics\": {\"samples_per_s\": %s}}\\n' 1$RANK$WORLD_SIZE ;;"
      "  *) echo '{\"status\": \"runtime_error\", \"error\": \"peer closed\", \"metrics\": {}}' ;;"
      "esac",
      "worker"};
  o.workload_json = "{}";
  o.nproc = 2;
  o.timeout_s = timeout_s;
  return o;
}

TEST(SingleNodeRunnerTest, ARankThatFailsFailsTheTrialNotTheTuner) {
  SingleNodeRunner runner(fake_ranks(1.0));
  EXPECT_EQ(runner.kind(), "single-node");
  EXPECT_EQ(runner.world_size(), 2);
  const auto results = runner.run({config(R"({"mode": "segv"})"), config(R"({"mode": "oom"})"),
                                   config(R"({"mode": "hang"})"), config(R"({"mode": "ok"})")});
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].status, TrialStatus::kCrashed);
  EXPECT_EQ(results[0].error, "rank 1: worker killed by SIGSEGV");
  EXPECT_EQ(results[1].status, TrialStatus::kOom);  // the cause, not rank 0's consequence
  EXPECT_EQ(results[1].error, "rank 1: budget");
  EXPECT_EQ(results[2].status, TrialStatus::kTimeout);
  EXPECT_EQ(results[3].status, TrialStatus::kOk) << results[3].error;
  EXPECT_EQ(results[3].metrics.at("samples_per_s"), 102);  // rank 0's ("1$RANK$WORLD_SIZE")
}

TEST(SingleNodeRunnerTest, RealRanksTrainTheTemplateLayout) {
  SingleNodeOptions o;
  o.worker = {SLAPO_TUNE, "worker"};
  o.workload_json =
      R"({"model": "gpt-tiny", "batch_size": 8, "seq_len": 16, "warmup": 1, "steps": 2})";
  o.nproc = 2;
  o.timeout_s = 120;
  SingleNodeRunner runner(o);
  const auto results = runner.run(
      {config(R"({"tp": 2, "micro_batches": 2})"), config(R"({"pp": 2, "micro_batches": 2})"),
       config(R"({"micro_batches": 2})"), config(R"({"tp": 2, "pp": 2})")});
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(results[i].status, TrialStatus::kOk)
        << i << ": " << results[i].error << results[i].log_tail;
    EXPECT_GT(results[i].metrics.at("samples_per_s"), 0);
    EXPECT_GT(results[i].metrics.at("comm_share"),
              0);  // data parallelism fills the ranks of the third
    EXPECT_TRUE(std::isfinite(results[i].metrics.at("loss_last")));
  }
  EXPECT_GT(results[1].metrics.at("bubble_share"), 0);
  // Four ranks' worth of layout on two: refused before anything runs, with the reason.
  EXPECT_EQ(results[3].status, TrialStatus::kInvalid);
  EXPECT_NE(results[3].error.find("needs 4 ranks; this run has 2"), std::string::npos)
      << results[3].error;
}

}  // namespace
}  // namespace slapo::runners
