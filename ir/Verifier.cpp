// The module verifier. Algorithm: check parameter and graph names for
// uniqueness, then walk each graph's ops in order, keeping the set of values
// defined so far (the graph's inputs, the module's parameters, and the
// results of earlier ops) and the values written in place so far, which no
// later op or output may use (they use the writer's new version instead).
// Each op is checked against its op table entry;
// when its operands and attributes are sound the shape rule is run and its
// result types are compared with the op's. Problems are collected, never
// fatal, and no check relies on pointer order for its output order.
#include "ir/Verifier.h"

#include <climits>
#include <map>
#include <set>

namespace dtnn::ir {

namespace {

// The location of `x` (an op, parameter or graph): its own when known,
// else where it was read from text, else unknown.
template <typename T>
SourceLoc locOf(const T *x, const Location &own, const std::map<const T *, SourceLoc> *read) {
  if (own.known()) return own.locs[0];
  if (read)
    if (auto it = read->find(x); it != read->end()) return it->second;
  return {};
}

std::string plural(size_t n, const char *word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

bool isIdentifier(const std::string &s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && (i == 0 || !((c >= '0' && c <= '9') || c == '.'))) return false;
  }
  return true;
}

class Verifier {
public:
  Verifier(const Module &m, const TextPositions *positions) : m_(m), positions_(positions) {}

  std::vector<Diagnostic> run() {
    checkParams();
    std::map<std::string, const Graph *> seen;
    for (const auto &g : m_.graphs()) {
      if (!seen.emplace(g->name(), g.get()).second)
        add(graphLoc(*g), "duplicate graph name @" + g->name());
      checkGraph(*g);
    }
    return std::move(diags_);
  }

private:
  SourceLoc opLoc(const Op &op) const {
    return locOf(&op, op.loc(), positions_ ? &positions_->ops : nullptr);
  }
  SourceLoc paramLoc(const Param &p) const {
    return locOf(&p, p.loc, positions_ ? &positions_->params : nullptr);
  }
  SourceLoc graphLoc(const Graph &g) const {
    return locOf(&g, Location(), positions_ ? &positions_->graphs : nullptr);
  }

  Diagnostic &add(SourceLoc loc, std::string message) {
    diags_.push_back({Severity::Error, std::move(loc), std::move(message), {}});
    return diags_.back();
  }

  void checkParams() {
    std::map<std::string, const Param *> seen;
    for (const auto &p : m_.params()) {
      SourceLoc loc = paramLoc(*p);
      if (!isIdentifier(p->name)) add(loc, "invalid parameter name '@" + p->name + "'");
      if (auto [it, inserted] = seen.emplace(p->name, p.get()); !inserted) {
        Diagnostic &d = add(loc, "duplicate parameter @" + p->name);
        if (SourceLoc first = paramLoc(*it->second); first.known())
          d.note(first, "first declared here");
      }
      if (!p->value || p->value->kind() != Value::Kind::Param || p->value->param() != p.get())
        add(loc, "parameter @" + p->name + " has no value");
      else if (p->value->type() != p->type)
        add(loc, "parameter @" + p->name + " is declared " + p->type.str() +
                     " but its value has type " + p->value->type().str());
      else if (p->type.isToken())
        add(loc, "parameter @" + p->name + " is a token; parameters hold tensors");
      else if (Error why = sizeProblem(p->type))
        add(loc, "parameter @" + p->name + " is too large: " + why.message());
      else
        paramValues_.insert(p->value);
    }
  }

  // Fails with why `v` may not be used at this point in graph `g`.
  Error useProblem(const Value *v, const Graph &g) const {
    if (!v) return Error::make("is null");
    if (defined_.count(v)) return Error::success();
    switch (v->kind()) {
    case Value::Kind::Param:
      return Error::make("is parameter @" + (v->param() ? v->param()->name : v->name()) +
                         ", which is not in this module");
    case Value::Kind::Input: return Error::make("is input %" + v->name() + " of another graph");
    case Value::Kind::Result:
      if (v->definingOp() && g.indexOf(v->definingOp()) < g.ops().size())
        return Error::make("is used before its definition by '" + v->definingOp()->name() + "'");
      return Error::make("is not defined in this graph");
    }
    return Error::make("is invalid");
  }

