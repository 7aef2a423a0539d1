// Converts the ANTLR parse tree into the AST. Each build function names the
// grammar rule it implements. Recursion depth is bounded so that long
// operator chains cannot exhaust the stack.
#include "frontend/Parse.h"

#include "DtnnParser.h"

#include <charconv>
#include <cstdlib>

namespace dtnn::frontend {

using grammar::DtnnParser;
using P = DtnnParser;

namespace {

class AstBuilder {
public:
  AstBuilder(const std::string &file, DiagnosticEngine &diags) : file_(file), diags_(diags) {}

  std::unique_ptr<FileAst> build(P::FileContext *ctx) {
    auto out = std::make_unique<FileAst>();
    out->path = file_;
    for (P::DeclContext *d : ctx->decl()) {
      if (auto *i = d->importDecl())
        out->imports.push_back({unquote(i->STRING()->getSymbol()), loc(i->getStart())});
      else if (auto *b = d->blockDecl())
        out->blocks.push_back(block(b));
      else if (auto *m = d->modelDecl())
        out->models.push_back(model(m));
      else if (auto *t = d->trainDecl())
        out->trains.push_back(train(t));
    }
    if (failed_) return nullptr;
    return out;
  }

private:
  SourceLoc loc(const antlr4::Token *t) const {
    return {file_, static_cast<uint32_t>(t->getLine()),
            static_cast<uint32_t>(t->getCharPositionInLine() + 1)};
  }
  SourceLoc loc(antlr4::tree::TerminalNode *n) const { return loc(n->getSymbol()); }

  void error(SourceLoc l, std::string msg) {
    diags_.error(std::move(l), std::move(msg));
    failed_ = true;
  }

  // Decodes the escapes of a STRING token: \" \\ \n \t.
  std::string unquote(const antlr4::Token *t) {
    std::string raw = t->getText();
    std::string out;
    for (size_t i = 1; i + 1 < raw.size(); ++i) {
      if (raw[i] != '\\') {
        out += raw[i];
        continue;
      }
      char c = raw[++i];
      if (c == 'n')
        out += '\n';
      else if (c == 't')
        out += '\t';
      else if (c == '"' || c == '\\')
        out += c;
      else
        error(loc(t), std::string("unknown escape sequence '\\") + c + "'");
    }
    return out;
  }

  // blockDecl : BLOCK name=ID '(' paramList? ')' body
  std::unique_ptr<BlockDecl> block(P::BlockDeclContext *ctx) {
    auto b = std::make_unique<BlockDecl>();
    b->name = ctx->name->getText();
    b->loc = loc(ctx->name);
    if (ctx->paramList())
      for (P::ParamContext *p : ctx->paramList()->param()) {
        BlockParam bp;
        bp.name = p->ident()->getText();
        bp.loc = loc(p->ident()->getStart());
        if (p->kind) bp.kind = p->kind->getText();
        if (p->expr()) bp.defaultValue = expr(p->expr());
        b->params.push_back(std::move(bp));
      }
    b->body = body(ctx->body());
    return b;
  }

  // modelDecl : MODEL name=ID '(' inputList? ')' ARROW resultTypes body
  std::unique_ptr<ModelDecl> model(P::ModelDeclContext *ctx) {
    auto m = std::make_unique<ModelDecl>();
    m->name = ctx->name->getText();
    m->loc = loc(ctx->name);
    if (ctx->inputList())
      for (P::InputContext *in : ctx->inputList()->input())
        m->inputs.push_back({in->ident()->getText(), loc(in->ident()->getStart()),
                             type(in->tensorType())});
    for (P::TensorTypeContext *t : ctx->resultTypes()->tensorType()) m->results.push_back(type(t));
    m->body = body(ctx->body());
    return m;
  }

  // tensorType : dtype=ID '[' (dim (',' dim)*)? ']'
  TypeAst type(P::TensorTypeContext *ctx) {
    TypeAst t;
    t.dtype = ctx->dtype->getText();
    t.loc = loc(ctx->dtype);
    for (P::DimContext *d : ctx->dim()) {
      DimAst dim;
      dim.loc = loc(d->getStart());
      if (d->ID())
        dim.symbol = d->ID()->getText();
      else
        dim.size = integer(d->INT()->getSymbol());
      t.dims.push_back(std::move(dim));
    }
    return t;
  }

