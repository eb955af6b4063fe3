#include "core/config.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace slapo {

namespace {

nlohmann::ordered_json value_to_json(const Value& value) {
  struct Visitor {
    nlohmann::ordered_json operator()(bool b) const { return b; }
    nlohmann::ordered_json operator()(int64_t i) const { return i; }
    nlohmann::ordered_json operator()(double d) const { return d; }
    nlohmann::ordered_json operator()(const std::string& s) const { return s; }
    nlohmann::ordered_json operator()(const IntList& list) const { return list; }
  };
  return std::visit(Visitor{}, value);
}

Value value_from_json(const nlohmann::json& j, const std::string& key, const std::string& origin) {
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number_float()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_array()) {
    IntList list;
    for (const auto& item : j) {
      SLAPO_CHECK(item.is_number_integer(), ErrorCode::kParse, origin, ": knob '", key,
                  "': arrays may hold integers only (cut points), found ", item.dump());
      list.push_back(item.get<int64_t>());
    }
    return list;
  }
  SLAPO_FAIL(ErrorCode::kParse, origin, ": knob '", key,
             "': expected a number, string, boolean or integer array, found ", j.dump());
}

}  // namespace

void Config::set(const std::string& name, Value value) {
  for (auto& entry : entries_) {
    if (entry.first == name) {
      entry.second = std::move(value);
      return;
    }
  }
  entries_.emplace_back(name, std::move(value));
}

const Value* Config::find(const std::string& name) const {
  for (const auto& entry : entries_) {
    if (entry.first == name) return &entry.second;
  }
  return nullptr;
}

const Value& Config::at(const std::string& name) const {
  const Value* value = find(name);
  SLAPO_CHECK(value != nullptr, ErrorCode::kNotFound, "configuration has no knob '", name, "'");
  return *value;
}

std::string Config::canonical_json() const {
  std::vector<const std::pair<std::string, Value>*> sorted;
  for (const auto& entry : entries_) sorted.push_back(&entry);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto* entry : sorted) j[entry->first] = value_to_json(entry->second);
  return j.dump();
}

std::string Config::hash() const { return stable_hash(canonical_json()); }

std::string Config::to_json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, value] : entries_) j[name] = value_to_json(value);
  return j.dump();
}

std::string Config::to_string() const {
  std::string out;
  for (const auto& [name, value] : entries_) {
    if (!out.empty()) out += ' ';
    out += name + "=" + to_plain_string(value);
  }
  return out;
}

Config Config::from_json(const std::string& text, const std::string& origin) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number past a double (1e616): found by config_fuzz.
    SLAPO_FAIL(ErrorCode::kParse, origin, ": not valid JSON: ", e.what());
  }
  SLAPO_CHECK(j.is_object(), ErrorCode::kParse, origin, ": expected a JSON object of knob values");
  Config config;
  for (auto it = j.begin(); it != j.end(); ++it) {
    config.set(it.key(), value_from_json(it.value(), it.key(), origin));
  }
  return config;
}

std::string stable_hash(const std::string& bytes) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace slapo