  void checkGraph(const Graph &g) {
    scope_ = "graph @" + g.name();
    defined_ = paramValues_;
    std::set<std::string> inputNames;
    for (const Value *in : g.inputs()) {
      if (!isIdentifier(in->name()))
        add(graphLoc(g), "graph @" + g.name() + " has an invalid input name '%" + in->name() + "'");
      else if (!inputNames.insert(in->name()).second)
        add(graphLoc(g), "graph @" + g.name() + " has two inputs named %" + in->name());
      if (in->type().isToken())
        add(graphLoc(g), "input %" + in->name() + " of graph @" + g.name() +
                             " is a token; only an allreduce_start makes one");
      if (Error why = sizeProblem(in->type()))
        add(graphLoc(g), "input %" + in->name() + " of graph @" + g.name() + " is too large: " +
                             why.message());
      defined_.insert(in);
    }
    writtenBy_.clear();
    checkOps(g);
    checkTokens(g);
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      if (Error problem = useProblem(g.outputs()[i], g))
        add(graphLoc(g), "output " + std::to_string(i) + " of graph @" + g.name() + " " +
                             problem.message());
      else
        checkNotOverwritten(g.outputs()[i], graphLoc(g),
                            "output " + std::to_string(i) + " returns");
    }
  }

  // The ops of a graph or region body, in order.
  void checkOps(const Graph &g) {
    for (const auto &op : g.ops()) {
      for (size_t i = 0; i < op->operands().size(); ++i)
        if (op->operands()[i])
          checkNotOverwritten(op->operands()[i], opLoc(*op),
                              "'" + op->name() + "' reads");
      checkOp(*op, g);
      noteWrites(*op);
      for (const Value *r : op->results()) defined_.insert(r);
    }
  }

  // The region of `op`: one argument per operand, of the operand's type
  // (where the body yields the op's results; otherwise the shape rule checks
  // the arguments); the body checked as a graph of its own that sees no
  // value around it; then what the op's definition allows in a body. Returns
  // false after reporting a problem.
  bool checkBody(const Op &op, const SourceLoc &loc, const std::string &what) {
    const Graph &body = *op.body();
    std::string where = " (in " + scope_ + ")";
    size_t before = diags_.size();
    if (!op.def().yieldsResults) {
      // fused_update: a body over one group of operands, checked by its shape rule.
    } else if (body.inputs().size() != op.operands().size()) {
      add(loc, "the region of " + what + " takes " + plural(body.inputs().size(), "argument") +
                   ", but the op has " + plural(op.operands().size(), "operand") + where);
    } else {
      for (size_t i = 0; i < body.inputs().size(); ++i) {
        const Value *arg = body.inputs()[i], *v = op.operand(static_cast<unsigned>(i));
        if (v && arg->type() != v->type())
          add(loc, "argument %" + arg->name() + " of the region of " + what + " has type " +
                       arg->type().str() + ", but operand " + std::to_string(i) + " is " +
                       v->type().str() + where);
      }
    }
    std::string outerScope = scope_;
    std::set<const Value *> outerDefined = std::move(defined_);
    auto outerWritten = std::move(writtenBy_);
    scope_ = "the region of " + what + " in " + outerScope;
    defined_.clear();
    writtenBy_.clear();
    std::set<std::string> names;
    for (const Value *arg : body.inputs()) {
      if (!isIdentifier(arg->name()))
        add(loc, "the region of " + what + " has an invalid argument name '%" + arg->name() +
                     "'" + where);
      else if (!names.insert(arg->name()).second)
        add(loc, "the region of " + what + " has two arguments named %" + arg->name() + where);
      defined_.insert(arg);
    }
    checkOps(body);
    for (size_t i = 0; i < body.outputs().size(); ++i)
      if (Error problem = useProblem(body.outputs()[i], body))
        add(loc, "value " + std::to_string(i) + " that the region of " + what + " yields " +
                     problem.message() + where);
    scope_ = outerScope;
    defined_ = std::move(outerDefined);
    writtenBy_ = std::move(outerWritten);
    if (diags_.size() != before) return false;
    if (op.def().verifyBody)
      if (Error e = op.def().verifyBody(body)) {
        add(loc, e.message() + where);
        return false;
      }
    return true;
  }

