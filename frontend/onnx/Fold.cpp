#include "frontend/onnx/Fold.h"

#include <algorithm>
#include <optional>

namespace dtnn::onnximport {

namespace {

// The source text of a line, split so that its value names and layer names can be rewritten.
struct Token {
  enum Kind { Ident, String, Other } kind;
  std::string text;
};

std::vector<Token> tokenize(const std::string &s) {
  std::vector<Token> out;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    auto isIdent = [](char ch, bool first) {
      return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || (!first && ch >= '0' && ch <= '9');
    };
    size_t j = i + 1;
    if (isIdent(c, true)) {
      while (j < s.size() && isIdent(s[j], false)) ++j;
      out.push_back({Token::Ident, s.substr(i, j - i)});
    } else if (c == '"') {
      while (j < s.size() && s[j] != '"') j += s[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, s.size());
      out.push_back({Token::String, s.substr(i, j - i)});
    } else {
      if (c >= '0' && c <= '9')
        while (j < s.size() && (isIdent(s[j], false) || s[j] == '.')) ++j; // a number, whole
      out.push_back({Token::Other, s.substr(i, j - i)});
    }
    i = j;
  }
  return out;
}

// Rewrites the value names (identifiers that are vars, not keyword arguments) with `var` and
// the strings given as name= with `name`.
template <typename VarFn, typename NameFn>
std::string rewrite(const std::string &text, const std::set<std::string> &vars, VarFn var, NameFn name) {
  std::vector<Token> t = tokenize(text);
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    bool keyword = i + 1 < t.size() && t[i + 1].text == "=" && !(i + 2 < t.size() && t[i + 2].text == "=");
    if (t[i].kind == Token::Ident && !keyword && vars.count(t[i].text)) out += var(t[i].text);
    else if (t[i].kind == Token::String && i >= 2 && t[i - 1].text == "=" && t[i - 2].text == "name")
      out += "\"" + name(t[i].text.substr(1, t[i].text.size() - 2)) + "\"";
    else out += t[i].text;
  }
  return out;
}

// The layer and param names a line gives (its name= strings).
std::vector<std::string> namesOf(const std::string &text) {
  std::vector<Token> t = tokenize(text);
  std::vector<std::string> out;
  for (size_t i = 2; i < t.size(); ++i)
    if (t[i].kind == Token::String && t[i - 1].text == "=" && t[i - 2].text == "name")
      out.push_back(t[i].text.substr(1, t[i].text.size() - 2));
  return out;
}

std::string commonPrefix(const std::vector<std::string> &v) {
  if (v.empty()) return "";
  std::string p = v[0];
  for (const auto &s : v) {
    size_t n = 0;
    while (n < p.size() && n < s.size() && p[n] == s[n]) ++n;
    p.resize(n);
  }
  return p;
}

struct Instance {
  std::string ext;                 // the value it reads from before it
  std::vector<std::string> canon;  // its lines, names abstracted
  std::string prefix;              // its name ("" when it names no layer)
  std::vector<std::string> rels;   // its layers' names less the prefix
  std::vector<std::string> names;  // its layers' names
  std::string from;                // its ONNX node path
};

class Folder {
public:
  Folder(const std::vector<Line> &lines, const std::set<std::string> &results) : L(lines), results_(results) {
    users_.resize(L.size());
    for (size_t i = 0; i < L.size(); ++i) def_[L[i].var] = i, vars_.insert(L[i].var);
    for (size_t i = 0; i < L.size(); ++i)
      for (const auto &u : L[i].uses) {
        vars_.insert(u);
        if (auto it = def_.find(u); it != def_.end()) users_[it->second].push_back(i);
      }
    for (const Line &l : L)
      sig_.push_back(rewrite(text(l), vars_, [](const std::string &) { return std::string("v"); },
                             [](const std::string &) { return std::string("$n"); }));
  }

  static std::string text(const Line &l) { return l.head + "|" + l.call; }

