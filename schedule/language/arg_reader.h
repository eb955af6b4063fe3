#pragma once
// Reading the arguments of one line of schedule text; for replay and the primitive table.

#include <cctype>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/error.h"

namespace slapo::schedule {

// The arguments of one recorded primitive, as schedule text writes them
// (schedule/language/replay.h): quoted strings and bare words (numbers, type names). Errors are
// Error(kParse) naming the line.
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
    while (pos_ < text_.size() && text_[pos_] != ',' &&
           !std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
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
    SLAPO_CHECK(ok, ErrorCode::kParse, "schedule line ", line_, ": expected ", what, " in (", text_,
                ")");
  }
  const std::string& text_;
  int line_;
  size_t pos_ = 0;
};

}  // namespace slapo::schedule
