// Reading `dtnn-run --metrics` files: one flat JSON object a line, numbers by key. Strings,
// booleans and nulls are read and skipped; nested values are an error (dtnn-run writes none).
#include "tools/plot/Metrics.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace dtnn::plot {

namespace {

class LineParser {
public:
  explicit LineParser(const std::string &s) : s_(s) {}

  // Parses the object; returns "" or what is wrong.
  std::string object(std::map<std::string, double> &out) {
    skip();
    if (!eat('{')) return "expected '{'";
    skip();
    if (eat('}')) return trailing();
    while (true) {
      std::string key;
      if (std::string e = string(key); !e.empty()) return e;
      skip();
      if (!eat(':')) return "expected ':' after \"" + key + "\"";
      skip();
      if (std::string e = value(key, out); !e.empty()) return e;
      skip();
      if (eat('}')) return trailing();
      if (!eat(',')) return "expected ',' or '}'";
      skip();
    }
  }

private:
  std::string trailing() {
    skip();
    return i_ == s_.size() ? "" : "unexpected text after the object";
  }
  std::string value(const std::string &key, std::map<std::string, double> &out) {
    if (i_ < s_.size() && s_[i_] == '"') {
      std::string ignored;
      return string(ignored);
    }
    for (const char *word : {"true", "false", "null"})
      if (s_.compare(i_, std::strlen(word), word) == 0) {
        i_ += std::strlen(word);
        return "";
      }
    const char *begin = s_.c_str() + i_;
    char *end = nullptr;
    errno = 0;
    double v = std::strtod(begin, &end);
    if (end == begin) return "the value of \"" + key + "\" is not a number, string or literal";
    i_ += size_t(end - begin);
    out[key] = v;
    return "";
  }
  std::string string(std::string &out) {
    if (!eat('"')) return "expected a string";
    while (i_ < s_.size() && s_[i_] != '"') {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) ++i_;
      out += s_[i_++];
    }
    if (!eat('"')) return "unterminated string";
    return "";
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  const std::string &s_;
  size_t i_ = 0;
};

} // namespace

std::string readRun(const std::string &path, Run &run) {
  std::ifstream f(path);
  if (!f) return path + ": cannot open: " + std::strerror(errno);
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::map<std::string, double> rec;
    if (std::string e = LineParser(line).object(rec); !e.empty())
      return path + ":" + std::to_string(n) + ": not a metrics line (" + e + ")";
    if (!rec.count("epoch"))
      return path + ":" + std::to_string(n) + ": has no \"epoch\" (is it a dtnn-run --metrics file?)";
    run.epochs.push_back(std::move(rec));
  }
  if (run.epochs.empty()) return path + ": has no epochs";
  return "";
}

} // namespace dtnn::plot
