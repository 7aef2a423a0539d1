// Appends ops to a graph by op name: fills default attributes, runs the op's
// shape rule to get the result types, and stamps each op with the builder's
// current location. Passes and gradient rules build IR through it.
#pragma once

#include "ir/IR.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dtnn::ir {

class Builder {
public:
  // Appends at the end of `g`, or before op position `insertAt` when given.
  explicit Builder(Graph &g, Location loc = {});

  Graph &graph() { return g_; }
  const Location &loc() const { return loc_; }
  void setLoc(Location l) { loc_ = std::move(l); }
  // Subsequent ops go before the op now at position `pos`; -1 appends.
  void setInsertPoint(long pos) { insertAt_ = pos; }

  // Appends op `name`; returns its results, or an empty vector after
  // recording the failure for takeError() (unknown op, or a shape rule that
  // fails).
  std::vector<Value *> create(const std::string &name, std::vector<Value *> operands,
                              AttrMap attrs = {});
  // Same, for an op with exactly one result; null on error.
  Value *create1(const std::string &name, std::vector<Value *> operands, AttrMap attrs = {});
  // Same, returning the op itself: for an in-place update, whose results are
  // the new versions of the operands it writes. Null on error.
  Op *createOp(const std::string &name, std::vector<Value *> operands, AttrMap attrs = {});
  // Same, for an op that holds a region (OpDef::hasBody): `body` becomes it.
  Op *createWithBody(const std::string &name, std::vector<Value *> operands,
                     std::unique_ptr<Graph> body, AttrMap attrs = {});

  // Moves out the last failure, as "op: message"; success when there is none
  // (or it was taken already). A failure nobody takes is dropped with the
  // builder.
  Error takeError();

private:
  Op *append(const std::string &name, std::vector<Value *> operands, AttrMap attrs,
             std::unique_ptr<Graph> body = nullptr);

  Graph &g_;
  Location loc_;
  long insertAt_ = -1;
  // The message of the last failure; kept as text rather than as an Error so
  // that one nobody takes does not count as unchecked.
  std::optional<std::string> error_;
};

// Makes an AttrMap from name/value pairs: attrs({{"axis", int64_t{1}}}).
AttrMap attrs(std::initializer_list<std::pair<std::string, AttrValue>> entries);

} // namespace dtnn::ir