  // trainDecl : TRAIN name=ID '{' setting* '}'
  std::unique_ptr<TrainDecl> train(P::TrainDeclContext *ctx) {
    auto t = std::make_unique<TrainDecl>();
    t->model = ctx->name->getText();
    t->loc = loc(ctx->name);
    for (P::SettingContext *s : ctx->setting())
      t->settings.push_back({s->ID()->getText(), loc(s->ID()), expr(s->expr())});
    return t;
  }

  // body : '{' stmt* '}'
  StmtList body(P::BodyContext *ctx) {
    StmtList out;
    for (P::StmtContext *s : ctx->stmt())
      if (auto st = stmt(s)) out.push_back(std::move(st));
    return out;
  }

  std::unique_ptr<Stmt> stmt(P::StmtContext *ctx) {
    SourceLoc l = loc(ctx->getStart());
    if (auto *s = dynamic_cast<P::LetStmtContext *>(ctx)) {
      auto st = std::make_unique<Stmt>(Stmt::Kind::Let, l);
      st->target = pattern(s->pattern());
      st->exprs.push_back(expr(s->expr()));
      return st;
    }
    if (auto *s = dynamic_cast<P::VarStmtContext *>(ctx)) {
      auto st = std::make_unique<Stmt>(Stmt::Kind::Var, l);
      st->target = {s->ident()->getText(), loc(s->ident()->getStart()), {}};
      st->exprs.push_back(expr(s->expr()));
      return st;
    }
    if (auto *s = dynamic_cast<P::AssignStmtContext *>(ctx)) {
      auto st = std::make_unique<Stmt>(Stmt::Kind::Assign, l);
      st->target = {s->ident()->getText(), loc(s->ident()->getStart()), {}};
      st->exprs.push_back(expr(s->expr()));
      return st;
    }
    if (auto *s = dynamic_cast<P::ForStmtContext *>(ctx)) {
      auto st = std::make_unique<Stmt>(Stmt::Kind::For, l);
      st->target = pattern(s->pattern());
      st->exprs.push_back(expr(s->expr()));
      st->body = body(s->body());
      return st;
    }
    if (auto *s = dynamic_cast<P::RepeatStmtContext *>(ctx)) {
      auto st = std::make_unique<Stmt>(Stmt::Kind::Repeat, l);
      st->exprs.push_back(expr(s->expr()));
      st->body = body(s->body());
      return st;
    }
    if (auto *s = dynamic_cast<P::IfStmtAltContext *>(ctx)) return ifStmt(s->ifStmt());
    if (auto *s = dynamic_cast<P::ReturnStmtContext *>(ctx)) {
      auto st = std::make_unique<Stmt>(Stmt::Kind::Return, l);
      for (P::ExprContext *e : s->expr()) st->exprs.push_back(expr(e));
      return st;
    }
    return nullptr;
  }

  // ifStmt : IF expr body (ELSE IF expr body)* (ELSE body)?
  // An else-if chain becomes nested If statements in the else branch.
  std::unique_ptr<Stmt> ifStmt(P::IfStmtContext *ctx) {
    std::vector<P::ExprContext *> conds = ctx->expr();
    std::vector<P::BodyContext *> bodies = ctx->body();
    if (conds.size() > kMaxNesting) {
      error(loc(ctx->getStart()), "else-if chain is longer than " + std::to_string(kMaxNesting));
      return nullptr;
    }
    StmtList tail;
    if (bodies.size() > conds.size()) tail = body(bodies.back());
    for (size_t i = conds.size(); i-- > 0;) {
      auto st = std::make_unique<Stmt>(Stmt::Kind::If, loc(conds[i]->getStart()));
      st->exprs.push_back(expr(conds[i]));
      st->body = body(bodies[i]);
      st->elseBody = std::move(tail);
      tail.clear();
      tail.push_back(std::move(st));
    }
    tail.front()->loc = loc(ctx->getStart());
    return std::move(tail.front());
  }

  // pattern : ident | '(' pattern (',' pattern)* ')'
  Pattern pattern(P::PatternContext *ctx) {
    Pattern p;
    p.loc = loc(ctx->getStart());
    if (ctx->ident()) {
      p.name = ctx->ident()->getText();
      return p;
    }
    for (P::PatternContext *sub : ctx->pattern()) p.items.push_back(pattern(sub));
    return p;
  }

