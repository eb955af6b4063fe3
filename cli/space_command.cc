// slapo-tune space show|count|list|sample FILE [--param NAME=VALUE ...]

#include <ostream>

#include "cli/commands.h"
#include "cli/config_table.h"
#include "cli/count_option.h"
#include "core/error.h"
#include "core/rng.h"
#include "space/compiled_space.h"

namespace slapo::cli {

namespace {

constexpr const char* kSpaceUsage =
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

void declare(SpaceOptions* o, OptionSet& set) {
  o->space.declare(set, /*flag=*/false);
  // clang-format off
  set.visible.add_options()
      ("limit", count_value(&o->limit)->default_value(Count{50}, "50"), "list: at most N rows (0: all)")
      ("offset", count_value(&o->offset)->default_value(Count{0}, "0"), "list: start at index K")
      ("n", count_value(&o->n)->default_value(Count{10}, "10"), "sample: how many")
      ("seed", po::value<uint64_t>(&o->seed)->default_value(0), "sample: random seed")
      ("format", po::value<std::string>(&o->format)->default_value("table"), "table, csv or json");
  // clang-format on
  set.hidden.add_options()("action", po::value<std::string>(&o->action))(
      "file", po::value<std::string>(&o->space.file));
  set.positional.add("action", 1).add("file", 1);
}

}  // namespace

SpaceOptions parse_space(const Args& args) {
  SpaceOptions o = parse_options<SpaceOptions>(args, declare);
  if (o.help) return o;
  SLAPO_CHECK(!o.action.empty(), ErrorCode::kInvalidArgument,
              "space: missing ACTION (show, count, list or sample; see 'slapo-tune space --help')");
  SLAPO_CHECK(
      o.action == "show" || o.action == "count" || o.action == "list" || o.action == "sample",
      ErrorCode::kInvalidArgument, "space: unknown action '", o.action,
      "' (expected show, count, list or sample)");
  SLAPO_CHECK(!o.space.file.empty(), ErrorCode::kInvalidArgument, "space ", o.action,
              ": missing FILE");
  parse_format(o.format);
  return o;
}

int run_space(const SpaceOptions& o, std::ostream& out, std::ostream& err) {
  if (o.help) {
    out << help_text<SpaceOptions>(kSpaceUsage, declare);
    return kExitOk;
  }
  const Format format = parse_format(o.format);

  const space::Space declared = o.space.load();
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
    const uint64_t end =
        o.limit == 0 || o.limit > total - std::min(o.offset, total) ? total : o.offset + o.limit;
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
