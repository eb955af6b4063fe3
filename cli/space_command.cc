// slapo-tune space show|count|list|sample FILE [--param NAME=VALUE ...]

#include <iostream>

#include <boost/program_options.hpp>

#include "cli/command.h"
#include "cli/config_arg.h"
#include "cli/config_table.h"
#include "core/error.h"
#include "space/compiled_space.h"
#include "space/space_file.h"

namespace po = boost::program_options;

namespace slapo::cli {

namespace {

constexpr const char* kUsage =
    "usage: slapo-tune space ACTION FILE [options]\n"
    "\n"
    "Inspect a search space file (docs/space-files.md).\n"
    "\n"
    "actions:\n"
    "  show FILE      each knob's domain and derived bounds, where each guard is checked,\n"
    "                 how each constraint was classified, and the size\n"
    "  count FILE     the exact number of valid configurations (alone on the last line)\n"
    "  list FILE      the configurations in index order   [--limit N] [--offset K] [--format F]\n"
    "  sample FILE    uniform random configurations       --n N [--seed S] [--format F]\n";

struct SpaceOptions {
  std::string action;
  std::string file;
  std::vector<std::string> params;
  uint64_t limit = 50;
  uint64_t offset = 0;
  uint64_t n = 10;
  uint64_t seed = 0;
  std::string format = "table";
};

}  // namespace

int run_space(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  SpaceOptions o;
  po::options_description visible("options");
  visible.add_options()
      ("help,h", "show this help")
      ("param", po::value<std::vector<std::string>>(&o.params)->composing(),
       "override a parameter: NAME=VALUE (repeatable)")
      ("limit", po::value<uint64_t>(&o.limit)->default_value(50), "list: at most N rows (0: all)")
      ("offset", po::value<uint64_t>(&o.offset)->default_value(0), "list: start at index K")
      ("n", po::value<uint64_t>(&o.n)->default_value(10), "sample: how many")
      ("seed", po::value<uint64_t>(&o.seed)->default_value(0), "sample: random seed")
      ("format", po::value<std::string>(&o.format)->default_value("table"), "table, csv or json");
  po::options_description all;
  all.add(visible).add_options()
      ("action", po::value<std::string>(&o.action))
      ("file", po::value<std::string>(&o.file));
  po::positional_options_description positional;
  positional.add("action", 1).add("file", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help") || args.empty()) {
    out << kUsage << "\n" << visible;
    return vm.count("help") ? kExitOk : kExitUsage;
  }
  static const char* kActions[] = {"show", "count", "list", "sample"};
  bool known = false;
  for (const char* a : kActions) known = known || o.action == a;
  SLAPO_CHECK(known, ErrorCode::kInvalidArgument, "space: unknown action '", o.action,
              "' (expected show, count, list or sample)");
  SLAPO_CHECK(!o.file.empty(), ErrorCode::kInvalidArgument, "space ", o.action, ": missing FILE");
  const Format format = parse_format(o.format);

  const space::Space declared = load_space(o.file, o.params);
  const space::CompiledSpace compiled = space::CompiledSpace::compile(declared);
  std::vector<std::string> columns;
  for (const auto& k : compiled.knobs()) columns.push_back(k.name);

  if (o.action == "show") {
    out << compiled.describe();
    return kExitOk;
  }
  if (o.action == "count") {
    out << compiled.size() << "\n";
    return kExitOk;
  }
  std::vector<Config> configs;
  std::vector<uint64_t> indices;
  if (o.action == "list") {
    const uint64_t total = compiled.size();
    const uint64_t end = o.limit == 0 || o.limit > total - std::min(o.offset, total)
                             ? total
                             : o.offset + o.limit;
    if (o.offset == 0) {
      // Enumerate in order: cheaper than unranking each index.
      uint64_t i = 0;
      compiled.for_each([&](const space::PointView& p) {
        if (i >= end) return false;
        configs.push_back(p.to_config());
        indices.push_back(i++);
        return true;
      });
    } else {
      for (uint64_t i = o.offset; i < end; ++i) {
        configs.push_back(compiled.at(i));
        indices.push_back(i);
      }
    }
    print_configs(out, format, columns, configs, indices);
    if (format == Format::kTable && end < total) {
      out << "... " << total - end << " more (of " << total << "; use --limit 0 for all)\n";
    }
    return kExitOk;
  }
  // sample
  Rng rng(o.seed);
  for (uint64_t i = 0; i < o.n; ++i) {
    configs.push_back(compiled.sample(rng));
    indices.push_back(compiled.index_of(configs.back()));
  }
  print_configs(out, format, columns, configs, indices);
  return kExitOk;
}

}  // namespace slapo::cli
