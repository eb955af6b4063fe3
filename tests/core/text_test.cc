#include "core/text.h"

#include <gtest/gtest.h>

namespace slapo {
namespace {

TEST(TextTest, ADurationKeepsTwoFiguresUnderTenSeconds) {
  EXPECT_EQ(seconds_text(0.4712), "0.47 s");
  EXPECT_EQ(seconds_text(0.0), "0.00 s");
  EXPECT_EQ(seconds_text(3.249), "3.2 s");
  EXPECT_EQ(seconds_text(9.94), "9.9 s");
  EXPECT_EQ(seconds_text(41.6), "42 s");
}

TEST(TextTest, AShellWordIsQuotedOnlyWhenItMustBe) {
  EXPECT_EQ(shell_quote("train.py"), "train.py");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

}  // namespace
}  // namespace slapo
