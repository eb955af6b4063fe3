#include <gtest/gtest.h>

#include "core/config.h"

#include <cmath>
#include "core/error.h"
#include "core/text.h"
#include "core/trial.h"

namespace slapo {
namespace {

TEST(ConfigTest, KeepsInsertionOrderAndOverwrites) {
  Config c;
  c.set("tp", int64_t{2});
  c.set("attn", std::string("fused"));
  c.set("tp", int64_t{4});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.entries()[0].first, "tp");
  EXPECT_EQ(std::get<int64_t>(c.at("tp")), 4);
  EXPECT_EQ(c.to_json(), R"({"tp":4,"attn":"fused"})");
  EXPECT_EQ(c.to_string(), "tp=4 attn=fused");
  EXPECT_EQ(c.find("pp"), nullptr);
  EXPECT_THROW(c.at("pp"), Error);
}

TEST(ConfigTest, CanonicalJsonIsSortedAndTyped) {
  Config a, b;
  a.set("z", 0.5);
  a.set("a", int64_t{1});
  a.set("cuts", IntList{4, 8});
  a.set("flag", true);
  b.set("flag", true);
  b.set("cuts", IntList{4, 8});
  b.set("a", int64_t{1});
  b.set("z", 0.5);
  EXPECT_EQ(a.canonical_json(), R"({"a":1,"cuts":[4,8],"flag":true,"z":0.5})");
  EXPECT_EQ(a.canonical_json(), b.canonical_json());
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_NE(a, b);  // order differs: same point, different presentation
  Config c = a;
  c.set("z", 1.0);
  EXPECT_NE(c.hash(), a.hash());
  EXPECT_EQ(c.canonical_json(), R"({"a":1,"cuts":[4,8],"flag":true,"z":1.0})");
}

TEST(ConfigTest, StableHashIsFnv1a) {
  // Published FNV-1a 64 test vectors.
  EXPECT_EQ(stable_hash(""), "cbf29ce484222325");
  EXPECT_EQ(stable_hash("a"), "af63dc4c8601ec8c");
  EXPECT_EQ(stable_hash("foobar"), "85944171f73967e8");
}

TEST(ConfigTest, FromJsonRoundTripsAndRejectsBadInput) {
  const Config c = Config::from_json(
      R"({"bs": 16, "ratio": 0.25, "attn": "fused", "on": false, "cuts": [3, 6]})");
  EXPECT_EQ(Config::from_json(c.to_json()), c);
  EXPECT_TRUE(std::holds_alternative<int64_t>(c.at("bs")));
  EXPECT_TRUE(std::holds_alternative<double>(c.at("ratio")));
  auto error = [](const std::string& text) {
    try {
      Config::from_json(text, "best.json");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse);
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error("[1, 2]"), "best.json: expected a JSON object of knob values");
  EXPECT_NE(error("{").find("best.json: not valid JSON"), std::string::npos);
  // A number past a double is bad input too, not a crash (found by fuzz/config_fuzz.cc).
  EXPECT_NE(error(R"({"y": 1e616})").find("best.json: not valid JSON"), std::string::npos);
  EXPECT_EQ(error(R"({"cuts": [1.5]})"),
            "best.json: knob 'cuts': arrays may hold integers only (cut points), found 1.5");
  EXPECT_EQ(
      error(R"({"x": {"a": 1}})"),
      R"(best.json: knob 'x': expected a number, string, boolean or integer array, found {"a":1})");
}

TEST(TrialStatusTest, NamesRoundTrip) {
  for (TrialStatus s : {TrialStatus::kOk, TrialStatus::kOom, TrialStatus::kInvalid,
                        TrialStatus::kScheduleError, TrialStatus::kRuntimeError,
                        TrialStatus::kTimeout, TrialStatus::kCrashed, TrialStatus::kPruned}) {
    EXPECT_EQ(trial_status_from_string(to_string(s)), s);
  }
  EXPECT_EQ(std::string(to_string(TrialStatus::kScheduleError)), "schedule_error");
  EXPECT_FALSE(trial_status_from_string("fine").has_value());
}

TEST(ErrorTest, UserErrorsAreSeparatedFromFailures) {
  EXPECT_TRUE(is_user_error(ErrorCode::kParse));
  EXPECT_TRUE(is_user_error(ErrorCode::kNotFound));
  EXPECT_FALSE(is_user_error(ErrorCode::kIo));
  try {
    SLAPO_INTERNAL_ASSERT(1 + 1 == 3, "arithmetic");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_NE(std::string(e.what()).find("1 + 1 == 3: arithmetic"), std::string::npos);
  }
}

}  // namespace
}  // namespace slapo

