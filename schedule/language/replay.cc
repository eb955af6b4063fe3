#include "schedule/language/replay.h"

#include <cctype>
#include <sstream>

#include "core/error.h"
#include "schedule/language/arg_reader.h"
#include "schedule/language/primitives.h"

namespace slapo::schedule {

std::string quote_argument(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::vector<AppliedPrimitive> parse_schedule_text(const std::string& text) {
  std::vector<AppliedPrimitive> steps;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    line = line.substr(first);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    SLAPO_CHECK(line.rfind("sch[", 0) == 0 && line.back() == ')', ErrorCode::kParse,
                "schedule line ", number,
                ": expected sch[\"path\"].primitive(args), found: ", line);
    const std::string after = line.substr(4);
    ArgReader path_reader(after, number);
    const std::string path = path_reader.string();
    // Skip past the closing quote of the path: the first `"]` after it.
    const size_t close = line.find("\"].", 4);
    SLAPO_CHECK(close != std::string::npos, ErrorCode::kParse, "schedule line ", number,
                ": expected \"]. after the path");
    const size_t open = line.find('(', close);
    SLAPO_CHECK(open != std::string::npos, ErrorCode::kParse, "schedule line ", number,
                ": expected ( after the primitive");
    AppliedPrimitive step;
    step.path = path;
    step.primitive = line.substr(close + 3, open - close - 3);
    step.args = line.substr(open + 1, line.size() - open - 2);
    steps.push_back(std::move(step));
  }
  return steps;
}

void replay(Schedule& sch, const std::vector<AppliedPrimitive>& steps,
            const ReplaceFactory& factory) {
  int index = 0;
  for (const AppliedPrimitive& step : steps) {
    ++index;
    const ReplayForm* form = find_replay_form(step.primitive);
    SLAPO_CHECK(form != nullptr, ErrorCode::kParse, "replay step ", index, ": unknown primitive '",
                step.primitive, "'");
    ArgReader args(step.args, index);
    form->apply(sch[step.path], args, ReplayStep{step, index, factory});
  }
}

}  // namespace slapo::schedule
