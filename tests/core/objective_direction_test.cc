#include "core/objective_direction.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace slapo {
namespace {

TEST(ObjectiveDirectionTest, TheBuiltInMetricsKnowTheirDirection) {
  EXPECT_EQ(builtin_minimize("step_ms_median"), true);
  EXPECT_EQ(builtin_minimize("peak_bytes"), true);
  EXPECT_EQ(builtin_minimize("loss_last"), true);
  EXPECT_EQ(builtin_minimize("samples_per_s"), false);
  EXPECT_EQ(builtin_minimize("tflops"), false);
  EXPECT_EQ(builtin_minimize("val_loss"), std::nullopt);  // a command's own
}

TEST(ObjectiveDirectionTest, WithoutAFlagABuiltInMetricGoesItsOwnWay) {
  EXPECT_TRUE(resolve_objective("step_ms_median", false, false).objective.minimize);
  EXPECT_FALSE(resolve_objective("tokens_per_s", false, false).objective.minimize);
  EXPECT_EQ(resolve_objective("peak_bytes", false, false).note, "");
}

TEST(ObjectiveDirectionTest, AFlagIsObeyedAndTwoAreRefused) {
  EXPECT_FALSE(resolve_objective("step_ms_median", false, true).objective.minimize);
  EXPECT_TRUE(resolve_objective("accuracy", true, false).objective.minimize);
  EXPECT_THROW(resolve_objective("accuracy", true, true), Error);
}

TEST(ObjectiveDirectionTest, ACommandsMetricIsMaximizedWithANoteWhenItReadsLikeACost) {
  const ResolvedObjective loss = resolve_objective("val_loss", false, false);
  EXPECT_FALSE(loss.objective.minimize);
  EXPECT_NE(loss.note.find("maximizing val_loss"), std::string::npos) << loss.note;
  EXPECT_NE(loss.note.find("--minimize"), std::string::npos) << loss.note;
  EXPECT_NE(resolve_objective("epoch_seconds", false, false).note, "");
  EXPECT_NE(resolve_objective("gpu_mem_MiB", false, false).note, "");
  EXPECT_EQ(resolve_objective("accuracy", false, false).note, "");
  EXPECT_EQ(resolve_objective("images_per_sec", false, false).note, "");
  EXPECT_EQ(resolve_objective("val_loss", false, true).note, "");  // said outright
}

}  // namespace
}  // namespace slapo
