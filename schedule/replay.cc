#include "schedule/replay.h"

#include <cctype>
#include <sstream>

#include "core/error.h"

namespace slapo::schedule {

namespace {

// The arguments of one primitive: quoted strings and bare words (numbers, type names).
class ArgReader {
 public:
  ArgReader(const std::string& text, int line) : text_(text), line_(line) {}

  bool done() {
    skip();
    return pos_ >= text_.size();
  }
  std::string string() {
    skip();
    expect(pos_ < text_.size() && text_[pos_] == '"', "a quoted string");
    std::string out;
    for (++pos_; pos_ < text_.size() && text_[pos_] != '"'; ++pos_) {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) {
        ++pos_;
        out += text_[pos_] == 'n' ? '\n' : text_[pos_];
        continue;
      }
      out += text_[pos_];
    }
    expect(pos_ < text_.size(), "a closing quote");
    ++pos_;
    comma();
    return out;
  }
  std::string word() {
    skip();
    const size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != ',' && !std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    expect(pos_ > start, "an argument");
    std::string out = text_.substr(start, pos_ - start);
    comma();
    return out;
  }
  int64_t integer() {
    const std::string w = word();
    try {
      size_t used = 0;
      const long long v = std::stoll(w, &used);
      expect(used == w.size(), "an integer");
      return v;
    } catch (const std::logic_error&) {
      expect(false, "an integer");
    }
    return 0;
  }

 private:
  void skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  void comma() {
    skip();
    if (pos_ < text_.size() && text_[pos_] == ',') ++pos_;
  }
  void expect(bool ok, const char* what) {
    SLAPO_CHECK(ok, ErrorCode::kParse, "schedule line ", line_, ": expected ", what, " in (", text_, ")");
  }
  const std::string& text_;
  int line_;
  size_t pos_ = 0;
};

}  // namespace

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
    SLAPO_CHECK(line.rfind("sch[", 0) == 0 && line.back() == ')', ErrorCode::kParse, "schedule line ", number,
                ": expected sch[\"path\"].primitive(args), found: ", line);
    const std::string after = line.substr(4);
    ArgReader path_reader(after, number);
    const std::string path = path_reader.string();
    // Skip past the closing quote of the path: the first `"]` after it.
    const size_t close = line.find("\"].", 4);
    SLAPO_CHECK(close != std::string::npos, ErrorCode::kParse, "schedule line ", number, ": expected \"]. after the path");
    const size_t open = line.find('(', close);
    SLAPO_CHECK(open != std::string::npos, ErrorCode::kParse, "schedule line ", number, ": expected ( after the primitive");
    AppliedPrimitive step;
    step.path = path;
    step.primitive = line.substr(close + 3, open - close - 3);
    step.args = line.substr(open + 1, line.size() - open - 2);
    steps.push_back(std::move(step));
  }
  return steps;
}

void replay(Schedule& sch, const std::vector<AppliedPrimitive>& steps, const ReplaceFactory& factory) {
  int index = 0;
  for (const AppliedPrimitive& step : steps) {
    ++index;
    Schedule& target = sch[step.path];
    ArgReader args(step.args, index);
    if (step.primitive == "checkpoint") {
      target.checkpoint();
    } else if (step.primitive == "fuse") {
      const std::string chain = args.string();
      target.fuse(chain, args.done() ? "native" : args.string());
    } else if (step.primitive == "fuse_match" || step.primitive == "checkpoint_match") {
      // The pattern and which occurrence, found again in each graph as it is traced.
      const std::string pattern = args.string();
      const int64_t occurrence = args.integer();
      SLAPO_CHECK(occurrence >= 0, ErrorCode::kParse, "replay step ", index, ": occurrence ", occurrence, " < 0");
      const GraphMatch match = target.deferred_match(pattern, static_cast<size_t>(occurrence));
      if (step.primitive == "fuse_match") target.fuse(match, args.done() ? "native" : args.string());
      else target.checkpoint(match);
    } else if (step.primitive == "replace_match") {
      SLAPO_FAIL(ErrorCode::kInvalidArgument, "replay step ", index, " (", step.to_string().substr(0, 60),
                 "...): a subgraph replaced by a C++ module cannot be replayed from text; apply it in code");
    } else if (step.primitive == "trace") {
      target.trace();  // traced at its first call
    } else if (step.primitive == "decompose") {
      target.decompose();
    } else if (step.primitive == "cut_pipeline_stage") {
      target.cut_pipeline_stage();
    } else if (step.primitive == "fork_rng") {
      if (args.done()) target.fork_rng();
      else target.fork_rng(static_cast<uint64_t>(args.integer()));
    } else if (step.primitive == "annotate") {
      const std::string name = args.string(), key = args.string(), value = args.string();
      target.annotate(name, key, value);
    } else if (step.primitive == "shard") {
      const std::string name = args.string();
      target.shard(name, args.integer());
    } else if (step.primitive == "sync") {
      const std::string mode = args.string(), op = args.string();
      if (args.done()) target.sync(mode, op);
      else target.sync(mode, op, args.integer());
    } else if (step.primitive == "replace") {
      SLAPO_CHECK(static_cast<bool>(factory), ErrorCode::kInvalidArgument, "replay step ", index, " (",
                  step.to_string(), "): replacing needs a module factory");
      factory(target, args.word());
    } else {
      SLAPO_FAIL(ErrorCode::kParse, "replay step ", index, ": unknown primitive '", step.primitive, "'");
    }
  }
}

}  // namespace slapo::schedule
