#include "space/space_file.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <toml++/toml.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/read_file.h"
#include "space/bind.h"

namespace slapo::space {

using slapo::to_string;

namespace {

class Loader {
 public:
  explicit Loader(std::string origin) : origin_(std::move(origin)) {}

  Space load(const std::string& text) {
    toml::table root;
    try {
      root = toml::parse(text, origin_);
    } catch (const toml::parse_error& e) {
      SLAPO_FAIL(ErrorCode::kParse, origin_, ":", e.source().begin.line, ":",
                 e.source().begin.column, ": ", e.description());
    }
    Space space;
    space.origin = origin_;
    for (auto&& [key, node] : root) {
      const std::string name(key.str());
      static const char* kTables[] = {"workload", "parameters", "knobs", "constraints", "space"};
      const bool known =
          std::find(std::begin(kTables), std::end(kTables), name) != std::end(kTables);
      if (!known) {
        std::vector<std::string> names(std::begin(kTables), std::end(kTables));
        const std::string near = nearest_name(name, names);
        fail(node, "unknown table [" + name + "]" +
                       (near.empty() ? " (expected workload, parameters, knobs, constraints, space)"
                                     : " (did you mean [" + near + "]?)"));
      }
      if (!node.is_table()) fail(node, "'" + name + "' must be a table: [" + name + "]");
    }
    if (auto* workload = root["workload"].as_table())
      space.workload_json = to_json(*workload).dump();
    if (auto* params = root["parameters"].as_table()) load_parameters(*params, &space);
    if (auto* knobs = root["knobs"].as_table()) load_knobs(*knobs, &space);
    if (auto* constraints = root["constraints"].as_table()) load_constraints(*constraints, &space);
    if (auto* options = root["space"].as_table()) load_options(*options, &space);
    return space;
  }

 private:
  SourceLocation where(const toml::node& node) const {
    SourceLocation loc;
    loc.file = origin_;
    loc.line = static_cast<int>(node.source().begin.line);
    loc.column = static_cast<int>(node.source().begin.column);
    return loc;
  }

  [[noreturn]] void fail(const toml::node& node, const std::string& message) const {
    SLAPO_FAIL(ErrorCode::kParse, where(node).to_string(), ": ", message);
  }

  // Entries of a table in file order (toml++ keeps tables sorted by key).
  static std::vector<std::pair<std::string, const toml::node*>> in_file_order(
      const toml::table& table) {
    std::vector<std::pair<std::string, const toml::node*>> entries;
    for (auto&& [key, node] : table) entries.emplace_back(std::string(key.str()), &node);
    std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
      const auto& sa = a.second->source().begin;
      const auto& sb = b.second->source().begin;
      return sa.line != sb.line ? sa.line < sb.line : sa.column < sb.column;
    });
    return entries;
  }

  static nlohmann::ordered_json to_json(const toml::node& node) {
    if (auto* t = node.as_table()) {
      nlohmann::ordered_json j = nlohmann::ordered_json::object();
      for (const auto& [key, child] : in_file_order(*t)) j[key] = to_json(*child);
      return j;
    }
    if (auto* a = node.as_array()) {
      nlohmann::ordered_json j = nlohmann::ordered_json::array();
      for (const auto& child : *a) j.push_back(to_json(child));
      return j;
    }
    if (auto* v = node.as_integer()) return v->get();
    if (auto* v = node.as_floating_point()) return v->get();
    if (auto* v = node.as_boolean()) return v->get();
    if (auto* v = node.as_string()) return v->get();
    if (auto* v = node.as_date()) {
      const toml::date& d = v->get();
      return std::to_string(d.year) + "-" + std::to_string(d.month) + "-" + std::to_string(d.day);
    }
    return nullptr;  // times: not meaningful to a workload
  }

  Value scalar(const toml::node& node, const std::string& what) const {
    if (auto* v = node.as_integer()) return static_cast<int64_t>(v->get());
    if (auto* v = node.as_floating_point()) return v->get();
    if (auto* v = node.as_boolean()) return v->get();
    if (auto* v = node.as_string()) return v->get();
    fail(node, what + ": expected a number, string or boolean");
  }