  void checkOp(const Op &op, const Graph &g) {
    const OpDef &def = op.def();
    SourceLoc loc = opLoc(op);
    std::string where = " (in " + scope_ + ")";
    std::string what = "'" + def.name + "'";
    bool sound = true;

    size_t n = op.operands().size();
    bool countInRange = n >= def.minOperands() && n <= def.maxOperands();
    if (!countInRange) {
      std::string expected =
          def.minOperands() == def.maxOperands() ? std::to_string(def.minOperands())
          : def.maxOperands() == UINT_MAX
              ? std::to_string(def.minOperands()) + " or more"
              : std::to_string(def.minOperands()) + " to " + std::to_string(def.maxOperands());
      add(loc, what + " takes " + expected + (expected == "1" ? " operand" : " operands") +
                   ", got " + std::to_string(n) + where);
      sound = false;
    }
    for (size_t i = 0; i < n; ++i) {
      Error problem = useProblem(op.operands()[i], g);
      if (!problem) continue;
      add(loc, "operand " + std::to_string(i) + " of " + what + " " + problem.message() + where);
      sound = false;
    }
    if (sound && !checkWritten(op, loc, what, where)) sound = false;

    for (const auto &[name, value] : op.attrs().entries())
      if (!def.findAttr(name)) add(loc, what + " has no attribute '" + name + "'" + where);
    for (const AttrSpec &spec : def.attrs) {
      const AttrValue *v = op.attrs().find(spec.name);
      if (!v) {
        add(loc, what + " is missing attribute '" + spec.name + "'" + where);
        sound = false;
      } else if (attrKindOf(*v) != spec.kind) {
        add(loc, "attribute '" + spec.name + "' of " + what + " must be " +
                     attrKindName(spec.kind) + ", got " + attrKindName(attrKindOf(*v)) + where);
        sound = false;
      }
    }

    if (def.hasBody != (op.body() != nullptr)) {
      add(loc, what + (def.hasBody ? " has no region; it needs one" : " has a region, which it does not take") + where);
      sound = false;
    } else if (op.body() && !checkBody(op, loc, what)) {
      sound = false;
    }
    unsigned results = op.body() && def.yieldsResults ? op.ownResults()
                       : countInRange                ? def.resultCount(n, op.attrs())
                                                     : def.numResults;
    if (op.results().size() != results) {
      add(loc, what + " must have " + plural(results, "result") + ", has " +
                   std::to_string(op.results().size()) + where);
      sound = false;
    }
    if (!sound || !def.inferShape) return;

    std::vector<TensorType> operandTypes;
    for (const Value *v : op.operands()) operandTypes.push_back(v->type());
    InferCtx ctx{operandTypes, op.attrs(), {}, {}, op.body()};
    if (Error e = inferResultTypes(def, ctx)) {
      Diagnostic &d = add(loc, e.message() + where);
      for (int i : ctx.blame)
        if (i >= 0 && static_cast<size_t>(i) < n) blameNote(d, op.operand(i), i);
      return;
    }
    for (size_t i = 0; i < op.results().size() && i < ctx.results.size(); ++i) {
      const TensorType &have = op.result(static_cast<unsigned>(i))->type();
      if (have == ctx.results[i]) continue;
      std::string which = op.results().size() == 1 ? "result" : "result " + std::to_string(i);
      add(loc, which + " type " + have.str() + " of " + what + " does not match the inferred " +
                   ctx.results[i].str() + where);
    }
  }

  // An operand the op writes in place must be a parameter or buffer, a
  // version of one, or an op's result, and no other operand of the op may
  // pass it. The op yields its new version, so the written value itself is
  // dead afterwards: checkGraph reports later uses. Returns false after
  // reporting a problem.
  bool checkWritten(const Op &op, const SourceLoc &loc, const std::string &what,
                    const std::string &where) {
    const std::vector<Value *> &vals = op.operands();
    std::vector<const OperandSpec *> specs = op.def().operandSpecs(vals.size(), op.attrs());
    auto name = [&](size_t i) {
      return "operand " + std::to_string(i) + " (" + specs[i]->name + ")";
    };
    bool ok = true;
    for (size_t i = 0; i < vals.size(); ++i) {
      if (!specs[i]->writes()) continue;
      const Value *v = vals[i];
      if (v->kind() == Value::Kind::Input) {
        add(loc, name(i) + " of " + what + " is updated in place and must be a parameter, a "
                     "buffer or an op's result, got input %" + v->name() + where);
        ok = false;
        continue;
      }
      for (size_t j = 0; j < vals.size(); ++j) {
        if (j == i || vals[j] != v || (specs[j]->writes() && j < i)) continue;
        add(loc, name(i) + " of " + what + " is updated in place, so it may not also be " +
                     name(j) + where);
        ok = false;
      }
    }
    return ok;
  }

  // Records the values `op` writes, so that later uses are reported.
  void noteWrites(const Op &op) {
    const std::vector<Value *> &vals = op.operands();
    if (vals.size() < op.def().minOperands() || vals.size() > op.def().maxOperands()) return;
    std::vector<const OperandSpec *> specs = op.def().operandSpecs(vals.size(), op.attrs());
    unsigned version = op.ownResults();
    for (size_t i = 0; i < vals.size(); ++i) {
      if (!specs[i]->writes()) continue;
      if (version < op.results().size()) writtenBy_[vals[i]] = {&op, version};
      ++version;
    }
  }

