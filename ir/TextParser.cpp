// A recursive-descent parser for the textual IR. The grammar is flat (a
// module is a list of declarations, a graph a list of op lines, attribute
// lists hold scalars), so every rule is a loop and the call depth is bounded
// whatever the input. The parser stops at the first error. It takes result
// types as written; the verifier checks them against the shape rules.
#include "ir/TextParser.h"

#include "ir/TextParserImpl.h"

#include "ir/OpTable.h"

namespace dtnn::ir {

namespace textparse {

namespace {

std::string plural(size_t n, const char *word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// " (N of its own, then the new versions of the M operands it updates in
// place)" for an op that writes operands, so that the count adds up.
std::string resultNote(const OpDef &def, unsigned results) {
  if (results == def.numResults) return "";
  unsigned written = results - def.numResults;
  return " (" + std::to_string(def.numResults) + " of its own, then the new " +
         (written == 1 ? "version of the operand" : "versions of the " + plural(written, "operand")) +
         " it updates in place)";
}

} // namespace

// module ::= trainConfig? (param | graph)* EOF
std::unique_ptr<Module> Parser::parseModule() {
  if (tok_.isIdent("train") && !parseTrainConfig()) return nullptr;
  while (!tok_.is(Token::Eof)) {
    bool ok;
    if (tok_.isIdent("param") || tok_.isIdent("buffer"))
      ok = parseParam();
    else if (tok_.isIdent("graph"))
      ok = parseGraph();
    else
      ok = errorAt(tok_, "expected 'param', 'buffer' or 'graph', got " + tokenDescription(tok_));
    if (!ok) return nullptr;
  }
  return std::move(module_);
}

// param ::= ('param' | 'buffer') PARAMREF ':' type 'init' '=' (IDENT | STRING) location?
bool Parser::parseParam() {
  bool trainable = tok_.isIdent("param");
  advance();
  if (!tok_.is(Token::ParamRef))
    return errorAt(tok_, "expected a parameter name like @conv2d.0.weight, got " +
                             tokenDescription(tok_));
  Token nameTok = tok_;
  if (auto it = params_.find(nameTok.str); it != params_.end())
    return errorWithNote(nameTok, "redefinition of parameter @" + nameTok.str, it->second.second);
  advance();
  TensorType type;
  if (!expect(Token::Colon, "':' after the parameter name") || !parseType(type)) return false;
  if (!tok_.isIdent("init"))
    return errorAt(tok_,
                   "expected 'init=' after the parameter type, got " + tokenDescription(tok_));
  advance();
  if (!expect(Token::Equal, "'=' after 'init'")) return false;
  std::string init;
  if (tok_.is(Token::Ident))
    init = std::string(tok_.spelling);
  else if (tok_.is(Token::String))
    init = tok_.str;
  else
    return errorAt(tok_, "expected an initializer name, got " + tokenDescription(tok_));
  advance();
  Location loc;
  if (tok_.isIdent("loc") && !parseLocation(loc)) return false;
  if (!expectLineEnd("the parameter declaration")) return false;
  Param *p =
      module_->addParam(nameTok.str, std::move(type), std::move(init), trainable, std::move(loc));
  params_[nameTok.str] = {p, nameTok.loc};
  if (positions_) positions_->params[p] = nameTok.loc;
  return true;
}

// graph ::= 'graph' PARAMREF '(' (VALUEREF ':' type (',' VALUEREF ':' type)*)? ')'
//           '->' (type | '(' (type (',' type)*)? ')') '{' op* 'return' operands? '}'
bool Parser::parseGraph() {
  advance();
  if (!tok_.is(Token::ParamRef))
    return errorAt(tok_, "expected a graph name like @forward, got " + tokenDescription(tok_));
  Token nameTok = tok_;
  if (auto it = graphs_.find(nameTok.str); it != graphs_.end())
    return errorWithNote(nameTok, "redefinition of graph @" + nameTok.str, it->second);
  graphs_[nameTok.str] = nameTok.loc;
  Graph &g = *module_->addGraph(nameTok.str);
  if (positions_) positions_->graphs[&g] = nameTok.loc;
  values_.clear();
  advance();
  if (!expect(Token::LParen, "'(' after the graph name")) return false;
  if (!parseInputs(g, "graph input", "%x", "input") ||
      !expect(Token::RParen, "')' after the graph inputs") ||
      !expect(Token::Arrow, "'->' and the graph's output types"))
    return false;
  std::vector<TensorType> signature(1);
  if (tok_.is(Token::LParen)) {
    signature.clear();
    advance();
    while (!tok_.is(Token::RParen)) {
      if (!parseType(signature.emplace_back())) return false;
      if (!tok_.is(Token::Comma)) break;
      advance();
    }
    if (!expect(Token::RParen, "')' after the output types")) return false;
  } else if (!parseType(signature[0])) {
    return false;
  }
  if (!expect(Token::LBrace, "'{' to begin the graph body")) return false;
  while (!tok_.isIdent("return")) {
    if (tok_.is(Token::RBrace) || tok_.is(Token::Eof))
      return errorAt(tok_, "expected 'return' before the end of graph @" + g.name());
    if (!parseOp(g)) return false;
  }
  Token retTok = tok_;
  advance();
  std::vector<Value *> outs;
  std::vector<Token> outToks;
  while (tok_.is(Token::ValueRef) || tok_.is(Token::ParamRef)) {
    outToks.push_back(tok_);
    if (!parseOperand(outs.emplace_back())) return false;
    if (!tok_.is(Token::Comma)) break;
    advance();
  }
  if (outs.size() != signature.size())
    return errorAt(retTok, "graph @" + g.name() + " returns " + plural(outs.size(), "value") +
                               " but its signature declares " + plural(signature.size(), "output"));
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i]->type() != signature[i])
      return errorAt(outToks[i], "returned value " + std::string(outToks[i].spelling) +
                                     " has type " + outs[i]->type().str() + ", but graph @" +
                                     g.name() + " declares output " + std::to_string(i) + " as " +
                                     signature[i].str());
  g.setOutputs(std::move(outs));
  return expect(Token::RBrace, "'}' after the return values");
}

// op ::= (VALUEREF (',' VALUEREF)* '=')? IDENT operands? attrs? (':' type (',' type)*)?
//        location?
// The operands must start on the op's line, which keeps an op without
// operands from swallowing the next line's results.
bool Parser::parseOp(Graph &g) {
  std::vector<Token> resultToks;
  if (tok_.is(Token::ValueRef)) {
    while (true) {
      if (!tok_.is(Token::ValueRef))
        return errorAt(tok_, "expected a result name like %0, got " + tokenDescription(tok_));
      if (auto it = values_.find(tok_.str); it != values_.end())
        return errorWithNote(tok_, "redefinition of value %" + tok_.str, it->second.second);
      for (const Token &r : resultToks)
        if (r.str == tok_.str)
          return errorWithNote(tok_, "redefinition of value %" + tok_.str, r.loc);
      resultToks.push_back(tok_);
      advance();
      if (!tok_.is(Token::Comma)) break;
      advance();
    }
    if (!expect(Token::Equal, "'=' after the result names")) return false;
  }
  if (!tok_.is(Token::Ident))
    return errorAt(tok_, "expected an op name, got " + tokenDescription(tok_));
  Token opTok = tok_;
  std::string opName(opTok.spelling);
  const OpDef *def = OpTable::get().lookup(opName);
  if (!def)
    return errorAt(opTok,
                   "unknown op '" + opName + "'" + didYouMean(opName, OpTable::get().names()));
  advance();
  std::vector<Value *> operands;
  if ((tok_.is(Token::ValueRef) || tok_.is(Token::ParamRef)) && !tok_.newlineBefore) {
    while (true) {
      if (!parseOperand(operands.emplace_back())) return false;
      if (!tok_.is(Token::Comma)) break;
      advance();
    }
  }
  AttrMap attrs;
  if (tok_.is(Token::LBrace) && !parseAttrs(*def, attrs)) return false;
  fillDefaultAttrs(*def, attrs);
  for (const AttrSpec &spec : def->attrs)
    if (!attrs.find(spec.name))
      return errorAt(opTok, "'" + opName + "' requires attribute '" + spec.name + "'");
  // Written operands add their new versions to the op's own results; an op
  // with a region yields what its body does, counted once the body is read.
  size_t n = operands.size();
  unsigned results = def->hasBody && def->yieldsResults ? static_cast<unsigned>(resultToks.size())
                     : n >= def->minOperands() && n <= def->maxOperands()
                         ? def->resultCount(n, attrs)
                         : def->numResults;
  if (resultToks.size() != results)
    return errorAt(resultToks.empty() ? opTok : resultToks[0],
                   "'" + opName + "' produces " + plural(results, "result") +
                       resultNote(*def, results) + ", but " + std::to_string(resultToks.size()) +
                       " " + (resultToks.size() == 1 ? "is" : "are") + " named");
  std::vector<TensorType> types;
  Token typesTok = tok_;
  if (tok_.is(Token::Colon)) {
    advance();
    while (true) {
      if (!parseType(types.emplace_back())) return false;
      if (!tok_.is(Token::Comma)) break;
      advance();
    }
  } else if (results != 0) {
    return errorAt(tok_, "expected ':' and the result types of '" + opName + "', got " +
                             tokenDescription(tok_));
  }
  if (types.size() != results)
    return errorAt(typesTok, "'" + opName + "' produces " + plural(results, "result") +
                                 ", but " + plural(types.size(), "result type") + " " +
                                 (types.size() == 1 ? "is" : "are") + " given");
  Location loc;
  if (tok_.isIdent("loc") && !parseLocation(loc)) return false;
  std::unique_ptr<Graph> body;
  if (tok_.is(Token::LBrace) && !tok_.newlineBefore) {
    if (!def->hasBody)
      return errorAt(tok_, "'" + opName + "' has no region; expected end of line after the op");
    if (!parseBody(opTok, body)) return false;
    if (def->yieldsResults && body->outputs().size() != results)
      return errorAt(resultToks.empty() ? opTok : resultToks[0],
                     "the region of '" + opName + "' yields " +
                         plural(body->outputs().size(), "value") + ", but " +
                         std::to_string(results) + " " + (results == 1 ? "result is" : "results are") +
                         " named");
  } else if (def->hasBody) {
    return errorAt(tok_, "expected '{' and the region of '" + opName + "' after its result types, got " +
                             tokenDescription(tok_));
  }
  if (!expectLineEnd("the op")) return false;
  Op *op = g.addOp(*def, std::move(operands), std::move(attrs), std::move(types), std::move(loc));
  if (body) op->setBody(std::move(body));
  if (positions_) positions_->ops[op] = opTok.loc;
  for (size_t i = 0; i < resultToks.size(); ++i)
    if (!defineValue(resultToks[i], op->result(static_cast<unsigned>(i)))) return false;
  return true;
}

// region ::= '{' '(' (VALUEREF ':' type (',' VALUEREF ':' type)*)? ')' op* 'yield' operands '}'
// The body is a scope of its own: it sees no value of the graph around it
// and no parameter, only its arguments and its own results.
bool Parser::parseBody(const Token &opTok, std::unique_ptr<Graph> &body) {
  advance();
  body = std::make_unique<Graph>("");
  auto outer = std::move(values_);
  values_.clear();
  ++bodyDepth_;
  bool ok = parseBodyContents(opTok, *body);
  --bodyDepth_;
  values_ = std::move(outer);
  return ok;
}

bool Parser::parseBodyContents(const Token &opTok, Graph &body) {
  const std::string opName(opTok.spelling);
  if (!tok_.newlineBefore || !tok_.is(Token::LParen))
    return errorAt(tok_, "expected the arguments of the region of '" + opName +
                             "' on the next line, like (%x0: f32[4]), got " +
                             tokenDescription(tok_));
  advance();
  if (!parseInputs(body, "region argument", "%x0", "argument") ||
      !expect(Token::RParen, "')' after the region arguments") ||
      !expectLineEnd("the region arguments"))
    return false;
  while (!tok_.isIdent("yield")) {
    if (tok_.is(Token::RBrace) || tok_.is(Token::Eof))
      return errorAt(tok_, "expected 'yield' before the end of the region of '" + opName + "'");
    if (!parseOp(body)) return false;
  }
  advance();
  std::vector<Value *> outs;
  while ((tok_.is(Token::ValueRef) || tok_.is(Token::ParamRef)) && !tok_.newlineBefore) {
    if (!parseOperand(outs.emplace_back())) return false;
    if (!tok_.is(Token::Comma)) break;
    advance();
  }
  body.setOutputs(std::move(outs));
  if (!tok_.newlineBefore || !tok_.is(Token::RBrace))
    return errorAt(tok_, "expected '}' on the line after the yield of the region of '" + opName +
                             "', got " + tokenDescription(tok_));
  advance();
  return true;
}

// inputs ::= (VALUEREF ':' type (',' VALUEREF ':' type)*)?, up to the ')'.
// `what` names one ("graph input"), `example` shows one, `short_` names it
// after its name ("':' after the input name").
bool Parser::parseInputs(Graph &g, const char *what, const char *example, const char *short_) {
  while (!tok_.is(Token::RParen)) {
    if (!tok_.is(Token::ValueRef))
      return errorAt(tok_, std::string("expected a ") + what + " like " + example + ", got " +
                               tokenDescription(tok_));
    Token inTok = tok_;
    char c0 = inTok.str[0];
    if (!((c0 >= 'a' && c0 <= 'z') || (c0 >= 'A' && c0 <= 'Z') || c0 == '_'))
      return errorAt(inTok, std::string(what) + " names must start with a letter or '_'");
    advance();
    TensorType type;
    if (!expect(Token::Colon, (std::string("':' after the ") + short_ + " name").c_str()) ||
        !parseType(type))
      return false;
    if (!defineValue(inTok, g.addInput(inTok.str, std::move(type)))) return false;
    if (!tok_.is(Token::Comma)) break;
    advance();
  }
  return true;
}

bool Parser::defineValue(const Token &t, Value *v) {
  auto [it, inserted] = values_.try_emplace(t.str, v, t.loc);
  if (!inserted) return errorWithNote(t, "redefinition of value %" + t.str, it->second.second);
  return true;
}

// operand ::= VALUEREF | PARAMREF
bool Parser::parseOperand(Value *&v) {
  if (tok_.is(Token::ValueRef)) {
    auto it = values_.find(tok_.str);
    if (it == values_.end()) {
      std::vector<std::string> names;
      for (const auto &entry : values_) names.push_back(entry.first);
      return errorAt(tok_,
                     "use of undefined value %" + tok_.str + didYouMean(tok_.str, names, "%"));
    }
    v = it->second.first;
  } else if (tok_.is(Token::ParamRef)) {
    if (bodyDepth_ > 0)
      return errorAt(tok_, "a region cannot use parameter @" + tok_.str +
                               " directly; pass it to the op as an operand");
    auto it = params_.find(tok_.str);
    if (it == params_.end()) {
      std::vector<std::string> names;
      for (const auto &entry : params_) names.push_back(entry.first);
      return errorAt(tok_,
                     "use of undefined parameter @" + tok_.str + didYouMean(tok_.str, names, "@"));
    }
    v = it->second.first->value;
  } else {
    return errorAt(tok_, "expected an operand (%value or @param), got " + tokenDescription(tok_));
  }
  advance();
  return true;
}

} // namespace textparse

std::unique_ptr<Module> parseModule(const std::string &text, const std::string &filename,
                                    SourceManager &sm, DiagnosticEngine &diags,
                                    TextPositions *positions) {
  const std::string &stored = sm.add(filename, text);
  textparse::Parser parser(stored, filename, diags, positions);
  return parser.parseModule();
}

} // namespace dtnn::ir