  void tooDeep(SourceLoc l) {
    if (!reportedDepth_)
      error(std::move(l), "expression is nested more than " + std::to_string(kMaxExprDepth) +
                              " levels deep");
    reportedDepth_ = true;
    failed_ = true;
  }

  ExprPtr make(Expr::Kind k, SourceLoc l) { return std::make_unique<Expr>(k, std::move(l)); }

  ExprPtr expr(P::ExprContext *ctx) {
    if (++depth_ > kMaxExprDepth) {
      tooDeep(loc(ctx->getStart()));
      --depth_;
      return make(Expr::Kind::Int, loc(ctx->getStart()));
    }
    ExprPtr e = exprInner(ctx);
    --depth_;
    return e;
  }

  ExprPtr binary(P::ExprContext *lhs, antlr4::Token *op, P::ExprContext *rhs) {
    auto e = make(Expr::Kind::Binary, loc(op));
    e->text = op->getText();
    e->kids.push_back(expr(lhs));
    e->kids.push_back(expr(rhs));
    return e;
  }

  // expr : primary | expr '[' expr ']' | op expr | expr op expr | expr PIPE callee
  ExprPtr exprInner(P::ExprContext *ctx) {
    if (auto *c = dynamic_cast<P::PrimaryExprContext *>(ctx)) return primary(c->primary());
    if (auto *c = dynamic_cast<P::IndexExprContext *>(ctx)) {
      auto e = make(Expr::Kind::Index, loc(c->expr(1)->getStart()));
      e->kids.push_back(expr(c->expr(0)));
      e->kids.push_back(expr(c->expr(1)));
      return e;
    }
    if (auto *c = dynamic_cast<P::UnaryExprContext *>(ctx)) {
      auto e = make(Expr::Kind::Unary, loc(c->op));
      e->text = c->op->getText();
      e->kids.push_back(expr(c->expr()));
      return e;
    }
    // Python's spellings are the same operators: `not` is `!`, `and` `&&`, `or` `||`.
    if (auto *c = dynamic_cast<P::NotExprContext *>(ctx)) {
      auto e = make(Expr::Kind::Unary, loc(c->op));
      e->text = "!";
      e->kids.push_back(expr(c->expr()));
      return e;
    }
    if (auto *c = dynamic_cast<P::IsExprContext *>(ctx)) {
      auto e = binary(c->expr(0), c->op, c->expr(1));
      e->text = c->neg ? "is not" : "is";
      return e;
    }
    if (auto *c = dynamic_cast<P::PowExprContext *>(ctx)) return binary(c->expr(0), c->op, c->expr(1));
    if (auto *c = dynamic_cast<P::MulExprContext *>(ctx)) return binary(c->expr(0), c->op, c->expr(1));
    if (auto *c = dynamic_cast<P::AddExprContext *>(ctx)) return binary(c->expr(0), c->op, c->expr(1));
    if (auto *c = dynamic_cast<P::CmpExprContext *>(ctx)) return binary(c->expr(0), c->op, c->expr(1));
    if (auto *c = dynamic_cast<P::AndExprContext *>(ctx)) {
      auto e = binary(c->expr(0), c->op, c->expr(1));
      e->text = "&&";
      return e;
    }
    if (auto *c = dynamic_cast<P::OrExprContext *>(ctx)) {
      auto e = binary(c->expr(0), c->op, c->expr(1));
      e->text = "||";
      return e;
    }
    if (auto *c = dynamic_cast<P::PipeExprContext *>(ctx)) {
      P::CalleeContext *callee = c->callee();
      auto e = make(Expr::Kind::Call, loc(callee->ident()->getStart()));
      e->text = callee->ident()->getText();
      e->piped = true;
      e->args.push_back({"", loc(c->expr()->getStart()), expr(c->expr())});
      if (callee->argList()) args(callee->argList(), e->args);
      return e;
    }
    return make(Expr::Kind::Int, loc(ctx->getStart()));
  }

  void args(P::ArgListContext *ctx, std::vector<Arg> &out) {
    for (P::ArgContext *a : ctx->arg()) {
      Arg arg;
      arg.name = a->ident() ? a->ident()->getText() : "";
      arg.loc = loc(a->getStart());
      arg.value = expr(a->expr());
      out.push_back(std::move(arg));
    }
  }