  // Reports a use of `v` (`useText` says which) after an op wrote it in place.
  void checkNotOverwritten(const Value *v, SourceLoc loc,
                           const std::string &useText) {
    auto it = writtenBy_.find(v);
    if (it == writtenBy_.end()) return;
    const Op &writer = *it->second.first;
    std::string value = v->kind() == Value::Kind::Param ? "@" + v->param()->name : "a value";
    Diagnostic &d =
        add(loc, useText + " " + value + " after '" + writer.name() + "' updated it in place" +
                     " (in " + scope_ + "); use the new version, result " +
                     std::to_string(it->second.second) + " of '" + writer.name() + "'");
    if (SourceLoc w = opLoc(writer); w.known()) d.note(w, "'" + writer.name() + "' writes it here");
  }

  // A token ties the start of asynchronous work to its wait: each token an
  // op makes is used once, by an allreduce_wait that takes the start's
  // buffers in the same order, and nothing else uses those buffers between
  // the two (they are in flight). Tokens are never graph outputs.
  void checkTokens(const Graph &g) {
    std::map<const Value *, std::vector<std::pair<size_t, const Op *>>> users;
    for (size_t k = 0; k < g.ops().size(); ++k)
      for (const Value *v : g.ops()[k]->operands()) users[v].push_back({k, g.ops()[k].get()});
    for (const Value *v : g.outputs())
      if (v && v->type().isToken())
        add(graphLoc(g), "graph @" + g.name() + " returns a token; wait for it instead");
    for (size_t k = 0; k < g.ops().size(); ++k) {
      const Op &start = *g.ops()[k];
      for (const Value *r : start.results()) {
        if (!r->type().isToken()) continue;
        const auto &uses = users[r];
        std::string what = "the token of '" + start.name() + "'";
        if (uses.size() != 1 || uses[0].second->name() != "allreduce_wait") {
          Diagnostic &d = add(opLoc(start), what + " must be used once, by an allreduce_wait; " +
                                                "it has " + plural(uses.size(), "use") +
                                                " (in graph @" + g.name() + ")");
          for (const auto &[at, user] : uses)
            if (SourceLoc l = opLoc(*user); l.known()) d.note(l, "used by '" + user->name() + "' here");
          continue;
        }
        const Op &wait = *uses[0].second;
        std::vector<Value *> buffers(wait.operands().begin() + 1, wait.operands().end());
        if (wait.operand(0) != r || buffers != start.operands()) {
          Diagnostic &d = add(opLoc(wait), "'allreduce_wait' must take the token of its "
                                           "'allreduce_start' first, then the same buffers in "
                                           "the same order (in graph @" + g.name() + ")");
          if (SourceLoc l = opLoc(start); l.known()) d.note(l, "the start is here");
          continue;
        }
        for (const Value *b : start.operands())
          for (const auto &[at, user] : users[b]) {
            if (at <= k || at >= uses[0].first) continue;
            Diagnostic &d = add(opLoc(*user), "'" + user->name() + "' uses a buffer of '" +
                                                  start.name() + "' before its allreduce_wait; "
                                                  "it is being reduced (in graph @" + g.name() + ")");
            if (SourceLoc l = opLoc(start); l.known()) d.note(l, "the reduction starts here");
          }
      }
    }
  }

  // Adds a note pointing at where operand `index` was defined, when known.
  void blameNote(Diagnostic &d, const Value *v, int index) const {
    std::string text = "operand " + std::to_string(index) + " has type " + v->type().str();
    if (v->kind() == Value::Kind::Result && v->definingOp()) {
      if (SourceLoc l = opLoc(*v->definingOp()); l.known()) d.note(l, text + ", produced here");
    } else if (v->kind() == Value::Kind::Param && v->param()) {
      if (SourceLoc l = paramLoc(*v->param()); l.known()) d.note(l, text + ", declared here");
    }
  }

  const Module &m_;
  const TextPositions *positions_;
  std::vector<Diagnostic> diags_;
  std::set<const Value *> paramValues_;
  // What the ops being checked are in, for messages: "graph @train", or
  // "the region of 'fused' in graph @train".
  std::string scope_;
  // Values usable at the current point of the current graph (membership
  // tests only; never iterated).
  std::set<const Value *> defined_;
  // Values written in place so far in the current graph: the writer and the
  // index of the result that is the new version (lookups only).
  std::map<const Value *, std::pair<const Op *, unsigned>> writtenBy_;
};

} // namespace

std::vector<Diagnostic> verifyModule(const Module &m, const TextPositions *positions) {
  return Verifier(m, positions).run();
}

} // namespace dtnn::ir
