// The module's parameters and buffers (weights, running statistics,
// optimizer state) in a backend's memory, by name. Plans of every graph of
// the module bind to the same storage, so a train step updates the weights
// the eval step reads.
#pragma once

#include "ir/IR.h"
#include "runtime/Backend.h"

#include <map>
#include <string>
#include <vector>

namespace dtnn::runtime {

class ParamStore {
public:
  // Allocates zero-filled storage for every parameter of `m`, whose types
  // must be static.
  ParamStore(const ir::Module &m, Backend &backend);
  // The bytes the storage of `m`'s parameters and buffers takes.
  static uint64_t bytesNeeded(const ir::Module &m);
  ~ParamStore();
  ParamStore(const ParamStore &) = delete;
  ParamStore &operator=(const ParamStore &) = delete;

  const ir::Module &module() const { return module_; }
  bool has(const std::string &name) const { return storage_.count(name) != 0; }
  // Device view of a parameter; the name must exist.
  TensorView view(const std::string &name) const;
  // Host copies in and out.
  Tensor read(const std::string &name) const;
  void write(const std::string &name, const Tensor &t);

private:
  const ir::Module &module_;
  Backend &backend_;
  std::map<std::string, TensorView> storage_;
};

} // namespace dtnn::runtime
