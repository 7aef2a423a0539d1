// Prints the AST for `dtnnc compile --emit=ast`: one node per line, children
// indented by two spaces, each with its line:col.
#include "frontend/AST.h"

#include "ir/Attributes.h"

namespace dtnn::frontend {

namespace {

class AstPrinter {
public:
  explicit AstPrinter(std::ostream &os) : os_(os) {}

  void file(const FileAst &f) {
    os_ << "file \"" << f.path << "\"\n";
    ++indent_;
    for (const auto &i : f.imports) line(i.loc) << "import \"" << i.path << "\"\n";
    for (const auto &b : f.blocks) block(*b);
    for (const auto &m : f.models) model(*m);
    for (const auto &t : f.trains) train(*t);
    --indent_;
  }

private:
  std::ostream &line(const SourceLoc &l) {
    for (unsigned i = 0; i < indent_; ++i) os_ << "  ";
    os_ << l.line << ':' << l.col << ' ';
    return os_;
  }

  static std::string typeText(const TypeAst &t) {
    std::string s = t.dtype + "[";
    for (size_t i = 0; i < t.dims.size(); ++i)
      s += (i ? "," : "") + (t.dims[i].symbol.empty() ? std::to_string(t.dims[i].size) : t.dims[i].symbol);
    return s + "]";
  }

  void block(const BlockDecl &b) {
    line(b.loc) << "block " << b.name << "\n";
    ++indent_;
    for (const auto &p : b.params) {
      line(p.loc) << "param " << p.name << (p.kind.empty() ? "" : ": " + p.kind) << "\n";
      if (p.defaultValue) nested(*p.defaultValue);
    }
    stmts(b.body);
    --indent_;
  }

  void model(const ModelDecl &m) {
    line(m.loc) << "model " << m.name << "\n";
    ++indent_;
    for (const auto &in : m.inputs) line(in.loc) << "input " << in.name << ": " << typeText(in.type) << "\n";
    for (const auto &r : m.results) line(r.loc) << "result " << typeText(r) << "\n";
    stmts(m.body);
    --indent_;
  }

  void train(const TrainDecl &t) {
    line(t.loc) << "train " << t.model << "\n";
    ++indent_;
    for (const auto &s : t.settings) {
      line(s.loc) << "setting " << s.key << "\n";
      nested(*s.value);
    }
    --indent_;
  }

  void pattern(const Pattern &p, std::string &out) {
    if (!p.name.empty()) {
      out += p.name;
      return;
    }
    out += "(";
    for (size_t i = 0; i < p.items.size(); ++i) {
      if (i) out += ", ";
      pattern(p.items[i], out);
    }
    out += ")";
  }

  void stmts(const StmtList &list) {
    for (const auto &s : list) stmt(*s);
  }

  void stmt(const Stmt &s) {
    static const char *names[] = {"let", "var", "assign", "for", "repeat", "if", "return"};
    std::string target;
    if (s.kind != Stmt::Kind::Repeat && s.kind != Stmt::Kind::If && s.kind != Stmt::Kind::Return)
      pattern(s.target, target);
    line(s.loc) << names[static_cast<int>(s.kind)] << (target.empty() ? "" : " " + target) << "\n";
    ++indent_;
    for (const auto &e : s.exprs) expr(*e);
    if (!s.body.empty() || s.kind == Stmt::Kind::If) {
      line(s.loc) << "then\n";
      nestedStmts(s.body);
    }
    if (!s.elseBody.empty()) {
      line(s.loc) << "else\n";
      nestedStmts(s.elseBody);
    }
    --indent_;
  }

  void nestedStmts(const StmtList &list) {
    ++indent_;
    stmts(list);
    --indent_;
  }

  void nested(const Expr &e) {
    ++indent_;
    expr(e);
    --indent_;
  }

  void expr(const Expr &e) {
    std::ostream &os = line(e.loc);
    switch (e.kind) {
    case Expr::Kind::Int: os << "int " << e.intValue << "\n"; return;
    case Expr::Kind::Float: os << "float " << ir::formatDouble(e.floatValue) << "\n"; return;
    case Expr::Kind::String: os << "string " << ir::attrValueStr(ir::AttrValue(e.text)) << "\n"; return;
    case Expr::Kind::Bool: os << "bool " << (e.boolValue ? "true" : "false") << "\n"; return;
    case Expr::Kind::None: os << "None\n"; return;
    case Expr::Kind::Name: os << "name " << e.text << "\n"; return;
    case Expr::Kind::Call:
      os << "call " << e.text << (e.piped ? " (piped)" : "") << "\n";
      ++indent_;
      for (const Arg &a : e.args) {
        if (!a.name.empty()) {
          line(a.loc) << "arg " << a.name << "\n";
          nested(*a.value);
        } else {
          expr(*a.value);
        }
      }
      --indent_;
      return;
    case Expr::Kind::Unary: os << "unary " << e.text << "\n"; break;
    case Expr::Kind::Binary: os << "binary " << e.text << "\n"; break;
    case Expr::Kind::Index: os << "index\n"; break;
    case Expr::Kind::Tuple: os << "tuple\n"; break;
    case Expr::Kind::List: os << "list\n"; break;
    case Expr::Kind::If: os << "if\n"; break;
    }
    ++indent_;
    for (const auto &k : e.kids) expr(*k);
    --indent_;
  }

  std::ostream &os_;
  unsigned indent_ = 0;
};

} // namespace

void printAst(const FileAst &file, std::ostream &os) { AstPrinter(os).file(file); }

} // namespace dtnn::frontend