namespace slapo {
namespace {
TEST(TextTest, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("step", "stpe"), 2u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("fc_in", ""), 5u);
}
TEST(TextTest, EndsWith) {
  EXPECT_TRUE(ends_with("w.safetensors", ".safetensors"));
  EXPECT_TRUE(ends_with("x", ""));
  EXPECT_FALSE(ends_with("safetensors", ".safetensors"));  // shorter than the suffix
  EXPECT_FALSE(ends_with("peak_mib_x", "_mib"));
}
TEST(TextTest, LastLineIsTheLastNonEmptyOneTrimmed) {
  EXPECT_EQ(last_line("a\nb\n"), "b");
  EXPECT_EQ(last_line("a\n{\"x\": 1}  \n\n"), "{\"x\": 1}");
  EXPECT_EQ(last_line("only"), "only");
  EXPECT_EQ(last_line("\n\n"), "");
  EXPECT_EQ(last_line(""), "");
}
TEST(TextTest, FirstLineIsWhatComesBeforeTheFirstNewline) {
  EXPECT_EQ(first_line("out of memory: 3 bytes live\nException raised from ..."),
            "out of memory: 3 bytes live");
  EXPECT_EQ(first_line("only"), "only");
  EXPECT_EQ(first_line("\nsecond"), "");
}
}  // namespace
}  // namespace slapo

namespace slapo {
namespace {
TEST(TrialResultTest, JsonRoundTrip) {
  TrialResult r;
  r.status = TrialStatus::kOom;
  r.error = "budget \"2GiB\" exceeded";
  r.metrics = {{"peak_bytes", 1234.0}, {"loss_last", std::nan("")}};
  r.log_tail = "line 1\nline 2";
  const TrialResult back = TrialResult::from_json(r.to_json());
  EXPECT_EQ(back.status, TrialStatus::kOom);
  EXPECT_EQ(back.error, r.error);
  EXPECT_EQ(back.log_tail, r.log_tail);
  EXPECT_EQ(back.metrics.at("peak_bytes"), 1234.0);
  EXPECT_EQ(back.metrics.count("loss_last"), 0u);  // non-finite: null, dropped
  EXPECT_THROW(TrialResult::from_json("{\"status\": \"fine\"}"), Error);
  EXPECT_THROW(TrialResult::from_json("garbage"), Error);
}

TEST(ParseBytesTest, UnitsAndErrors) {
  EXPECT_EQ(parse_bytes("123", "x"), 123u);
  EXPECT_EQ(parse_bytes("2GiB", "x"), 2ull << 30);
  EXPECT_EQ(parse_bytes("512 MiB", "x"), 512ull << 20);
  EXPECT_EQ(parse_bytes("1.5GB", "x"), 1500000000u);
  EXPECT_EQ(parse_bytes("64k", "x"), 65536u);
  try {
    parse_bytes("2 gigs", "--memory-budget");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--memory-budget: unknown unit in '2 gigs' (use B, KiB, MiB, GiB, KB, MB, GB)");
  }
  EXPECT_THROW(parse_bytes("lots", "x"), Error);
  EXPECT_THROW(parse_bytes("-1", "x"), Error);
}
}  // namespace
}  // namespace slapo

namespace slapo {
namespace {
TEST(MetricTest, Direction) {
  for (const char* m :
       {"step_ms_median", "step_ms_p90", "peak_bytes", "max_rss_bytes", "wall_s", "loss_last"}) {
    EXPECT_TRUE(lower_is_better(m)) << m;
  }
  for (const char* m : {"samples_per_s", "tokens_per_s", "tflops", "throughput", "speed"}) {
    EXPECT_FALSE(lower_is_better(m)) << m;
  }
}
}  // namespace
}  // namespace slapo
