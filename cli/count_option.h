#pragma once
// Options that count something (--trials, --confirm, --top ...). Boost reads "-1" into a size_t as
// 2^64 − 1 without a word; a Count refuses it, and anything but a whole number ≥ 0, with boost's
// one-line "the argument ('-1') for option '--trials' is invalid" (exit 2).
//
//   ("trials", count_value(&options.trials)->default_value(Count{20}, "20"), "...")

#include <cstddef>
#include <string>
#include <vector>

#include <boost/any.hpp>
#include <boost/program_options/value_semantic.hpp>

namespace slapo::cli {

struct Count {
  size_t value = 0;
};

// Found by boost through argument-dependent lookup.
void validate(boost::any& v, const std::vector<std::string>& values, Count*, int);

// An option read as a Count and stored into `*target`.
boost::program_options::typed_value<Count>* count_value(size_t* target);

}  // namespace slapo::cli
