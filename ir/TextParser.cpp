// A recursive-descent parser for the textual IR. The grammar is flat (a
// module is a list of declarations, a graph a list of op lines, attribute
// lists hold scalars), so every rule is a loop and the call depth is bounded
// whatever the input. The parser stops at the first error. It takes result
// types as written; the verifier checks them against the shape rules.
#include "ir/TextParser.h"

#include "ir/RunSettings.h"

#include "ir/OpTable.h"
#include "ir/TextLexer.h"

#include <limits>
#include <map>

namespace dtnn::ir {

namespace {

// "; did you mean 'x'?" when a candidate is close to `name`, else "".
// `sigil` is prepended to the suggestion.
std::string didYouMean(const std::string &name, const std::vector<std::string> &candidates,
                       const char *sigil = "") {
  std::string best = closestMatch(name, candidates);
  return best.empty() ? "" : std::string("; did you mean '") + sigil + best + "'?";
}

// The kind name with an indefinite article: "an int list", "a string".
std::string kindPhrase(AttrKind k) {
  std::string name = attrKindName(k);
  return (name[0] == 'i' ? "an " : "a ") + name;
}

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

class Parser {
public:
  Parser(std::string_view text, const std::string &file, DiagnosticEngine &diags,
         TextPositions *positions)
      : lex_(text, file, diags), diags_(diags), positions_(positions) {
    tok_ = lex_.next();
  }

  std::unique_ptr<Module> parseModule();

private:
  void advance() { tok_ = lex_.next(); }
  // Reports `message` at `t` unless the lexer already reported it.
  bool errorAt(const Token &t, std::string message) {
    if (!t.is(Token::Error)) diags_.error(t.loc, std::move(message));
    return false;
  }
  bool errorWithNote(const Token &t, std::string message, const SourceLoc &prev) {
    Diagnostic d{Severity::Error, t.loc, std::move(message), {}};
    d.note(prev, "previous definition is here");
    diags_.report(d);
    return false;
  }
  // Consumes a token of kind `k`, or reports "expected <what>".
  bool expect(Token::Kind k, const char *what) {
    if (!tok_.is(k))
      return errorAt(tok_, std::string("expected ") + what + ", got " + tokenDescription(tok_));
    advance();
    return true;
  }
  // Requires the next token to start a new line (or end the input).
  bool expectLineEnd(const char *after) {
    if (tok_.is(Token::Eof) || tok_.is(Token::Error) || tok_.newlineBefore) return true;
    return errorAt(tok_, std::string("expected end of line after ") + after + ", got " +
                             tokenDescription(tok_));
  }

  bool parseTrainConfig();
  bool parseParam();
  bool parseGraph();
  bool parseOp(Graph &g);
  bool parseInputs(Graph &g, const char *what, const char *example, const char *short_);
  bool parseBody(const Token &opTok, std::unique_ptr<Graph> &body);
  bool parseBodyContents(const Token &opTok, Graph &body);
  bool parseOperand(Value *&v);
  bool parseAttrs(const OpDef &def, AttrMap &attrs);
  bool parseAttrValue(AttrValue &v);
  bool parseScalar(AttrValue &v);
  bool parseType(TensorType &t);
  bool parseLocation(Location &l);
  bool parseSourceLoc(SourceLoc &l);
  bool parseUInt32(uint32_t &v, const char *what);
  bool defineValue(const Token &t, Value *v);

