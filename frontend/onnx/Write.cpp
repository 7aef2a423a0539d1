#include "frontend/onnx/Write.h"

#include <functional>
#include <sstream>

namespace dtnn::onnximport {

namespace {

std::string commentOf(const std::vector<std::string> &nodes) {
  std::string s;
  for (const auto &n : nodes) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// Merges a line into the next when the next pipes the line's single-use result.
void chain(std::vector<Line> &lines, const std::map<std::string, int> &uses) {
  std::vector<Line> out;
  for (Line &l : lines) {
    if (!out.empty() && !l.head.empty() && l.head == out.back().var && !out.back().head.empty() &&
        uses.at(l.head) == 1) {
      Line &prev = out.back();
      // One piped call per line, each with its comment.
      prev.var = l.var;
      prev.call += "  # " + commentOf(prev.nodes) + "\n      |> " + l.call;
      prev.nodes = l.nodes;
      for (const auto &u : l.uses)
        if (u != l.head) prev.uses.push_back(u);
      continue;
    }
    out.push_back(std::move(l));
  }
  lines = std::move(out);
}

void countUses(const std::vector<Line> &lines, std::map<std::string, int> &uses) {
  for (const auto &l : lines) {
    uses[l.var];
    for (const auto &u : l.uses) ++uses[u];
  }
}

void writeLines(std::ostream &os, const std::vector<Line> &lines) {
  for (const auto &l : lines)
    os << "  let " << l.var << " = " << (l.head.empty() ? "" : l.head + " |> ") << l.call << "  # "
       << commentOf(l.nodes) << "\n";
}

// The loop header and the name= argument of a repeat: `for i in range(a, b)` with
// name="prefix" + str(i) when the instances are numbered in order, else a list of names.
void writeRepeat(std::ostream &os, const RepeatCall &r, const BlockDef &b,
                 const std::function<std::string(const std::string &)> &fresh) {
  os << "  var " << r.output << " = " << r.input << "\n";
  std::string comment = "  # " + r.from.front() + " ... " + r.from.back();
  std::string callArgs;
  if (r.names.front().empty()) {
    os << "  repeat " << r.names.size() << " {" << comment << "\n";
  } else {
    std::string stem = r.names[0];
    while (!stem.empty() && stem.back() >= '0' && stem.back() <= '9') stem.pop_back();
    bool numbered = stem.size() < r.names[0].size();
    int64_t start = numbered ? std::stoll(r.names[0].substr(stem.size())) : 0;
    for (size_t j = 0; j < r.names.size() && numbered; ++j)
      numbered = r.names[j] == stem + std::to_string(start + int64_t(j));
    std::string var = fresh(numbered ? "i" : "instance");
    if (numbered) {
      os << "  for " << var << " in range(" << (start ? std::to_string(start) + ", " : "")
         << start + int64_t(r.names.size()) << ") {" << comment << "\n";
      callArgs = "(name=\"" + stem + "\" + str(" + var + "))";
    } else {
      os << "  for " << var << " in [";
      for (size_t j = 0; j < r.names.size(); ++j) os << (j ? ", " : "") << "\"" << r.names[j] << "\"";
      os << "] {" << comment << "\n";
      callArgs = "(name=" + var + ")";
    }
  }
  os << "    " << r.output << " = " << r.output << " |> " << b.name << callArgs << "\n  }\n";
}

} // namespace

std::string writeSource(const ModelText &m, Folded folded,
                        const std::function<std::string(const std::string &)> &fresh) {
  std::ostringstream os;
  os << m.header;
  for (BlockDef &b : folded.blocks) {
    std::map<std::string, int> uses;
    countUses(b.lines, uses);
    uses[b.result] += 2;
    chain(b.lines, uses);
    os << "# " << b.from << ", and each repeat of it; its lines name the ONNX nodes under that path.\n";
    os << "block " << b.name << "(" << b.param << ") {\n";
    writeLines(os, b.lines);
    os << "  return " << b.result << "\n}\n\n";
  }
  // The body: lines merged within each run between repeats.
  std::map<std::string, int> uses;
  for (const BodyItem &item : folded.body) {
    if (item.isRepeat) uses[item.repeat.input] += 1, uses[item.repeat.output] += 2;
    else countUses({item.line}, uses);
  }
  for (const auto &r : m.results) uses[r] += 2; // a result is never merged away
  os << m.signature << " {\n";
  std::vector<Line> run;
  auto flush = [&] {
    chain(run, uses);
    writeLines(os, run);
    run.clear();
  };
  for (const BodyItem &item : folded.body) {
    if (!item.isRepeat) {
      run.push_back(item.line);
      continue;
    }
    flush();
    writeRepeat(os, item.repeat, folded.blocks[item.repeat.block], fresh);
  }
  flush();
  os << "  return ";
  for (size_t i = 0; i < m.results.size(); ++i) os << (i ? ", " : "") << m.results[i];
  os << "\n}\n";
  return os.str();
}

} // namespace dtnn::onnximport
