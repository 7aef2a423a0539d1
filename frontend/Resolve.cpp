// Algorithm: for each block and model, collect every name its body binds
// anywhere (parameters or inputs, let/var targets, for-loop patterns); this
// is flow-insensitive, since the elaborator checks use-before-definition.
// Then walk every expression: a name or callee must be in that set, or be a
// block, an op, or a builtin function.
#include "frontend/Resolve.h"
#include "frontend/PyTorchNames.h"

#include "ir/OpTable.h"

#include <algorithm>
#include <set>

namespace dtnn::frontend {

const std::vector<std::string> &builtinFunctionNames() {
  static const std::vector<std::string> names = {
      "abs",   "adaptive_avgpool", "ceil", "channels", "chunk", "dim",   "erf",  "exp",
      "float", "floor",            "identity", "int",  "len",   "log",   "max",  "mean",
      "min",   "param", "partial", "pow",    "range", "rank",    "round", "rsqrt", "sqrt", "str", "sum",
      "var",   "zip",   "enumerate"};
  return names;
}

const std::vector<std::string> &blockParamKinds() {
  static const std::vector<std::string> kinds = {"int",  "float", "bool",  "string", "tensor",
                                                 "list", "tuple", "layer", "any"};
  return kinds;
}

namespace {

class Resolver {
public:
  Resolver(const Program &program, DiagnosticEngine &diags) : program_(program), diags_(diags) {
    for (const auto &n : ir::OpTable::get().names()) globals_.insert(n);
    for (const auto &n : builtinFunctionNames()) globals_.insert(n);
  }

  bool run() {
    for (const auto &file : program_.files) {
      file_ = &file->path;
      for (const auto &b : file->blocks) {
        locals_.clear();
        for (const auto &p : b->params) {
          if (!locals_.insert(p.name).second) {
            diags_.error(p.loc, "block '" + b->name + "' has two parameters named '" + p.name + "'");
            ok_ = false;
          }
          const auto &kinds = blockParamKinds();
          if (!p.kind.empty() && std::find(kinds.begin(), kinds.end(), p.kind) == kinds.end()) {
            std::string hint = closestMatch(p.kind, kinds);
            diags_.error(p.loc, "unknown parameter kind '" + p.kind + "'" +
                                    (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
            ok_ = false;
          }
        }
        collect(b->body);
        for (const auto &p : b->params)
          if (p.defaultValue) expr(*p.defaultValue);
        stmts(b->body);
      }
      for (const auto &m : file->models) {
        locals_.clear();
        for (const auto &in : m->inputs) locals_.insert(in.name);
        collect(m->body);
        stmts(m->body);
      }
    }
    return ok_;
  }

private:
  void bind(const Pattern &p) {
    if (!p.name.empty()) locals_.insert(p.name);
    for (const auto &item : p.items) bind(item);
  }

  void collect(const StmtList &list) {
    for (const auto &s : list) {
      if (!s) continue;
      if (s->kind == Stmt::Kind::Let || s->kind == Stmt::Kind::Var || s->kind == Stmt::Kind::For)
        bind(s->target);
      collect(s->body);
      collect(s->elseBody);
    }
  }

  void stmts(const StmtList &list) {
    for (const auto &s : list) {
      if (!s) continue;
      for (const auto &e : s->exprs) expr(*e);
      stmts(s->body);
      stmts(s->elseBody);
    }
  }

  void check(const std::string &name, const SourceLoc &loc, bool called) {
    if (locals_.count(name) || globals_.count(name) || program_.scopes.find(*file_, name)) return;
    std::vector<std::string> candidates(globals_.begin(), globals_.end());
    for (const auto &n : program_.scopes.names(*file_)) candidates.push_back(n);
    candidates.insert(candidates.end(), locals_.begin(), locals_.end());
    diags_.error(loc, std::string(called ? "unknown layer or block '" : "undefined name '") + name +
                          "'" + didYouMean(name, candidates));
    ok_ = false;
  }

  void expr(const Expr &e) {
    if (e.kind == Expr::Kind::Name) check(e.text, e.loc, false);
    if (e.kind == Expr::Kind::Call) check(e.text, e.loc, true);
    for (const auto &k : e.kids) expr(*k);
    for (const auto &a : e.args) expr(*a.value);
  }

  const Program &program_;
  DiagnosticEngine &diags_;
  std::set<std::string> globals_; // ops and builtins
  const std::string *file_ = nullptr; // the path of the file whose names are checked
  std::set<std::string> locals_;
  bool ok_ = true;
};

} // namespace

bool resolveNames(const Program &program, DiagnosticEngine &diags) {
  return Resolver(program, diags).run();
}

} // namespace dtnn::frontend
