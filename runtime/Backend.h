// The backend interface: a backend owns device memory and binds a kernel to
// each op of a plan for the op's concrete types. The executor only talks to
// this interface, so the reference, oneDNN, JIT and CUDA backends plug in
// without changes to it.
#pragma once

#include "ir/Error.h"
#include "ir/IR.h"
#include "runtime/Tensor.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dtnn::runtime {

// What a kernel sees when it runs: the op (for its attributes) and views of
// its operands and results, all with static types. Update ops write their
// parameter and state operands in place.
struct KernelArgs {
  const ir::Op &op;
  std::vector<TensorView> in;
  std::vector<TensorView> out;
};

// A kernel bound to one op at concrete types; backends may precompute
// (primitive descriptors, JIT code) when binding.
class Kernel {
public:
  virtual ~Kernel();
  virtual void run(const KernelArgs &args) = 0;
};

struct BackendOptions {
  int threads = 0; // 0: the backend's default (all cores)
};

class Backend {
public:
  virtual ~Backend();
  // The name users select it by: `dtnn-run --backend NAME`.
  virtual std::string_view name() const = 0;
  // Binds a kernel for `op` with these operand and result types; an error
  // names the op when the backend cannot run it.
  virtual Expected<std::unique_ptr<Kernel>> bind(const ir::Op &op,
                                                 const std::vector<ir::TensorType> &in,
                                                 const std::vector<ir::TensorType> &out) = 0;

  // Device memory, zero-filled on allocation; host memory for CPU backends.
  virtual void *allocate(size_t bytes) = 0;
  // Bytes of memory the backend allocates from (host or device), or 0 when
  // unknown; runs that would need more are refused before they start.
  virtual uint64_t memoryBytes() const { return 0; }
  virtual void release(void *p) = 0;
  virtual void copyToDevice(void *dst, const void *src, size_t bytes) = 0;
  virtual void copyToHost(void *dst, const void *src, size_t bytes) = 0;
  // Waits until every kernel launched so far has finished.
  virtual void synchronize() {}
};

} // namespace dtnn::runtime
