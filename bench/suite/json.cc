#include "hark/bench/suite/json.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace hark::bench {
namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  bool value(Json& out, int depth) {
    skip_space();
    if (depth > 32 || at_ >= text_.size()) return false;
    const char c = text_[at_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      out.kind = Json::Kind::string;
      return string(out.text);
    }
    if (literal("null")) return true;
    if (literal("true") || literal("false")) {
      out.kind = Json::Kind::boolean;
      out.number = text_[at_ - 2] == 'u' ? 1 : 0;  // tr(u)e or fal(s)e.
      return true;
    }
    const char* start = text_.c_str() + at_;
    char* end = nullptr;
    out.number = std::strtod(start, &end);
    if (end == start) return false;
    out.kind = Json::Kind::number;
    at_ += static_cast<size_t>(end - start);
    return true;
  }

  bool finished() {
    skip_space();
    return at_ == text_.size();
  }

 private:
  void skip_space() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\t' || text_[at_] == '\r')) {
      at_++;
    }
  }
  bool literal(const char* word) {
    const std::string w = word;
    if (text_.compare(at_, w.size(), w) != 0) return false;
    at_ += w.size();
    return true;
  }
  bool expect(char c) {
    skip_space();
    if (at_ >= text_.size() || text_[at_] != c) return false;
    at_++;
    return true;
  }
  bool string(std::string& out) {
    if (!expect('"')) return false;
    while (at_ < text_.size() && text_[at_] != '"') {
      char c = text_[at_++];
      if (c == '\\' && at_ < text_.size()) {
        c = text_[at_++];
        if (c == 'n') c = '\n';
        if (c == 'u' && at_ + 4 <= text_.size()) {  // Report escapes control bytes only.
          c = static_cast<char>(std::strtol(text_.substr(at_, 4).c_str(), nullptr, 16));
          at_ += 4;
        }
      }
      out += c;
    }
    return expect('"');
  }
  bool array(Json& out, int depth) {
    out.kind = Json::Kind::array;
    at_++;
    if (expect(']')) return true;
    do {
      out.items.emplace_back();
      if (!value(out.items.back(), depth + 1)) return false;
    } while (expect(','));
    return expect(']');
  }
  bool object(Json& out, int depth) {
    out.kind = Json::Kind::object;
    at_++;
    if (expect('}')) return true;
    do {
      std::string key;
      skip_space();
      if (!string(key) || !expect(':') || !value(out.fields[key], depth + 1)) return false;
    } while (expect(','));
    return expect('}');
  }

  const std::string& text_;
  size_t at_ = 0;
};

}  // namespace

const Json& Json::operator[](const std::string& key) const {
  static const Json null_value;
  const auto found = fields.find(key);
  return found == fields.end() ? null_value : found->second;
}

std::optional<Json> parse_json(const std::string& text) {
  Parser parser(text);
  Json value;
  if (!parser.value(value, 0) || !parser.finished()) return std::nullopt;
  return value;
}

std::optional<Json> read_json_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  std::stringstream text;
  text << file.rdbuf();
  return parse_json(text.str());
}

}  // namespace hark::bench
