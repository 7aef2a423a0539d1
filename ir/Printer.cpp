// The textual IR printer. The output is a pure function of the module: op
// results are numbered in op order, attributes follow the op table's order,
// and nothing depends on pointer values.
#include "ir/Printer.h"

#include <cstdio>
#include <map>
#include <sstream>

namespace dtnn::ir {

namespace {

// Quotes `s` as the parser reads it back: quotes and backslashes escaped, a
// control character (a newline in a file name) as \n, \r or \xHH, so that
// the text stays one line.
std::string quoted(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if ((u < 0x20 && c != '\t') || u == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", u);
      out += hex;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// True if `s` can be printed bare, as [A-Za-z_][A-Za-z0-9_.]*.
bool isBareName(const std::string &s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (!alpha && (i == 0 || (!digit && c != '.'))) return false;
  }
  return true;
}

std::string sourceLocStr(const SourceLoc &l) {
  return quoted(l.file) + ":" + std::to_string(l.line) + ":" + std::to_string(l.col);
}

// Prints one graph, or the body of an op's region at an indentation of its
// own; result values are numbered from zero in op order, in each body afresh
// (a body sees no value of the graph around it).
class GraphPrinter {
public:
  GraphPrinter(const Graph &g, std::ostream &os, const PrintOptions &opts, std::string indent = "  ")
      : g_(g), os_(os), opts_(opts), indent_(std::move(indent)) {}

  void print() {
    os_ << "graph @" << g_.name() << "(";
    for (size_t i = 0; i < g_.inputs().size(); ++i) {
      const Value *in = g_.inputs()[i];
      os_ << (i ? ", " : "") << "%" << in->name() << ": " << in->type().str();
    }
    os_ << ") -> ";
    const auto &outs = g_.outputs();
    if (outs.size() == 1) {
      os_ << typeStr(outs[0]);
    } else {
      os_ << "(";
      for (size_t i = 0; i < outs.size(); ++i) os_ << (i ? ", " : "") << typeStr(outs[i]);
      os_ << ")";
    }
    os_ << " {\n";
    for (const auto &op : g_.ops()) printOp(*op);
    os_ << indent_ << "return";
    for (size_t i = 0; i < outs.size(); ++i) os_ << (i ? ", " : " ") << ref(outs[i]);
    os_ << "\n}\n";
  }

  // The body of a region, after its op's line: "(%x0: T, ...)", the ops,
  // "yield ...", each a line indented one step more than the op, then "}".
  void printBody(const std::string &opIndent) {
    os_ << indent_ << "(";
    for (size_t i = 0; i < g_.inputs().size(); ++i) {
      const Value *in = g_.inputs()[i];
      os_ << (i ? ", " : "") << "%" << in->name() << ": " << in->type().str();
    }
    os_ << ")\n";
    for (const auto &op : g_.ops()) printOp(*op);
    os_ << indent_ << "yield";
    for (size_t i = 0; i < g_.outputs().size(); ++i)
      os_ << (i ? ", " : " ") << ref(g_.outputs()[i]);
    os_ << "\n" << opIndent << "}";
  }

private:
  static std::string typeStr(const Value *v) { return v ? v->type().str() : "<null>"; }

  // The text that refers to `v` inside this graph.
  std::string ref(const Value *v) const {
    if (!v) return "%<null>";
    switch (v->kind()) {
    case Value::Kind::Input: return "%" + v->name();
    case Value::Kind::Param: return "@" + (v->param() ? v->param()->name : v->name());
    case Value::Kind::Result: {
      auto it = numbers_.find(v);
      if (it == numbers_.end()) return "%<undefined>";
      return "%" + std::to_string(it->second);
    }
    }
    return "%<invalid>";
  }

  void printOp(const Op &op) {
    os_ << indent_;
    const auto &results = op.results();
    for (size_t i = 0; i < results.size(); ++i) {
      numbers_[results[i]] = next_++;
      os_ << (i ? ", " : "") << ref(results[i]);
    }
    if (!results.empty()) os_ << " = ";
    os_ << op.name();
    for (size_t i = 0; i < op.operands().size(); ++i)
      os_ << (i ? ", " : " ") << ref(op.operands()[i]);
    printAttrs(op);
    for (size_t i = 0; i < results.size(); ++i) os_ << (i ? ", " : " : ") << typeStr(results[i]);
    if (opts_.locations && op.loc().known()) os_ << " " << locationStr(op.loc());
    if (op.body()) {
      os_ << " {\n";
      GraphPrinter(*op.body(), os_, opts_, indent_ + "  ").printBody(indent_);
    }
    os_ << "\n";
  }

  // Declared attributes in declaration order unless equal to their default,
  // then undeclared ones (which the verifier rejects) in map order.
  void printAttrs(const Op &op) {
    std::vector<std::string> parts;
    const OpDef &def = op.def();
    for (const AttrSpec &spec : def.attrs) {
      const AttrValue *v = op.attrs().find(spec.name);
      if (!v || (spec.defaultValue && *spec.defaultValue == *v)) continue;
      parts.push_back(spec.name + "=" + attrValueStr(*v));
    }
    for (const auto &[name, v] : op.attrs().entries())
      if (!def.findAttr(name)) parts.push_back(name + "=" + attrValueStr(v));
    if (parts.empty()) return;
    os_ << " {";
    for (size_t i = 0; i < parts.size(); ++i) os_ << (i ? ", " : "") << parts[i];
    os_ << "}";
  }

  const Graph &g_;
  std::ostream &os_;
  const PrintOptions &opts_;
  std::string indent_;
  std::map<const Value *, unsigned> numbers_;
  unsigned next_ = 0;
};

} // namespace

std::string locationStr(const Location &l) {
  if (!l.known()) return "";
  if (l.locs.size() == 1) return "loc(" + sourceLocStr(l.locs[0]) + ")";
  std::string s = "loc([";
  for (size_t i = 0; i < l.locs.size(); ++i) s += (i ? ", " : "") + sourceLocStr(l.locs[i]);
  return s + "])";
}

void printModule(const Module &m, std::ostream &os, const PrintOptions &opts) {
  if (!m.trainConfig().empty()) {
    os << "train {";
    bool firstEntry = true;
    for (const auto &[name, v] : m.trainConfig().entries()) {
      os << (firstEntry ? "" : ", ") << name << "=" << attrValueStr(v);
      firstEntry = false;
    }
    os << "}\n";
  }
  for (const auto &p : m.params()) {
    os << (p->trainable ? "param @" : "buffer @") << p->name << " : " << p->type.str()
       << " init=" << (isBareName(p->init) ? p->init : quoted(p->init));
    if (opts.locations && p->loc.known()) os << " " << locationStr(p->loc);
    os << "\n";
  }
  bool first = m.params().empty();
  for (const auto &g : m.graphs()) {
    if (!first) os << "\n";
    first = false;
    GraphPrinter(*g, os, opts).print();
  }
}

std::string printModule(const Module &m) {
  std::ostringstream os;
  printModule(m, os);
  return os.str();
}

} // namespace dtnn::ir
