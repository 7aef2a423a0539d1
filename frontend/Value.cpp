// Compile-time values: descriptions for messages, and sequences made within bounds.
#include "frontend/Value.h"

#include "ir/Attributes.h"

#include <algorithm>

namespace dtnn::frontend {

const std::vector<Val> &Val::items() const {
  static const std::vector<Val> none;
  return items_ ? *items_ : none;
}

namespace {

// Frees a sequence's items and takes them off the live count they were charged to.
struct ReleaseItems {
  std::shared_ptr<size_t> live;
  void operator()(const std::vector<Val> *items) const {
    *live -= items->size();
    delete items;
  }
};

} // namespace

Expected<Val> SequenceBudget::make(Val::Kind kind, std::vector<Val> items, SourceLoc at) {
  uint32_t depth = 0;
  for (const Val &x : items) depth = std::max(depth, x.depth());
  if (depth + 1 > kMaxDepth) {
    return Error::make("lists and tuples nest more than " + std::to_string(kMaxDepth) + " deep");
  }
  if (items.size() > kMaxLiveItems - *live_) {
    return Error::make("lists and tuples would hold more than " + std::to_string(kMaxLiveItems) +
                       " items at once (this one " + std::to_string(items.size()) + ")");
  }
  *live_ += items.size();
  Val x = Val::poison();
  x.kind = kind;
  x.origin = std::move(at);
  x.depth_ = depth + 1;
  x.items_ = std::shared_ptr<const std::vector<Val>>(new std::vector<Val>(std::move(items)),
                                                      ReleaseItems{live_});
  return x;
}

const char *kindName(Val::Kind k) {
  switch (k) {
  case Val::Kind::Poison: return "error";
  case Val::Kind::None: return "None";
  case Val::Kind::Int: return "int";
  case Val::Kind::Float: return "float";
  case Val::Kind::Bool: return "bool";
  case Val::Kind::String: return "string";
  case Val::Kind::List: return "list";
  case Val::Kind::Tuple: return "tuple";
  case Val::Kind::Tensor: return "tensor";
  case Val::Kind::Callable: return "layer";
  }
  return "?";
}

std::string describe(const Val &v) {
  switch (v.kind) {
  case Val::Kind::Int: return "int " + std::to_string(v.i);
  case Val::Kind::Float:
    if (v.quotient)
      return "float " + ir::formatDouble(v.f) + " (" + std::to_string(v.quotient->first) + " / " +
             std::to_string(v.quotient->second) + ": '/' divides exactly, '//' gives an int)";
    return "float " + ir::formatDouble(v.f);
  case Val::Kind::Bool: return v.b ? "bool true" : "bool false";
  case Val::Kind::String: return "string \"" + (v.s.size() > 30 ? v.s.substr(0, 27) + "..." : v.s) + "\"";
  case Val::Kind::List:
  case Val::Kind::Tuple: {
    // A short sequence of numbers shows them ("list [2, 3]"); others their length.
    const std::vector<Val> &items = v.items();
    std::string text;
    for (const Val &x : items) {
      if (!x.isNumber() || text.size() > 40) {
        text.clear();
        break;
      }
      text += (text.empty() ? "" : ", ") +
              (x.kind == Val::Kind::Int ? std::to_string(x.i) : ir::formatDouble(x.f));
    }
    if (!text.empty()) return std::string(kindName(v.kind)) + (v.kind == Val::Kind::List ? " [" + text + "]" : " (" + text + ")");
    return std::string(kindName(v.kind)) + " of " + std::to_string(items.size()) +
           (items.size() == 1 ? " item" : " items");
  }
  case Val::Kind::Tensor: return "tensor " + v.tensor->type().str();
  case Val::Kind::Callable: {
    std::string text = "layer '" + v.s + "'";
    if (!v.bound) return text;
    std::string args;
    for (const EvArg &a : *v.bound)
      args += (args.empty() ? "" : ", ") + (a.name.empty() ? "" : a.name + "=") + describe(a.value);
    return text + " configured with (" + args + ")";
  }
  default: return kindName(v.kind);
  }
}

} // namespace dtnn::frontend