  // Lines [a, a + m) as one instance, if they read one earlier value and only the last is read
  // after them.
  std::optional<Instance> instance(size_t a, size_t m) const {
    Instance in;
    std::set<std::string> ext;
    for (size_t t = a; t < a + m; ++t)
      for (const auto &u : L[t].uses) {
        auto d = def_.find(u);
        if (d == def_.end() || d->second < a) ext.insert(u);
      }
    if (ext.size() != 1) return std::nullopt;
    in.ext = *ext.begin();
    for (size_t t = a; t < a + m; ++t) {
      bool outside = results_.count(L[t].var) > 0;
      for (size_t u : users_[t]) outside = outside || u >= a + m;
      if (outside && t != a + m - 1) return std::nullopt;
    }
    for (size_t t = a; t < a + m; ++t) {
      in.canon.push_back(rewrite(
          text(L[t]), vars_,
          [&](const std::string &v) {
            auto d = def_.find(v);
            if (d != def_.end() && d->second >= a && d->second < a + m) return "@" + std::to_string(d->second - a);
            return v == in.ext ? std::string("$in") : "?" + v;
          },
          [](const std::string &) { return std::string("$n"); }));
      for (auto &n : namesOf(text(L[t]))) in.names.push_back(n);
    }
    if (!in.names.empty()) {
      std::string p = in.names.size() == 1 ? in.names[0] : commonPrefix(in.names);
      size_t cut = p.rfind('_', in.names.size() == 1 ? std::string::npos : p.size());
      if (in.names.size() > 1 && !p.empty() && p.back() == '_') cut = p.size() - 1;
      if (cut == std::string::npos || cut == 0) return std::nullopt;
      in.prefix = p.substr(0, cut);
      for (const auto &n : in.names) {
        if (n.size() <= cut + 1) return std::nullopt;
        in.rels.push_back(n.substr(cut + 1));
      }
    }
    std::vector<std::string> paths;
    for (size_t t = a; t < a + m; ++t)
      for (const auto &n : L[t].nodes)
        if (!n.empty() && n[0] == '/') paths.push_back(n);
    std::string p = commonPrefix(paths);
    in.from = p.substr(0, p.empty() ? 0 : p.rfind('/'));
    return in;
  }

  // The instances of a repeat of m lines at a, if it repeats at least twice.
  std::vector<Instance> repeatAt(size_t a, size_t m) const {
    std::vector<Instance> out;
    for (size_t s = a; s + m <= L.size(); s += m) {
      if (!out.empty() && (sig_[s] != sig_[a] || sig_[s + m - 1] != sig_[a + m - 1])) break;
      auto in = instance(s, m);
      if (!in) break;
      if (!out.empty() && (in->canon != out[0].canon || in->rels != out[0].rels || in->ext != L[s - 1].var ||
                           in->prefix.empty() != out[0].prefix.empty()))
        break;
      out.push_back(std::move(*in));
    }
    if (out.size() < 2) out.clear();
    return out;
  }

  const std::vector<Line> &L;
  const std::set<std::string> &results_;
  std::map<std::string, size_t> def_;
  std::vector<std::vector<size_t>> users_;
  std::set<std::string> vars_;
  std::vector<std::string> sig_;
};

// The name of the block: the instances' names less their differing ends.
std::string blockName(const std::vector<Instance> &ins, std::set<std::string> &taken) {
  std::vector<std::string> prefixes;
  for (const auto &in : ins) prefixes.push_back(in.prefix);
  std::string base = commonPrefix(prefixes);
  // Less a number the instances' names end differently in ("layer_1" of "layer_10", "layer_11").
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!base.empty() && digit(base.back()) && base.size() < prefixes[0].size() && digit(prefixes[0][base.size()]))
    while (!base.empty() && digit(base.back())) base.pop_back();
  while (!base.empty() && base.back() == '_') base.pop_back();
  base = identifier(base.empty() ? "repeated" : base, "repeated");
  std::string name = base;
  for (int n = 1; taken.count(name); ++n) name = base + "_" + std::to_string(n);
  taken.insert(name);
  return name;
}