  int64_t integer(const antlr4::Token *t) {
    std::string s = t->getText();
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size())
      error(loc(t), "integer literal '" + (s.size() > 40 ? s.substr(0, 37) + "..." : s) +
                        "' is too large");
    return v;
  }

  // primary : INT | FLOAT | STRING | TRUE | FALSE | call | ID | parens | tuple | list | ifExpr
  ExprPtr primary(P::PrimaryContext *ctx) {
    SourceLoc l = loc(ctx->getStart());
    if (auto *c = dynamic_cast<P::IntLitContext *>(ctx)) {
      auto e = make(Expr::Kind::Int, l);
      e->intValue = integer(c->INT()->getSymbol());
      return e;
    }
    if (auto *c = dynamic_cast<P::FloatLitContext *>(ctx)) {
      auto e = make(Expr::Kind::Float, l);
      e->floatValue = std::strtod(c->FLOAT()->getText().c_str(), nullptr);
      return e;
    }
    if (auto *c = dynamic_cast<P::StringLitContext *>(ctx)) {
      auto e = make(Expr::Kind::String, l);
      e->text = unquote(c->STRING()->getSymbol());
      return e;
    }
    if (dynamic_cast<P::NoneLitContext *>(ctx)) return make(Expr::Kind::None, l);
    if (auto *c = dynamic_cast<P::BoolLitContext *>(ctx)) {
      auto e = make(Expr::Kind::Bool, l);
      e->boolValue = c->TRUE() != nullptr;
      return e;
    }
    if (auto *c = dynamic_cast<P::CallExprContext *>(ctx)) {
      auto e = make(Expr::Kind::Call, l);
      e->text = c->ident()->getText();
      if (c->argList()) args(c->argList(), e->args);
      return e;
    }
    if (auto *c = dynamic_cast<P::NameExprContext *>(ctx)) {
      auto e = make(Expr::Kind::Name, l);
      e->text = c->ident()->getText();
      return e;
    }
    if (auto *c = dynamic_cast<P::ParenExprContext *>(ctx)) return expr(c->expr());
    if (auto *c = dynamic_cast<P::TupleExprContext *>(ctx)) {
      auto e = make(Expr::Kind::Tuple, l);
      for (P::ExprContext *item : c->expr()) e->kids.push_back(expr(item));
      return e;
    }
    if (auto *c = dynamic_cast<P::ListExprContext *>(ctx)) {
      auto e = make(Expr::Kind::List, l);
      for (P::ExprContext *item : c->expr()) e->kids.push_back(expr(item));
      return e;
    }
    if (auto *c = dynamic_cast<P::IfExprAltContext *>(ctx)) return ifExpr(c->ifExpr());
    return make(Expr::Kind::Int, l);
  }

  // ifExpr : IF expr '{' expr '}' (ELSE IF expr '{' expr '}')* ELSE '{' expr '}'
  // Expressions alternate condition, value; the last one is the else value.
  // An else-if chain becomes nested If expressions.
  ExprPtr ifExpr(P::IfExprContext *ctx) {
    std::vector<P::ExprContext *> parts = ctx->expr();
    if (parts.size() > 2 * kMaxNesting) {
      error(loc(ctx->getStart()), "else-if chain is longer than " + std::to_string(kMaxNesting));
      return make(Expr::Kind::Int, loc(ctx->getStart()));
    }
    ExprPtr tail = expr(parts.back());
    for (size_t i = parts.size() - 1; i >= 2; i -= 2) {
      auto e = make(Expr::Kind::If, loc(parts[i - 2]->getStart()));
      e->kids.push_back(expr(parts[i - 2]));
      e->kids.push_back(expr(parts[i - 1]));
      e->kids.push_back(std::move(tail));
      tail = std::move(e);
    }
    tail->loc = loc(ctx->getStart());
    return tail;
  }

  const std::string &file_;
  DiagnosticEngine &diags_;
  unsigned depth_ = 0;
  bool failed_ = false;
  bool reportedDepth_ = false;
};

} // namespace

std::unique_ptr<FileAst> buildAst(const std::string &name, DtnnParser::FileContext *tree,
                                  DiagnosticEngine &diags) {
  return AstBuilder(name, diags).build(tree);
}

} // namespace dtnn::frontend
