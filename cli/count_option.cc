#include "cli/count_option.h"

#include <boost/program_options/errors.hpp>

namespace slapo::cli {

namespace po = boost::program_options;

void validate(boost::any& v, const std::vector<std::string>& values, Count*, int) {
  po::validators::check_first_occurrence(v);
  const std::string& text = po::validators::get_single_string(values);
  size_t used = 0;
  long long n = -1;
  try {
    n = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || n < 0) throw po::invalid_option_value(text);
  v = Count{static_cast<size_t>(n)};
}

po::typed_value<Count>* count_value(size_t* target) {
  return po::value<Count>()->notifier([target](const Count& c) { *target = c.value; });
}

}  // namespace slapo::cli
