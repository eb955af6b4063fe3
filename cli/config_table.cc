#include "cli/config_table.h"

#include <algorithm>
#include <ostream>

#include "core/error.h"

namespace slapo::cli {

std::string cell_text(const Value& v) { return to_plain_string(v); }

namespace {
std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}
}  // namespace

Format parse_format(const std::string& text) {
  if (text == "table") return Format::kTable;
  if (text == "csv") return Format::kCsv;
  if (text == "json") return Format::kJson;
  SLAPO_FAIL(ErrorCode::kInvalidArgument, "--format ", text, ": expected table, csv or json");
}

void print_configs(std::ostream& out, Format format, const std::vector<std::string>& columns,
                   const std::vector<Config>& configs, const std::vector<uint64_t>& indices) {
  if (format == Format::kJson) {
    out << "[";
    for (size_t i = 0; i < configs.size(); ++i) out << (i ? ",\n " : "") << configs[i].to_json();
    out << "]\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"index"});
  for (const auto& c : columns) rows.back().push_back(c);
  for (size_t i = 0; i < configs.size(); ++i) {
    std::vector<std::string> row = {std::to_string(indices[i])};
    for (const auto& c : columns) {
      const Value* v = configs[i].find(c);
      row.push_back(v ? cell_text(*v) : "");
    }
    rows.push_back(std::move(row));
  }
  print_table(out, format, rows);
}

void print_table(std::ostream& out, Format format,
                 const std::vector<std::vector<std::string>>& rows) {
  if (format == Format::kCsv) {
    for (const auto& row : rows) {
      for (size_t j = 0; j < row.size(); ++j) out << (j ? "," : "") << csv_quote(row[j]);
      out << "\n";
    }
    return;
  }
  if (rows.empty()) return;
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t j = 0; j < row.size() && j < width.size(); ++j)
      width[j] = std::max(width[j], row[j].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t j = 0; j < row.size(); ++j) {
      std::string padded = row[j];
      if (j + 1 < row.size() && j < width.size()) padded.resize(width[j] + 2, ' ');
      line += padded;
    }
    out << line << "\n";
  }
}

}  // namespace slapo::cli
