#include "tests/cli/cli_support.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace slapo::testing {

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

Outcome run(const std::string& args) {
  // CTest runs the cases of this binary in parallel processes: the file names must not collide.
  static int calls = 0;
  const std::string stem =
      ::testing::TempDir() + "/cli_" + std::to_string(getpid()) + "_" + std::to_string(calls++);
  const std::string out = stem + ".out", err = stem + ".err";
  const std::string command =
      std::string(SLAPO_TUNE) + " " + args + " >" + out + " 2>" + err + " </dev/null";
  const int status = std::system(command.c_str());
  Outcome r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

std::string temp_db(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "/db_" + std::to_string(getpid()) + "_" + name + ".db";
  std::remove(path.c_str());
  return path;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace slapo::testing
