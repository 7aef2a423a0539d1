// The textual IR parser, part two: attribute lists and values, tensor types,
// source locations and the module's train line (TextParserImpl.h).
#include "ir/TextParserImpl.h"

#include "ir/RunSettings.h"

#include <limits>

namespace dtnn::ir::textparse {

namespace {

// The kind name with an indefinite article: "an int list", "a string".
std::string kindPhrase(AttrKind k) {
  std::string name = attrKindName(k);
  return (name[0] == 'i' ? "an " : "a ") + name;
}

} // namespace

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
  if (!dtype) {
    std::vector<std::string> names = dtypeNames();
    names.push_back("token");
    return errorAt(tok_, "unknown element type '" + name + "'" + didYouMean(name, names));
  }
  t.dtype = *dtype;
  t.dims.clear();
  advance();
  if (t.isToken()) return true;
  if (!expect(Token::LBracket, "'[' and the dimensions after the element type")) return false;
  while (!tok_.is(Token::RBracket)) {
    if (tok_.is(Token::Question)) {
      // `?` is the batch size N; `?*k` is k·N.
      t.dims.push_back(kDynamic);
      advance();
      if (tok_.is(Token::Star)) {
        advance();
        if (!tok_.is(Token::Integer) || tok_.intValue < 1 || tok_.intValue > kMaxDim)
          return errorAt(tok_, "expected a multiple of the batch size from 1 to 2^40 after '?*', "
                               "got " + tokenDescription(tok_));
        t.dims.back() = batchDim(tok_.intValue);
        advance();
      }
    } else if (tok_.is(Token::Integer)) {
      if (tok_.intValue < 0)
        return errorAt(tok_, "dimensions must be non-negative, '?' or '?*k', got " +
                                 std::string(tok_.spelling));
      if (tok_.intValue > kMaxDim)
        return errorAt(tok_, "dimension " + std::string(tok_.spelling) +
                                 " is larger than the largest, 2^40 (" + std::to_string(kMaxDim) + ")");
      t.dims.push_back(tok_.intValue);
      advance();
    } else {
      return errorAt(tok_,
                     "expected a dimension (an integer or '?'), got " + tokenDescription(tok_));
    }
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

} // namespace dtnn::ir::textparse