std::string stripPath(std::string s, const std::string &path) {
  if (path.empty()) return s;
  std::string p = path + "/";
  for (size_t at; (at = s.find(p)) != std::string::npos;) s.erase(at, p.size());
  return s;
}

} // namespace

Folded foldRepeats(const std::vector<Line> &lines, const std::set<std::string> &results,
                   const std::set<std::string> &reserved) {
  Folder f(lines, results);
  Folded out;
  std::set<std::string> taken = reserved;
  taken.insert(f.vars_.begin(), f.vars_.end());
  size_t n = lines.size();
  for (size_t i = 0; i < n;) {
    std::vector<Instance> best;
    size_t bestM = 0;
    for (size_t m = 2; i + 2 * m <= n; ++m) {
      if (f.sig_[i] != f.sig_[i + m] || f.sig_[i + m - 1] != f.sig_[i + 2 * m - 1]) continue;
      auto ins = f.repeatAt(i, m);
      // Worth a block: the copies it saves outweigh the block's own lines and the loop's.
      if (!ins.empty() && (ins.size() - 1) * m >= 10 && ins.size() * m > best.size() * bestM)
        best = std::move(ins), bestM = m;
    }
    // Of the alignments of the same repeat, the one whose instances sit deepest in the
    // exporter's module paths (a bottleneck from its first conv to its last relu, not from the
    // previous one's relu).
    size_t shift = 0;
    for (size_t d = 1; !best.empty() && d < bestM; ++d) {
      auto ins = f.repeatAt(i + d, bestM);
      if (ins.size() >= best.size() && ins[0].from.size() > best[0].from.size()) best = std::move(ins), shift = d;
    }
    if (best.empty() || shift > 0) { // the lines before the better alignment go first
      out.body.push_back({false, lines[i], {}});
      ++i;
      continue;
    }

    BlockDef b;
    b.name = blockName(best, taken);
    const Instance &first = best[0];
    std::set<std::string> bodyVars;
    for (size_t t = i; t < i + bestM; ++t) bodyVars.insert(lines[t].var);
    b.param = bodyVars.count("x") ? first.ext : "x";
    std::map<std::string, std::string> rel;
    for (size_t k = 0; k < first.names.size(); ++k) rel[first.names[k]] = first.rels[k];
    for (size_t t = i; t < i + bestM; ++t) {
      Line l = lines[t];
      auto fix = [&](const std::string &s) {
        return rewrite(
            s, f.vars_, [&](const std::string &v) { return v == first.ext ? b.param : v; },
            [&](const std::string &nm) { return rel.count(nm) ? rel[nm] : nm; });
      };
      l.head = fix(l.head);
      l.call = fix(l.call);
      for (auto &u : l.uses)
        if (u == first.ext) u = b.param;
      for (auto &nd : l.nodes) nd = stripPath(nd, first.from);
      b.lines.push_back(std::move(l));
    }
    b.result = lines[i + bestM - 1].var;
    b.from = first.from;
    auto firstNode = [&](size_t t) { return lines[t].nodes.empty() ? std::string() : lines[t].nodes.front(); };
    auto lastNode = [&](size_t t) { return lines[t].nodes.empty() ? std::string() : lines[t].nodes.back(); };
    if (b.from.empty()) b.from = firstNode(i) + " ... " + lastNode(i + bestM - 1);
    RepeatCall r;
    r.block = out.blocks.size();
    r.input = first.ext;
    r.output = lines[i + best.size() * bestM - 1].var;
    for (size_t j = 0; j < best.size(); ++j) {
      const Instance &in = best[j];
      r.names.push_back(in.prefix);
      r.from.push_back(in.from.empty() ? (j == 0 ? firstNode(i) : lastNode(i + (j + 1) * bestM - 1)) : in.from);
      for (size_t k = 0; k < in.names.size(); ++k) out.renamed[in.names[k]] = in.prefix + "." + in.rels[k];
    }
    out.blocks.push_back(std::move(b));
    out.body.push_back({true, {}, std::move(r)});
    i += best.size() * bestM;
  }
  return out;
}

} // namespace dtnn::onnximport
