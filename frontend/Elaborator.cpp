#include "frontend/Elaborator.h"

#include "ir/OpTable.h"

namespace dtnn::frontend {

Elaborator::Elaborator(const Program &program, DiagnosticEngine &diags, bool pytorchInit)
    : program_(program), diags_(diags), pytorchInit_(pytorchInit) {}

Diagnostic Elaborator::note(const SourceLoc &loc, std::string message) const {
  return {Severity::Note, loc, std::move(message), {}};
}

void Elaborator::error(const SourceLoc &loc, std::string message, std::vector<Diagnostic> notes) {
  diagnose(Severity::Error, loc, std::move(message), std::move(notes));
}

void Elaborator::warning(const SourceLoc &loc, std::string message, std::vector<Diagnostic> notes) {
  diagnose(Severity::Warning, loc, std::move(message), std::move(notes));
}

void Elaborator::diagnose(Severity severity, const SourceLoc &loc, std::string message,
                          std::vector<Diagnostic> notes) {
  // One message per source position: a block expanded many times reports
  // its mistake once.
  if (loc.known() && !reported_.insert(loc).second) return;
  Diagnostic d{severity, loc, std::move(message), std::move(notes)};
  d.notes.insert(d.notes.end(), contextNotes_.begin(), contextNotes_.end());
  // Show the chain of block calls that led here: the two innermost distinct
  // call sites, then the outermost one (the call from the model).
  std::vector<size_t> shown;
  for (size_t i = frames_.size(); i-- > 1 && shown.size() < 2;)
    if (shown.empty() || !(frames_[shown.back()].callLoc == frames_[i].callLoc)) shown.push_back(i);
  if (frames_.size() > 1 && (shown.empty() || shown.back() != 1)) shown.push_back(1);
  for (size_t i : shown)
    d.notes.push_back(note(frames_[i].callLoc, "in block '" + frames_[i].block->name + "' called here"));
  diags_.report(d);
}

bool Elaborator::step(const SourceLoc &loc) {
  if (overBudget_) return false;
  if (++steps_ > kMaxSteps || (graph_ && graph_->ops().size() >= kMaxOps)) {
    overBudget_ = true;
    error(loc, "model is too large: expansion exceeds " + std::to_string(kMaxSteps) +
                   " steps or " + std::to_string(kMaxOps) + " ops");
    return false;
  }
  return !diags_.tooManyErrors();
}

Val Elaborator::sequence(Val::Kind kind, std::vector<Val> items, const SourceLoc &loc) {
  Expected<Val> v = sequences_.make(kind, std::move(items), loc);
  if (!v) {
    error(loc, v.error().message());
    return Val::poison();
  }
  return std::move(*v);
}

bool convertType(const TypeAst &t, ir::TensorType &out, DiagnosticEngine &diags) {
  auto dtype = ir::parseDType(t.dtype);
  if (!dtype) {
    std::string hint = closestMatch(t.dtype, ir::dtypeNames());
    diags.error(t.loc, "unknown element type '" + t.dtype + "'" +
                           (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
    return false;
  }
  out = ir::TensorType(*dtype, {});
  for (size_t i = 0; i < t.dims.size(); ++i) {
    const DimAst &d = t.dims[i];
    if (!d.symbol.empty()) {
      if (i != 0) {
        diags.error(d.loc, "only the first (batch) dimension may be symbolic, '" + d.symbol +
                               "' is dimension " + std::to_string(i));
        return false;
      }
      out.dims.push_back(ir::kDynamic);
    } else if (d.size < 1) {
      diags.error(d.loc, "dimension must be positive, got " + std::to_string(d.size));
      return false;
    } else if (d.size > ir::kMaxDim) {
      diags.error(d.loc, "dimension " + std::to_string(d.size) + " is larger than the largest, 2^40 (" +
                             std::to_string(ir::kMaxDim) + ")");
      return false;
    } else {
      out.dims.push_back(d.size);
    }
  }
  if (Error why = ir::sizeProblem(out)) {
    diags.error(t.loc, "type is too large: " + why.message());
    return false;
  }
  return true;
}

std::unique_ptr<ir::Module> Elaborator::buildModel(const ModelDecl &model) {
  unsigned errorsBefore = diags_.errorCount();
  module_ = std::make_unique<ir::Module>();
  graph_ = module_->addGraph(model.name);
  modelFile_ = model.loc.file;
  firstLastAxisDense_.reset();
  frames_.clear();
  frames_.emplace_back();
  frame().scopes.emplace_back();
  for (const ModelInput &in : model.inputs) {
    ir::TensorType type;
    if (!convertType(in.type, type, diags_)) continue;
    ir::Value *v = graph_->addInput(in.name, type);
    define(in.name, in.loc, Val::tensorOf(v, in.loc), false);
  }
  std::vector<ir::TensorType> declared;
  for (const TypeAst &t : model.results) {
    ir::TensorType type;
    if (convertType(t, type, diags_)) declared.push_back(type);
  }
  if (diags_.errorCount() != errorsBefore) return nullptr;

  exec(model.body);
  if (diags_.errorCount() != errorsBefore) return nullptr;
  if (!frame().returned) {
    error(model.loc, "model '" + model.name + "' has no return statement");
    return nullptr;
  }
  const std::vector<Val> &results = frame().results;
  if (results.size() != declared.size()) {
    error(model.results.front().loc, "model '" + model.name + "' declares " +
                                         std::to_string(declared.size()) + " results but returns " +
                                         std::to_string(results.size()));
    return nullptr;
  }
  std::vector<ir::Value *> outs;
  for (size_t i = 0; i < results.size(); ++i) {
    const Val &r = results[i];
    if (r.kind != Val::Kind::Tensor) {
      error(model.results[i].loc, "model result " + std::to_string(i) + " must be a tensor, got " +
                                      describe(r),
            {note(r.origin, "value produced here")});
      continue;
    }
    if (r.tensor->type() != declared[i]) {
      std::vector<Diagnostic> notes = {
          note(r.origin, "returned value of type " + r.tensor->type().str() + " produced here")};
      if (firstLastAxisDense_ && r.tensor->type().rank() > declared[i].rank())
        notes.push_back(*firstLastAxisDense_);
      error(model.results[i].loc,
            "model '" + model.name + "' declares result type " + declared[i].str() +
                " but returns " + r.tensor->type().str(),
            std::move(notes));
      continue;
    }
    outs.push_back(r.tensor);
  }
  if (diags_.errorCount() != errorsBefore) return nullptr;
  graph_->setOutputs(outs);
  return std::move(module_);
}

Elaborator::Binding *Elaborator::lookup(const std::string &name) {
  auto &scopes = frame().scopes;
  for (size_t i = scopes.size(); i-- > 0;) {
    auto it = scopes[i].find(name);
    if (it != scopes[i].end()) return &it->second;
  }
  return nullptr;
}

void Elaborator::define(const std::string &name, const SourceLoc &loc, Val v, bool isVar) {
  auto &scope = frame().scopes.back();
  auto it = scope.find(name);
  if (it != scope.end()) {
    error(loc, "'" + name + "' is already defined", {note(it->second.loc, "previous definition is here")});
    return;
  }
  scope[name] = Binding{std::move(v), isVar, loc};
}

void Elaborator::bindPattern(const Pattern &p, const Val &v, bool isVar) {
  if (!p.name.empty()) {
    define(p.name, p.loc, v, isVar);
    return;
  }
  if (v.isPoison()) {
    for (const Pattern &item : p.items) bindPattern(item, v, isVar);
    return;
  }
  if (!v.isSequence() || v.items().size() != p.items.size()) {
    error(p.loc, "cannot unpack " + describe(v) + " into " + std::to_string(p.items.size()) +
                     " names",
          {note(v.origin, "value produced here")});
    for (const Pattern &item : p.items) bindPattern(item, Val::poison(), isVar);
    return;
  }
  for (size_t i = 0; i < p.items.size(); ++i) bindPattern(p.items[i], v.items()[i], isVar);
}

void Elaborator::exec(const StmtList &stmts) {
  for (const auto &s : stmts) {
    if (!s || frame().returned || !step(s->loc)) return;
    execStmt(*s);
  }
}

void Elaborator::execStmt(const Stmt &s) {
  switch (s.kind) {
  case Stmt::Kind::Let:
  case Stmt::Kind::Var:
    bindPattern(s.target, eval(*s.exprs[0]), s.kind == Stmt::Kind::Var);
    return;
  case Stmt::Kind::Assign: {
    Val v = eval(*s.exprs[0]);
    Binding *b = lookup(s.target.name);
    if (!b) {
      std::vector<std::string> names;
      for (const auto &scope : frame().scopes)
        for (const auto &[n, _] : scope) names.push_back(n);
      std::string hint = closestMatch(s.target.name, names);
      error(s.target.loc, "assignment to undefined name '" + s.target.name + "'" +
                              (hint.empty() ? "; declare it with 'var'" : "; did you mean '" + hint + "'?"));
      return;
    }
    if (!b->isVar) {
      error(s.target.loc, "cannot assign to '" + s.target.name + "': it was bound with 'let'",
            {note(b->loc, "declared here; use 'var' for a name that changes")});
      return;
    }
    b->value = std::move(v);
    return;
  }
  case Stmt::Kind::For: {
    Val seq = eval(*s.exprs[0]);
    if (seq.isPoison()) return;
    if (!seq.isSequence()) {
      error(s.exprs[0]->loc, "for loop needs a list or tuple, got " + describe(seq));
      return;
    }
    for (const Val &item : seq.items()) {
      if (!step(s.loc)) return;
      frame().scopes.emplace_back();
      bindPattern(s.target, item, false);
      exec(s.body);
      frame().scopes.pop_back();
      if (frame().returned) return;
    }
    return;
  }
  case Stmt::Kind::Repeat: {
    Val n = eval(*s.exprs[0]);
    if (n.isPoison()) return;
    if (n.kind != Val::Kind::Int || n.i < 0) {
      error(s.exprs[0]->loc, "repeat count must be a non-negative int, got " + describe(n));
      return;
    }
    for (int64_t k = 0; k < n.i; ++k) {
      if (!step(s.loc)) return;
      frame().scopes.emplace_back();
      exec(s.body);
      frame().scopes.pop_back();
      if (frame().returned) return;
    }
    return;
  }
  case Stmt::Kind::If: {
    Val c = eval(*s.exprs[0]);
    if (c.isPoison()) return;
    if (c.kind != Val::Kind::Bool) {
      error(s.exprs[0]->loc, "condition must be a bool, got " + describe(c));
      return;
    }
    frame().scopes.emplace_back();
    exec(c.b ? s.body : s.elseBody);
    frame().scopes.pop_back();
    return;
  }
  case Stmt::Kind::Return: {
    std::vector<Val> vals;
    for (const auto &e : s.exprs) vals.push_back(eval(*e));
    frame().results = std::move(vals);
    frame().returned = true;
    return;
  }
  }
}

} // namespace dtnn::frontend