  TextLexer lex_;
  DiagnosticEngine &diags_;
  TextPositions *positions_; // Filled when the caller asks where things were read.
  Token tok_;
  std::unique_ptr<Module> module_ = std::make_unique<Module>();
  std::map<std::string, std::pair<Param *, SourceLoc>> params_;
  std::map<std::string, SourceLoc> graphs_;
  // Values in scope in the current graph, with where they were defined.
  std::map<std::string, std::pair<Value *, SourceLoc>> values_;
  // How many region bodies enclose the op being read (none: a graph's op).
  int bodyDepth_ = 0;
};

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
  unsigned results = def->hasBody ? static_cast<unsigned>(resultToks.size())
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
    if (body->outputs().size() != results)
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

// trainConfig ::= 'train' '{' (IDENT '=' attrValue (',' IDENT '=' attrValue)*)? '}'
// The settings are checked against the run-settings schema (ir/RunSettings.h).
bool Parser::parseTrainConfig() {
  Token trainTok = tok_;
  advance();
  if (!expect(Token::LBrace, "'{' after 'train'")) return false;
  AttrMap &config = module_->trainConfig();
  while (!tok_.is(Token::RBrace)) {
    if (!tok_.is(Token::Ident))
      return errorAt(tok_, "expected a setting name, got " + tokenDescription(tok_));
    Token nameTok = tok_;
    std::string name(nameTok.spelling);
    if (config.find(name)) return errorAt(nameTok, "duplicate train setting '" + name + "'");
    advance();
    if (!expect(Token::Equal, "'=' after the setting name")) return false;
    AttrValue value;
    if (!parseAttrValue(value)) return false;
    config.set(name, std::move(value));
    if (!tok_.is(Token::Comma)) break;
    advance();
  }
  if (!expect(Token::RBrace, "',' or '}' in the train settings")) return false;
  if (auto settings = readRunSettings(config); !settings)
    return errorAt(trainTok, settings.error().message());
  return expectLineEnd("the train settings");
}

// attrs ::= '{' (IDENT '=' attrValue (',' IDENT '=' attrValue)*)? '}'
bool Parser::parseAttrs(const OpDef &def, AttrMap &attrs) {
  advance();
  while (!tok_.is(Token::RBrace)) {
    if (!tok_.is(Token::Ident))
      return errorAt(tok_, "expected an attribute name, got " + tokenDescription(tok_));
    Token nameTok = tok_;
    std::string name(nameTok.spelling);
    const AttrSpec *spec = def.findAttr(name);
    if (!spec) {
      if (def.attrs.empty())
        return errorAt(nameTok, "'" + def.name + "' takes no attributes, got '" + name + "'");
      std::vector<std::string> names;
      for (const AttrSpec &s : def.attrs) names.push_back(s.name);
      return errorAt(nameTok, "'" + def.name + "' has no attribute '" + name + "'" +
                                  didYouMean(name, names));
    }
    if (attrs.find(name)) return errorAt(nameTok, "duplicate attribute '" + name + "'");
    advance();
    if (!expect(Token::Equal, "'=' after the attribute name")) return false;
    Token valueTok = tok_;
    AttrValue value;
    if (!parseAttrValue(value)) return false;
    std::optional<AttrValue> coerced = coerceAttr(value, spec->kind);
    if (!coerced)
      return errorAt(valueTok, "attribute '" + name + "' of '" + def.name + "' expects " +
                                   kindPhrase(spec->kind) + ", got " +
                                   kindPhrase(attrKindOf(value)));
    attrs.set(name, std::move(*coerced));
    if (!tok_.is(Token::Comma)) break;
    advance();
  }
  return expect(Token::RBrace, "',' or '}' in the attribute list");
}

// attrValue ::= scalar | '[' (number (',' number)*)? ']'
bool Parser::parseAttrValue(AttrValue &v) {
  if (!tok_.is(Token::LBracket)) return parseScalar(v);
  advance();
  std::vector<double> floats;
  std::vector<int64_t> ints;
  bool anyFloat = false;
  while (!tok_.is(Token::RBracket)) {
    if (tok_.is(Token::LBracket)) return errorAt(tok_, "nested lists are not supported");
    Token elemTok = tok_;
    AttrValue elem;
    if (!parseScalar(elem)) return false;
    if (auto *i = std::get_if<int64_t>(&elem)) {
      ints.push_back(*i);
      floats.push_back(static_cast<double>(*i));
    } else if (auto *d = std::get_if<double>(&elem)) {
      anyFloat = true;
      floats.push_back(*d);
    } else {
      return errorAt(elemTok, "list elements must be numbers, got " + tokenDescription(elemTok));
    }
    if (!tok_.is(Token::Comma)) break;
    advance();
  }
  if (!expect(Token::RBracket, "',' or ']' in the list")) return false;
  if (anyFloat)
    v = std::move(floats);
  else
    v = std::move(ints);
  return true;
}

// scalar ::= INTEGER | FLOAT | 'true' | 'false' | 'nan' | 'inf' | '-' 'inf' | STRING
bool Parser::parseScalar(AttrValue &v) {
  switch (tok_.kind) {
  case Token::Integer: v = tok_.intValue; break;
  case Token::Float: v = tok_.floatValue; break;
  case Token::String: v = tok_.str; break;
  case Token::Minus:
    advance();
    if (!tok_.isIdent("inf"))
      return errorAt(tok_, "expected a number after '-', got " + tokenDescription(tok_));
    v = -std::numeric_limits<double>::infinity();
    break;
  case Token::Ident:
    if (tok_.spelling == "true" || tok_.spelling == "false") {
      v = tok_.spelling == "true";
      break;
    }
    if (tok_.spelling == "nan") {
      v = std::numeric_limits<double>::quiet_NaN();
      break;
    }
    if (tok_.spelling == "inf") {
      v = std::numeric_limits<double>::infinity();
      break;
    }
    [[fallthrough]];
  default: return errorAt(tok_, "expected an attribute value, got " + tokenDescription(tok_));
  }
  advance();
  return true;
}

// type ::= IDENT '[' (dim (',' dim)*)? ']' | 'token'    dim ::= INTEGER | '?'
bool Parser::parseType(TensorType &t) {
  if (!tok_.is(Token::Ident))
    return errorAt(tok_, "expected a tensor type like f32[?,10], got " + tokenDescription(tok_));
  std::string name(tok_.spelling);
  std::optional<DType> dtype = parseDType(name);
  if (!dtype)
    return errorAt(tok_, "unknown element type '" + name + "'" +
                             didYouMean(name, {"f32", "f64", "i32", "i64", "u8", "bool", "token"}));
  t.dtype = *dtype;
  t.dims.clear();
  advance();
  if (t.isToken()) return true;
  if (!expect(Token::LBracket, "'[' and the dimensions after the element type")) return false;
  while (!tok_.is(Token::RBracket)) {
    if (tok_.is(Token::Question)) {
      t.dims.push_back(kDynamic);
    } else if (tok_.is(Token::Integer)) {
      if (tok_.intValue < 0)
        return errorAt(tok_,
                       "dimensions must be non-negative or '?', got " + std::string(tok_.spelling));
      if (tok_.intValue > kMaxDim)
        return errorAt(tok_, "dimension " + std::string(tok_.spelling) +
                                 " is larger than the largest, 2^40 (" + std::to_string(kMaxDim) + ")");
      t.dims.push_back(tok_.intValue);
    } else {
      return errorAt(tok_,
                     "expected a dimension (an integer or '?'), got " + tokenDescription(tok_));
    }
    advance();
    if (!tok_.is(Token::Comma)) break;
    advance();
  }
  return expect(Token::RBracket, "',' or ']' in the dimensions");
}

// location ::= 'loc' '(' (sourceLoc | '[' sourceLoc (',' sourceLoc)* ']') ')'
bool Parser::parseLocation(Location &l) {
  advance();
  if (!expect(Token::LParen, "'(' after 'loc'")) return false;
  if (tok_.is(Token::LBracket)) {
    advance();
    while (true) {
      if (!parseSourceLoc(l.locs.emplace_back())) return false;
      if (!tok_.is(Token::Comma)) break;
      advance();
    }
    if (!expect(Token::RBracket, "',' or ']' in the location list")) return false;
  } else if (!parseSourceLoc(l.locs.emplace_back())) {
    return false;
  }
  return expect(Token::RParen, "')' after the location");
}

// sourceLoc ::= STRING ':' INTEGER ':' INTEGER
bool Parser::parseSourceLoc(SourceLoc &l) {
  if (!tok_.is(Token::String))
    return errorAt(tok_, "expected a quoted file name, got " + tokenDescription(tok_));
  l.file = tok_.str;
  advance();
  return expect(Token::Colon, "':' after the file name") && parseUInt32(l.line, "line") &&
         expect(Token::Colon, "':' after the line") && parseUInt32(l.col, "column");
}

bool Parser::parseUInt32(uint32_t &v, const char *what) {
  if (!tok_.is(Token::Integer) || tok_.intValue < 0 ||
      tok_.intValue > std::numeric_limits<uint32_t>::max())
    return errorAt(tok_,
                   std::string("expected a ") + what + " number, got " + tokenDescription(tok_));
  v = static_cast<uint32_t>(tok_.intValue);
  advance();
  return true;
}

} // namespace

std::unique_ptr<Module> parseModule(const std::string &text, const std::string &filename,
                                    SourceManager &sm, DiagnosticEngine &diags,
                                    TextPositions *positions) {
  const std::string &stored = sm.add(filename, text);
  Parser parser(stored, filename, diags, positions);
  return parser.parseModule();
}

} // namespace dtnn::ir