  // A bound: a number, or a string holding an expression of parameters.
  std::string expression(const toml::node& node, const std::string& what) const {
    if (auto* v = node.as_integer()) return std::to_string(v->get());
    if (auto* v = node.as_floating_point()) return to_string(Value(v->get()));
    if (auto* v = node.as_string()) return v->get();
    fail(node, what + ": expected a number or an expression in quotes");
  }

  void load_parameters(const toml::table& table, Space* space) const {
    for (const auto& [name, node] : in_file_order(table)) {
      space->parameters.push_back({name, scalar(*node, "parameter '" + name + "'"), where(*node)});
    }
  }

  void load_knobs(const toml::table& table, Space* space) const {
    for (const auto& [name, node] : in_file_order(table)) {
      const toml::table* spec = node->as_table();
      if (!spec) {
        fail(*node, "knob '" + name +
                        "': expected a table such as { range = [1, 8] } or "
                        "{ values = [1, 2, 4] }");
      }
      space->knobs.push_back(load_knob(name, *node, *spec));
    }
  }

  KnobDecl load_knob(const std::string& name, const toml::node& node,
                     const toml::table& spec) const {
    KnobDecl knob;
    knob.name = name;
    knob.where = where(node);
    const std::string what = "knob '" + name + "'";
    static const char* kKeys[] = {"range", "step",   "pow2",   "values", "choice",
                                  "mem",   "layers", "stages", "min",    "max"};
    std::vector<std::string> keys(std::begin(kKeys), std::end(kKeys));
    int kinds = 0;
    for (auto&& [key, value] : spec) {
      const std::string k(key.str());
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
        const std::string near = nearest_name(k, keys);
        fail(value, what + ": unknown key '" + k + "'" +
                        (near.empty() ? " (expected range, step, pow2, values, choice, mem, or "
                                        "layers/stages/min/max for cut points)"
                                      : " (did you mean '" + near + "'?)"));
      }
      if (k == "range" || k == "pow2" || k == "values" || k == "choice" || k == "stages") ++kinds;
    }
    if (kinds != 1) {
      fail(node,
           what + ": give exactly one of range, pow2, values, choice, or stages (cut points)");
    }
    auto pair = [&](const char* key) {
      const toml::node& n = *spec.get(key);
      const toml::array* a = n.as_array();
      if (!a || a->size() != 2) fail(n, what + ": " + key + " must be [lo, hi]");
      knob.lo = expression(*a->get(0), what + ": " + key + " lower bound");
      knob.hi = expression(*a->get(1), what + ": " + key + " upper bound");
    };
    if (spec.contains("range")) {
      knob.kind = KnobKind::kRange;
      pair("range");
      if (auto* step = spec.get("step")) knob.step = expression(*step, what + ": step");
    } else if (spec.contains("pow2")) {
      knob.kind = KnobKind::kPow2;
      pair("pow2");
    } else if (spec.contains("values")) {
      const toml::node& n = *spec.get("values");
      const toml::array* a = n.as_array();
      if (!a || a->empty()) fail(n, what + ": values must be a non-empty array");
      bool all_bool = true;
      for (const auto& item : *a) {
        Value v = scalar(item, what + ": values");
        if (std::holds_alternative<std::string>(v)) {
          fail(item, what + ": values must be numbers; use choice = [...] for strings");
        }
        all_bool = all_bool && std::holds_alternative<bool>(v);
        knob.values.push_back(v);
      }
      if (all_bool) {
        knob.kind = KnobKind::kBool;
        if (knob.values.size() != 2 || knob.values[0] == knob.values[1]) {
          fail(n, what + ": a boolean knob is values = [false, true]");
        }
        knob.values = {Value(false), Value(true)};
      } else {
        knob.kind = KnobKind::kValues;
        for (size_t i = 0; i < knob.values.size(); ++i) {
          if (std::holds_alternative<bool>(knob.values[i])) {
            fail(*a->get(i), what + ": do not mix booleans and numbers in values");
          }
        }
      }
    } else if (spec.contains("choice")) {
      knob.kind = KnobKind::kChoice;
      const toml::node& n = *spec.get("choice");
      const toml::array* a = n.as_array();
      if (!a || a->empty()) fail(n, what + ": choice must be a non-empty array of strings");
      for (const auto& item : *a) {
        if (!item.is_string()) fail(item, what + ": choice items must be strings");
        const std::string& choice = item.as_string()->get();
        // A command gets the value in its arguments and environment, which end at a NUL.
        if (choice.find('\0') != std::string::npos)
          fail(item, what + ": a choice may not contain a NUL character");
        knob.choices.push_back(choice);
      }
    } else {
      knob.kind = KnobKind::kCuts;
      knob.stages = expression(*spec.get("stages"), what + ": stages");
      const toml::node* layers = spec.get("layers");
      if (!layers) fail(node, what + ": cut points need layers = <number of layers>");
      knob.layers = expression(*layers, what + ": layers");
      if (auto* mn = spec.get("min")) knob.min_stage = expression(*mn, what + ": min");
      if (auto* mx = spec.get("max")) knob.max_stage = expression(*mx, what + ": max");
    }
    if (knob.kind != KnobKind::kRange && spec.contains("step")) {
      fail(*spec.get("step"), what + ": step applies to range knobs only");
    }
    if (knob.kind != KnobKind::kCuts) {
      for (const char* key : {"layers", "min", "max"}) {
        if (spec.contains(key)) {
          fail(*spec.get(key), what + ": '" + key + "' applies to cut points (with stages) only");
        }
      }
    }
    if (auto* mem = spec.get("mem")) {
      const auto* s = mem->as_string();
      if (!s || (s->get() != "up" && s->get() != "down")) {
        fail(*mem, what + ": mem must be \"up\" or \"down\"");
      }
      knob.mem = s->get() == "up" ? MemTrend::kUp : MemTrend::kDown;
    }
    return knob;
  }

  void load_constraints(const toml::table& table, Space* space) const {
    for (const auto& [name, node] : in_file_order(table)) {
      if (auto* s = node->as_string()) {
        space->constraints.push_back({name, s->get(), where(*node).shifted(1)});
      } else if (auto* a = node->as_array()) {
        for (size_t i = 0; i < a->size(); ++i) {
          const toml::node& item = *a->get(i);
          if (!item.is_string())
            fail(item, "constraint '" + name + "': expected expressions in quotes");
          space->constraints.push_back({name + "[" + std::to_string(i) + "]",
                                        item.as_string()->get(), where(item).shifted(1)});
        }
      } else {
        fail(*node,
             "constraint '" + name + "': expected an expression in quotes or an array of them");
      }
    }
  }

  void load_options(const toml::table& table, Space* space) const {
    for (auto&& [key, node] : table) {
      if (key.str() != "order")
        fail(node, "[space]: unknown key '" + std::string(key.str()) + "' (expected order)");
      const toml::array* a = node.as_array();
      if (!a) fail(node, "[space] order: expected an array of knob names");
      for (const auto& item : *a) {
        if (!item.is_string()) fail(item, "[space] order: expected knob names in quotes");
        space->order.push_back(item.as_string()->get());
      }
    }
  }

  std::string origin_;
};

}  // namespace

Space parse_space(const std::string& text, const std::string& origin) {
  Space space = Loader(origin).load(text);
  SLAPO_CHECK(space.knobs.size() <= kMaxKnobs, ErrorCode::kInvalidArgument, origin, ": ",
              space.knobs.size(), " knobs; a space may have at most ", kMaxKnobs);
  SLAPO_CHECK(space.constraints.size() <= kMaxConstraints, ErrorCode::kInvalidArgument, origin,
              ": ", space.constraints.size(), " constraints; a space may have at most ",
              kMaxConstraints);
  return space;
}

Space load_space_file(const std::string& path) {
  return parse_space(read_file_capped(path, kMaxSpaceFileBytes, "the space file",
                                      "a space file is a few kilobytes of TOML"),
                     path);
}

}  // namespace slapo::space
