// The commands' parsers, without running anything: arguments in, an options struct out (compared
// field by field), bad input refused with its one-line reason.

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <sstream>

#include <boost/program_options/errors.hpp>

#include "cli/commands.h"
#include "cli/config_arg.h"
#include "cli/run_command_line.h"
#include "core/error.h"
#include "db/database.h"
#include "space/space_file.h"

namespace slapo::cli {
namespace {

// The message of the slapo::Error that `f` throws ("" when none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ParseTest, TrialReadsEveryFlagAndTheCommandAfterTheDashes) {
  TrialOptions expected;
  expected.space.file = "s.toml";
  expected.space.params = {"world_size=4", "num_layers=12"};
  expected.config = "{\"batch_size\": 8}";
  expected.db = "t.db";
  expected.json = true;
  expected.runner.runner = "subprocess";
  expected.runner.nproc = 2;
  expected.runner.memory_budget = "1GiB";
  expected.runner.timeout_s = 30;
  expected.runner.metric_regex = "speed=([0-9]+)";
  expected.runner.oom_exit_code = 3;
  expected.runner.command = {"python3", "train.py", "--bs", "{batch_size}"};
  const TrialOptions parsed = parse_trial({"--space",
                                           "s.toml",
                                           "--param",
                                           "world_size=4",
                                           "--param",
                                           "num_layers=12",
                                           "--config",
                                           "{\"batch_size\": 8}",
                                           "--db",
                                           "t.db",
                                           "--json",
                                           "--nproc",
                                           "2",
                                           "--memory-budget",
                                           "1GiB",
                                           "--timeout",
                                           "30",
                                           "--metric-regex",
                                           "speed=([0-9]+)",
                                           "--oom-exit-code",
                                           "3",
                                           "--",
                                           "python3",
                                           "train.py",
                                           "--bs",
                                           "{batch_size}"});
  EXPECT_TRUE(parsed == expected);
  expected.runner.nproc = 1;
  EXPECT_FALSE(parsed == expected);
}

TEST(ParseTest, DefaultsAreTheDocumentedOnes) {
  const TuneOptions o = parse_single_device({"--space", "s.toml"});
  EXPECT_EQ(o.db, "tune.db");
  EXPECT_EQ(o.tuner.strategy, "auto");
  EXPECT_EQ(o.tuner.trials, 20u);
  EXPECT_EQ(o.tuner.confirm, 0u);
  EXPECT_EQ(o.tuner.confirm_rounds, 2u);
  EXPECT_EQ(o.tuner.stop_after_failures, 5u);
  EXPECT_EQ(parse_single_device({"--space", "s.toml", "--stop-after-failures", "0"})
                .tuner.stop_after_failures,
            0u);
  EXPECT_FALSE(o.tuner.objective.minimize);
  EXPECT_EQ(o.runner.timeout_s, 600);
  EXPECT_EQ(o.runner.runner, "subprocess");
  EXPECT_FALSE(o.single_node);
  EXPECT_TRUE(parse_single_node({"--space", "s.toml", "--nproc", "2"}).single_node);
  const SpaceOptions s = parse_space({"list", "s.toml"});
  EXPECT_EQ(s.limit, 50u);
  EXPECT_EQ(s.offset, 0u);
  EXPECT_EQ(s.format, "table");
}

TEST(ParseTest, HelpNeedsNothingElse) {
  EXPECT_TRUE(parse_trial({"--help"}).help);
  EXPECT_TRUE(parse_single_node({"-h"}).help);
  EXPECT_TRUE(parse_db({"--help"}).help);
  EXPECT_TRUE(parse_space({"--help"}).help);
  EXPECT_TRUE(parse_verify({"--help"}).help);
}

TEST(ParseTest, NounsTakeAVerb) {
  EXPECT_EQ(parse_primitives({}).action, "list");
  const PrimitivesOptions show = parse_primitives({"show", "shard"});
  EXPECT_EQ(show.action, "show");
  EXPECT_EQ(show.name, "shard");
  EXPECT_EQ(error_of([] { parse_primitives({"shard"}); }),
            "primitives: unknown action 'shard' (expected list, show NAME or reference)");
  EXPECT_EQ(error_of([] { parse_primitives({"show"}); }), "primitives show: missing NAME");
  EXPECT_EQ(error_of([] { parse_templates({"list", "gpt"}); }), "templates list: takes no NAME");
  EXPECT_EQ(error_of([] {
              parse_space({"tally", "s.toml"});
            }),
            "space: unknown action 'tally' (expected show, count, list or sample)");
  EXPECT_EQ(error_of([] { parse_space({"count"}); }), "space count: missing FILE");
  EXPECT_EQ(error_of([] { parse_db({"trials"}); }), "db trials: --db FILE is required");
  EXPECT_EQ(
      error_of([] {
        parse_db({"vacuum", "--db", "t.db"});
      }),
      "db: unknown action 'vacuum' (expected tasks, trials, best, show, export, claims, prune or "
      "profiles)");
  const WeightsOptions convert =
      parse_weights({"convert", "in.pt", "out.safetensors", "--model", "gpt2", "--layout", "gpt2"});
  EXPECT_EQ(convert.files, (std::vector<std::string>{"in.pt", "out.safetensors"}));
  EXPECT_EQ(convert.layout, "gpt2");
  EXPECT_EQ(parse_weights({"show", "w.pt"}).layout, "auto");
  EXPECT_EQ(error_of([] {
              parse_weights({"load", "w.pt"});
            }),
            "weights: unknown action 'load' (expected show, convert or init; see 'slapo-tune "
            "weights --help')");
  EXPECT_EQ(error_of([] {
              parse_weights({"convert", "in.pt", "--model", "gpt2"});
            }),
            "weights convert: expected two files (IN OUT), got 1");
  EXPECT_EQ(error_of([] { parse_weights({"init", "w.pt"}); }), "weights init: --model is required");
  EXPECT_EQ(error_of([] {
              parse_weights({"show", "w.pt", "--layout", "opt"});
            }),
            "--layout opt: unknown (auto, zoo, gpt2, bert, gpt_neo, llama)");
}

TEST(ParseTest, BadInputIsRefusedWithTheFlagItCameFrom) {
  EXPECT_EQ(error_of([] { parse_trial({"--config", "{}"}); }), "trial: --space FILE is required");
  EXPECT_EQ(error_of([] {
              parse_trial({"--space", "s.toml"});
            }),
            "trial: --config JSON is required");
  EXPECT_EQ(error_of([] {
              parse_single_device({"--space", "s.toml", "--strategy", "hyperband"});
            }),
            "--strategy hyperband: unknown strategy 'hyperband' (strategies: auto, model, bayes, "
            "exhaustive, random, "
            "coordinate, slapo)");
  EXPECT_EQ(error_of([] {
              parse_single_device({"--space", "s.toml", "--nproc", "2"});
            }),
            "single-device: --nproc 2 runs several ranks per trial: use slapo-tune single-node");
  EXPECT_EQ(error_of([] {
              parse_single_node({"--space", "s.toml"});
            }),
            "single-node: --nproc N (2 or more ranks per trial) is required");
  EXPECT_EQ(
      error_of([] {
        parse_db({"trials", "--db", "t.db", "--status", "sleeping"});
      }),
      "--status sleeping: expected ok, oom, invalid, schedule_error, runtime_error, timeout, crashed or pruned");
  EXPECT_EQ(error_of([] {
              parse_db({"prune", "--db", "t.db"});
            }),
            "db prune: --status S is required (which trials to delete)");
  EXPECT_EQ(error_of([] {
              parse_db({"tasks", "--db", "t.db", "--format", "xml"});
            }),
            "--format xml: expected table, csv or json");
  EXPECT_EQ(error_of([] {
              parse_replay({"--db", "t.db", "--steps", "0"});
            }),
            "--steps must be at least 1");
  EXPECT_EQ(error_of([] {
              parse_verify({"--space", "s.toml", "--config", "{}", "--steps", "-1"});
            }),
            "--steps must be >= 0");
  EXPECT_EQ(error_of([] {
              parse_worker({"--workload", "{}"});
            }),
            "worker: --workload and --config are required");
}

TEST(ParseTest, CountsRefuseNegativeNumbersEverywhere) {
  // Boost alone reads -1 into a size_t as 2^64 - 1.
  EXPECT_THROW(parse_space({"list", "s.toml", "--limit", "-1"}), boost::program_options::error);
  EXPECT_THROW(parse_space({"list", "s.toml", "--offset", "-1"}), boost::program_options::error);
  EXPECT_THROW(parse_space({"sample", "s.toml", "--n", "-1"}), boost::program_options::error);
  EXPECT_THROW(parse_single_device({"--space", "s.toml", "--trials", "-1"}),
               boost::program_options::error);
  EXPECT_THROW(parse_db({"best", "--db", "t.db", "--top", "x"}), boost::program_options::error);
  EXPECT_THROW(parse_trial({"--space", "s.toml", "--config", "{}", "--bogus"}),
               boost::program_options::error);
}

TEST(ParseTest, OptionalValuesAreAbsentUntilGiven) {
  const ReplayOptions r = parse_replay({"--db", "t.db"});
  EXPECT_FALSE(r.task.task.has_value());
  EXPECT_FALSE(r.trial.has_value());
  EXPECT_FALSE(r.steps.has_value());
  const ReplayOptions given =
      parse_replay({"--db", "t.db", "--task", "2", "--trial", "0", "--steps", "3"});
  EXPECT_EQ(given.task.task, 2);
  EXPECT_EQ(given.trial, 0);
  EXPECT_EQ(given.steps, 3);
  const DbOptions d = parse_db({"show", "--db", "t.db", "--trial", "4"});
  EXPECT_EQ(d.trial, 4);
  EXPECT_EQ(d.format, "");
}

TEST(ParseTest, TheCommandRunnersFlagsBecomeItsSpecOrAreRefusedByName) {
  const space::Space space = space::parse_space(
      "[knobs]\nbatch = { values = [1, 2] }\nckpt = { values = [false, true] }\n", "s.toml");
  const auto spec_of = [&](const Args& args) {
    const bool ranks = std::find(args.begin(), args.end(), "--nproc") != args.end();
    return (ranks ? parse_single_node(args) : parse_single_device(args))
        .runner.spec(space, "samples_per_s", false);
  };
  const Args base = {"--space", "s.toml"};
  auto with = [&](Args flags, Args command = {"python3", "t.py", "{batch}", "{ckpt}"}) {
    Args all = base;
    all.insert(all.end(), flags.begin(), flags.end());
    all.push_back("--");
    all.insert(all.end(), command.begin(), command.end());
    return all;
  };
  const runners::RunnerSpec spec =
      spec_of(with({"--metric", "loss=loss ([0-9.]+)", "--metric-regex", "rate ([0-9.]+)", "--env",
                    "OMP_NUM_THREADS=2", "--bool-format", "true/false", "--early-stop", "--nproc",
                    "2", "--metric-rank", "all", "--memory-budget", "3GiB"}));
  ASSERT_TRUE(spec.command.has_value());
  const runners::CommandOptions& c = *spec.command;
  ASSERT_EQ(c.metrics.size(), 2u);
  EXPECT_EQ(c.metrics[0].name, "samples_per_s");  // --metric-regex names the objective
  EXPECT_EQ(c.metrics[1].name, "loss");
  EXPECT_EQ(c.env.at("OMP_NUM_THREADS"), "2");
  EXPECT_EQ(c.bool_true, "true");
  EXPECT_EQ(c.metric_rank, runners::kAllRanks);
  EXPECT_EQ(c.memory_budget_bytes, 3ull << 30);
  EXPECT_TRUE(c.early_stopping.enabled);
  EXPECT_EQ(c.early_stopping.metric, "samples_per_s");
  EXPECT_FALSE(c.cwd.empty());
  // The spec round-trips through the task's record (replay).
  EXPECT_EQ(runners::RunnerSpec::from_json(spec.to_json(), "x").to_json(), spec.to_json());

  EXPECT_EQ(error_of([&] {
              spec_of(with({"--metric", "=x"}));
            }),
            "--metric =x: expected NAME=REGEX, e.g. samples_per_s='([0-9.]+) samples/s'");
  EXPECT_EQ(error_of([&] {
              spec_of(with({"--metric", "speed=no group"}));
            }),
            "--metric speed=no group: metric 'speed': the regular expression 'no group' needs one "
            "capture group around the number");
  EXPECT_EQ(error_of([&] {
              spec_of(with({"--metric-rank", "2", "--nproc", "2"}));
            }),
            "--metric-rank 2: expected a rank from 0 to 1 or 'all'");
  EXPECT_EQ(error_of([&] {
              spec_of(with({"--bool-format", "yes"}));
            }),
            "--bool-format yes: expected TRUE/FALSE, e.g. 1/0 or true/false");
  EXPECT_EQ(error_of([&] {
              spec_of(with({"--env", "NOVALUE"}));
            }),
            "--env NOVALUE: expected NAME=VALUE");
  EXPECT_EQ(error_of([&] {
              spec_of(with({}, {"t.py", "--lr={learning_rate}"}));
            }),
            "the command's placeholder {learning_rate}: s.toml declares no knob 'learning_rate'");
  EXPECT_EQ(error_of([&] {
              spec_of(with({}, {"t.py", "{bach}"}));
            }),
            "the command's placeholder {bach}: s.toml declares no knob 'bach' (did you mean "
            "{batch}?)");
}

TEST(ParseTest, DurationsIndicesAndCombinationsOutsideTheirMeaningAreRefused) {
  const space::Space space = space::parse_space("[knobs]\nb = { values = [1, 2] }\n", "s.toml");
  EXPECT_EQ(error_of([] {
              parse_single_device({"--space", "s.toml", "--time-limit", "-5"});
            }),
            "--time-limit -5: expected seconds, at least 0 (0: none)");
  EXPECT_EQ(error_of([&] {
              parse_single_device({"--space", "s.toml", "--timeout", "-1"}).runner.spec(space);
            }),
            "--timeout -1: expected seconds, at least 0 (0: none)");
  EXPECT_EQ(error_of([&] {
              parse_single_device({"--space", "s.toml", "--runner", "inprocess", "--", "t.py"})
                  .runner.spec(space);
            }),
            "--runner inprocess: a command after -- runs under the command runner; leave "
            "--runner out");
  EXPECT_EQ(error_of([] {
              parse_replay({"--db", "t.db", "--trial", "-1"});
            }),
            "--trial -1: a trial index is 0 or more");
}

TEST(ParseTest, AConfigurationFileIsReadBounded) {
  EXPECT_EQ(error_of([] { parse_config_arg("@/dev/zero"); }),
            "--config @/dev/zero: /dev/zero: larger than 1 MiB; a configuration is a JSON object "
            "of knob values");
  EXPECT_EQ(error_of([] { parse_config_arg("@/tmp"); }),
            "--config @/tmp: /tmp: a directory where the configuration file was expected");
  EXPECT_EQ(error_of([] { parse_config_arg("@/nonexistent.json"); }),
            "--config @/nonexistent.json: /nonexistent.json: cannot open the configuration file");
}

// The task a db action reads: the only one, or --task; a database without any says so rather than
// asking to choose among none.
TEST(ParseTest, TheTaskOfADatabaseIsItsOnlyOneOrTheOneChosen) {
  auto database = db::Database::in_memory();
  TaskArgs args;
  args.db = "t.db";
  const std::string none = error_of([&] { args.resolve(*database, "db best"); });
  EXPECT_NE(none.find("db best: t.db has no task"), std::string::npos) << none;
  db::TaskKey key;
  key.workload_json = "{}";
  key.space_hash = "a";
  key.fingerprint_json = "{}";
  const int64_t first = database->find_or_create_task(key, Objective{"samples_per_s"}).id;
  EXPECT_EQ(args.resolve(*database, "db best"), first);
  key.space_hash = "b";
  const int64_t second = database->find_or_create_task(key, Objective{"samples_per_s"}).id;
  const std::string two = error_of([&] { args.resolve(*database, "db best"); });
  EXPECT_NE(two.find("t.db has 2 tasks; choose one with --task ID"), std::string::npos) << two;
  args.task = second;
  EXPECT_EQ(args.resolve(*database, "db best"), second);
}

// The top-level help lists every command by its whole name, its summary apart from it (a
// 12-column field once cut "single-device" to "single-devic").
TEST(ParseTest, TheHelpListsEveryCommandByItsWholeName) {
  std::ostringstream captured;
  std::streambuf* const original = std::cout.rdbuf(captured.rdbuf());
  char program[] = "slapo-tune", flag[] = "--help";
  char* argv[] = {program, flag};
  const int code = run_command_line(2, argv);
  std::cout.rdbuf(original);
  EXPECT_EQ(code, 0);
  const std::string help = captured.str();
  for (const Command& c : commands()) {
    EXPECT_NE(help.find("\n  " + std::string(c.name) + "  "), std::string::npos)
        << c.name << " not listed whole:\n"
        << help;
  }
}

}  // namespace
}  // namespace slapo::cli
