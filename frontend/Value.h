// Compile-time values of the elaborator: numbers, strings, lists and tuples,
// tensors (IR values being built), and references to layers or blocks.
#pragma once

#include "ir/IR.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dtnn::frontend {

struct BlockDecl;
struct EvArg;

struct Val {
  // Poison marks the result of an expression that already failed; anything
  // computed from it fails silently, so one mistake gives one message.
  enum class Kind { Poison, None, Int, Float, Bool, String, List, Tuple, Tensor, Callable };

  Kind kind = Kind::None;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s; // string value, or the layer/block a Callable refers to
  ir::Value *tensor = nullptr;
  const BlockDecl *block = nullptr; // a Callable naming a block: the one its name meant where it was named
  // A configured Callable: the arguments it was given, applied with the call's own
  // (`batchnorm(eps=0.001)`, `partial(conv_bn, stride=2)`); null for a plain one.
  std::shared_ptr<const std::vector<EvArg>> bound;
  SourceLoc origin; // where the value was produced
  // A Float from a '/' of two ints (13 / 2 is 6.5): its dividend and divisor,
  // shown where an int was wanted, with the fix ('//').
  std::optional<std::pair<int64_t, int64_t>> quotient;

  static Val poison() { return make(Kind::Poison); }
  static Val none(SourceLoc at = {}) { return make(Kind::None, std::move(at)); }
  static Val integer(int64_t v, SourceLoc at = {}) {
    Val x = make(Kind::Int, std::move(at));
    x.i = v;
    return x;
  }
  static Val number(double v, SourceLoc at = {}) {
    Val x = make(Kind::Float, std::move(at));
    x.f = v;
    return x;
  }
  static Val boolean(bool v, SourceLoc at = {}) {
    Val x = make(Kind::Bool, std::move(at));
    x.b = v;
    return x;
  }
  static Val string(std::string v, SourceLoc at = {}) {
    Val x = make(Kind::String, std::move(at));
    x.s = std::move(v);
    return x;
  }
  static Val tensorOf(ir::Value *v, SourceLoc at) {
    Val x = make(Kind::Tensor, std::move(at));
    x.tensor = v;
    return x;
  }
  static Val callable(std::string name, SourceLoc at = {}) {
    Val x = make(Kind::Callable, std::move(at));
    x.s = std::move(name);
    return x;
  }

  bool isPoison() const { return kind == Kind::Poison; }
  bool isNumber() const { return kind == Kind::Int || kind == Kind::Float; }
  bool isSequence() const { return kind == Kind::List || kind == Kind::Tuple; }
  double asDouble() const { return kind == Kind::Int ? static_cast<double>(i) : f; }
  // The items of a list or tuple (empty for other kinds). Copies of a sequence share them.
  const std::vector<Val> &items() const;
  // How deeply sequences nest in this value: 0 for a scalar, 1 for a list of scalars.
  uint32_t depth() const { return depth_; }

private:
  friend class SequenceBudget;
  std::shared_ptr<const std::vector<Val>> items_;
  uint32_t depth_ = 0;

  static Val make(Kind k, SourceLoc at = {}) {
    Val x;
    x.kind = k;
    x.origin = std::move(at);
    return x;
  }
};

// An evaluated call argument.
struct EvArg {
  std::string name; // empty when positional
  SourceLoc loc;
  Val value;
};

// Makes lists and tuples within the elaborator's bounds on compile-time memory: the
// items alive at once, over all sequences, and how deeply they nest.
class SequenceBudget {
public:
  static constexpr size_t kMaxLiveItems = 1'000'000;
  static constexpr uint32_t kMaxDepth = 256;

  // The sequence, or a failure saying which bound it would break.
  Expected<Val> make(Val::Kind kind, std::vector<Val> items, SourceLoc at);

private:
  std::shared_ptr<size_t> live_ = std::make_shared<size_t>(0);
};

// The kind of a value as the language names it: int, float, tensor, ...
const char *kindName(Val::Kind k);
// A short description for messages: "int 3", "tensor f32[?,10]", "list of 2".
std::string describe(const Val &v);

} // namespace dtnn::frontend
