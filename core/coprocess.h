#pragma once
// Coprocess: a long-lived child that answers requests line by line over its standard input and
// output (the fork server of the subprocess runner). Started as every child is (spawn_child: its
// own process group, killed when this process dies); its standard error is this process's.
// Destroying it closes its input, kills its group and reaps it.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace slapo {

class Coprocess {
 public:
  // Throws Error(kNotFound) when the executable cannot be started.
  static std::unique_ptr<Coprocess> start(const std::vector<std::string>& argv,
                                          const std::map<std::string, std::string>& env = {});
  ~Coprocess();
  Coprocess(const Coprocess&) = delete;
  Coprocess& operator=(const Coprocess&) = delete;

  // False when the child no longer reads.
  bool write_line(const std::string& line);
  // The next line (without its newline); nullopt at end of output or after `timeout_s` (0: none).
  std::optional<std::string> read_line(double timeout_s);

 private:
  Coprocess() = default;
  int pid_ = -1;
  int in_ = -1, out_ = -1;
  std::string buffer_;
};

}  // namespace slapo
