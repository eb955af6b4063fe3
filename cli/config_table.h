#pragma once
// Prints configurations as an aligned table, CSV or JSON (an array of objects).

#include <iosfwd>
#include <string>
#include <vector>

#include "core/config.h"

namespace slapo::cli {

enum class Format { kTable, kCsv, kJson };

// Parses "table" | "csv" | "json"; throws Error(kInvalidArgument) naming --format otherwise.
Format parse_format(const std::string& text);

// Prints rows under a header as an aligned table or as CSV.
void print_table(std::ostream& out, Format format,
                 const std::vector<std::vector<std::string>>& rows);

// The cell text of a value (cut points as "4,8,12").
std::string cell_text(const Value& value);

// `columns` names the knobs in order; `first_index` numbers the rows (the space index).
void print_configs(std::ostream& out, Format format, const std::vector<std::string>& columns,
                   const std::vector<Config>& configs, const std::vector<uint64_t>& indices);

}  // namespace slapo::cli
