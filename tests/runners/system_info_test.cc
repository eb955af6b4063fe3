// The machine's fingerprint, and what makes two of them different machines.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runners/system_info.h"

namespace slapo::runners {
namespace {

TEST(SystemInfoTest, AnotherRevisionOfSlapoIsNotAnotherMachine) {
  const std::string here = fingerprint_json(collect_system_info());
  EXPECT_EQ(machine_difference(here, here), "");
  nlohmann::json code = nlohmann::json::parse(here);
  ASSERT_TRUE(code.contains("measuring_code")) << here;
  code["measuring_code"] = "abc123";
  code["slapo"] = "9.9.9";
  code["git"] = "abc123";  // the whole revision, in fingerprints stored before the measuring code
  EXPECT_EQ(machine_difference(here, code.dump()), "");
}

TEST(SystemInfoTest, AnotherMachineIsNamedByWhatDiffers) {
  const std::string here = fingerprint_json(collect_system_info());
  nlohmann::json other = nlohmann::json::parse(here);
  other["cpu"] = "another CPU";
  other["cores"] = 64;
  other["measuring_code"] = "abc123";
  const std::string said = machine_difference(here, other.dump());
  EXPECT_NE(said.find("cores "), std::string::npos) << said;
  EXPECT_NE(said.find(" -> 64"), std::string::npos) << said;
  EXPECT_NE(said.find("cpu "), std::string::npos) << said;
  EXPECT_NE(said.find("another CPU"), std::string::npos) << said;
  EXPECT_EQ(said.find("measuring_code"), std::string::npos) << said;
  EXPECT_EQ(machine_difference(here, "not json"), "unreadable");
}

}  // namespace
}  // namespace slapo::runners
