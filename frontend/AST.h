// The abstract syntax tree of a .dtnn file. Every node keeps its source
// location. Pipes are desugared while building it: `a |> f(b)` becomes the
// call `f(a, b)` marked as piped.
#pragma once

#include "ir/Diagnostics.h"

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace dtnn::frontend {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// A call argument, positional (empty name) or named.
struct Arg {
  std::string name;
  SourceLoc loc;
  ExprPtr value;
};

struct Expr {
  enum class Kind { Int, Float, String, Bool, None, Name, Call, Unary, Binary, Index, Tuple, List, If };
  Kind kind;
  SourceLoc loc;
  int64_t intValue = 0;
  double floatValue = 0;
  bool boolValue = false;
  // Name, callee, string literal text, or operator spelling.
  std::string text;
  // Operands: unary/binary/index operands, tuple and list items, and for
  // `If` the condition, then-value and else-value.
  std::vector<ExprPtr> kids;
  // Call arguments; a piped call has the piped value as its first argument.
  std::vector<Arg> args;
  bool piped = false;

  Expr(Kind k, SourceLoc l) : kind(k), loc(std::move(l)) {}
};

// A binding target: a name, or a tuple of targets.
struct Pattern {
  std::string name; // empty for a tuple pattern
  SourceLoc loc;
  std::vector<Pattern> items;
};

struct Stmt;
using StmtList = std::vector<std::unique_ptr<Stmt>>;

struct Stmt {
  enum class Kind { Let, Var, Assign, For, Repeat, If, Return };
  Kind kind;
  SourceLoc loc;
  Pattern target;              // Let, Var, Assign (single name), For
  std::vector<ExprPtr> exprs;  // value; For: iterable; Repeat: count; If: condition; Return: values
  StmtList body;               // For, Repeat, If (then)
  StmtList elseBody;           // If

  Stmt(Kind k, SourceLoc l) : kind(k), loc(std::move(l)) {}
};

// A dimension of a declared tensor type: a size, or a symbolic name.
struct DimAst {
  int64_t size = 0;
  std::string symbol;
  SourceLoc loc;
};

struct TypeAst {
  std::string dtype;
  std::vector<DimAst> dims;
  SourceLoc loc;
};

struct BlockParam {
  std::string name;
  std::string kind; // optional annotation: int, float, bool, string, tensor, list, tuple
  SourceLoc loc;
  ExprPtr defaultValue;
};

struct BlockDecl {
  std::string name;
  SourceLoc loc;
  std::vector<BlockParam> params;
  StmtList body;
};

struct ModelInput {
  std::string name;
  SourceLoc loc;
  TypeAst type;
};

struct ModelDecl {
  std::string name;
  SourceLoc loc;
  std::vector<ModelInput> inputs;
  std::vector<TypeAst> results;
  StmtList body;
};

struct Setting {
  std::string key;
  SourceLoc loc;
  ExprPtr value;
};

struct TrainDecl {
  std::string model;
  SourceLoc loc;
  std::vector<Setting> settings;
};

struct ImportDecl {
  std::string path;
  SourceLoc loc;
};

// One parsed file.
struct FileAst {
  std::string path;
  std::vector<ImportDecl> imports;
  std::vector<std::unique_ptr<BlockDecl>> blocks;
  std::vector<std::unique_ptr<ModelDecl>> models;
  std::vector<std::unique_ptr<TrainDecl>> trains;
};

// Prints the tree, one node per line, indented, with line:col positions.
void printAst(const FileAst &file, std::ostream &os);

} // namespace dtnn::frontend
