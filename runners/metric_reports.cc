#include "runners/metric_reports.h"

#include <cctype>
#include <cmath>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace slapo::runners {

namespace {

// `text` without the spaces and tabs around it.
std::string trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

bool valid_name(const std::string& name) {
  static const std::regex re(R"([A-Za-z_][A-Za-z0-9_.]*)");
  return std::regex_match(name, re);
}

// One JSON report into `reports`; false (with the problem recorded) when it is not one.
void add_report(const std::string& json_text, const std::string& where, MetricReports* reports) {
  const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (!j.is_object()) {
    reports->problems.push_back(where + ": not a JSON object: " + json_text.substr(0, 120));
    return;
  }
  std::map<std::string, double> values;
  std::optional<int64_t> step;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "step") {
      if (it.value().is_number_integer()) {
        step = it.value().get<int64_t>();
      } else {
        reports->problems.push_back(where + ": \"step\" is not an integer");
      }
      continue;
    }
    if (it.value().is_null()) {
      reports->problems.push_back(where + ": metric '" + it.key() + "' is not finite");
    } else if (!it.value().is_number()) {
      reports->problems.push_back(where + ": metric '" + it.key() + "' is not a number");
    } else if (!valid_name(it.key())) {
      reports->problems.push_back(where + ": '" + it.key() + "' is not a metric name");
    } else {
      values[it.key()] = it.value().get<double>();
    }
  }
  if (step) {
    reports->intermediate.push_back({*step, std::move(values)});
  } else {
    for (auto& [name, value] : values) reports->final_metrics[name] = value;
  }
}

}  // namespace

MetricPattern default_metric_pattern(const std::string& name) {
  std::string escaped;
  for (const char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') escaped += '\\';
    escaped += c;
  }
  return {name, escaped + R"(:\s*([-+0-9.eE]+))"};
}

void check_metric_pattern(const MetricPattern& pattern) {
  try {
    const std::regex re(pattern.regex);
    SLAPO_CHECK(re.mark_count() >= 1, ErrorCode::kInvalidArgument, "metric '", pattern.name,
                "': the regular expression '", pattern.regex,
                "' needs one capture group around the number");
  } catch (const std::regex_error& e) {
    SLAPO_FAIL(ErrorCode::kInvalidArgument, "metric '", pattern.name, "': '", pattern.regex,
               "' is not a valid regular expression: ", e.what());
  }
}

MetricPattern parse_metric_pattern(const std::string& text, const std::string& flag) {
  const size_t eq = text.find('=');
  SLAPO_CHECK(eq != std::string::npos && eq > 0, ErrorCode::kInvalidArgument, flag, " ", text,
              ": expected NAME=REGEX, e.g. samples_per_s='([0-9.]+) samples/s'");
  MetricPattern p{text.substr(0, eq), text.substr(eq + 1)};
  SLAPO_CHECK(valid_name(p.name), ErrorCode::kInvalidArgument, flag, " ", text, ": '", p.name,
              "' is not a metric name (letters, digits, _ and .)");
  try {
    check_metric_pattern(p);
  } catch (const Error& e) {
    throw Error(e.code(), flag + " " + text + ": " + e.what());
  }
  return p;
}

void MetricReports::add_json_lines(const std::string& text, bool prefixed,
                                   const std::string& origin) {
  const std::string prefix = kMetricsLinePrefix;
  size_t line_number = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (prefixed) {
      if (line.compare(0, prefix.size(), prefix) != 0) continue;
      line = line.substr(prefix.size());
    } else if (line.find_first_not_of(" \t") == std::string::npos) {
      continue;
    }
    add_report(line, origin + " line " + std::to_string(line_number), this);
  }
}

void MetricReports::add_regex_matches(const std::string& out, const std::string& err,
                                      const std::vector<MetricPattern>& patterns) {
  for (const MetricPattern& pattern : patterns) {
    const std::regex re(pattern.regex);
    std::smatch last;
    for (const std::string* output : {&out, &err}) {
      for (auto it = std::sregex_iterator(output->begin(), output->end(), re);
           it != std::sregex_iterator(); ++it)
        last = *it;
      if (!last.empty()) break;
    }
    if (last.empty()) continue;
    const std::string number = trim(last[1].str());
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size()) {
      problems.push_back("metric '" + pattern.name + "': '" + number + "' is not a number");
    } else if (!std::isfinite(value)) {
      problems.push_back("metric '" + pattern.name + "' is not finite (" + number + ")");
    } else {
      final_metrics[pattern.name] = value;
    }
  }
}

bool LiveReports::feed(const std::string& chunk) {
  const size_t before = reports_.intermediate.size();
  partial_ += chunk;
  const size_t last_newline = partial_.rfind('\n');
  if (last_newline != std::string::npos) {
    reports_.add_json_lines(partial_.substr(0, last_newline + 1), true, "standard output");
    partial_.erase(0, last_newline + 1);
  }
  poll_file();
  return reports_.intermediate.size() > before;
}

bool LiveReports::poll_file() {
  if (file_.empty() || file_offset_ > kMaxMetricsFileBytes) return false;
  std::ifstream in(file_, std::ios::binary);
  if (!in) return false;
  in.seekg(static_cast<std::streamoff>(file_offset_));
  std::string fresh((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (fresh.empty()) return false;
  file_offset_ += fresh.size();
  file_partial_ += fresh;
  const size_t last_newline = file_partial_.rfind('\n');
  if (last_newline == std::string::npos) return false;
  reports_.add_json_lines(file_partial_.substr(0, last_newline + 1), false, file_);
  file_partial_.erase(0, last_newline + 1);
  return true;
}

}  // namespace slapo::runners
