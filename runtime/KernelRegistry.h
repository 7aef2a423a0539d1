// The kernel registry: every kernel of every backend, keyed by op, backend,
// element type and the layouts it takes, open to extensions. Each backend's
// registration function (registerReferenceBackend, ...) registers its
// kernels through registerKernel, the call a library adding a kernel uses
// too, so adding a kernel or a backend touches no central list; plan
// building looks kernels up here.
#pragma once

#include "ir/Error.h"
#include "runtime/Kernel.h"

#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace dtnn::runtime {

// The layouts a kernel takes.
enum class LayoutKind {
  // Plain buffers only.
  Plain,
  // Any one layout shared by all its operands and results (elementwise
  // kernels over whole buffers, padding included, such as the updates).
  Same,
  // Its backend's own layouts, which it chooses (and plain ones).
  Native,
  // Each operand in whatever layout it arrives (collectives, which move
  // whole buffers, padding included).
  Any,
};
const char *layoutKindName(LayoutKind k);

using KernelMaker = std::function<Expected<std::unique_ptr<Kernel>>(const KernelRequest &)>;
// Whether the kernel handles this op at these operand types (attributes
// included); when it does not, the next backend is asked.
using KernelClaim = std::function<bool(const ir::Op &, const std::vector<ir::TensorType> &)>;

struct KernelEntry {
  std::string op;
  std::string backend;
  ir::DType dtype; // of operand 0, or of result 0 for ops without operands
  LayoutKind layouts = LayoutKind::Plain;
  KernelMaker make;
  KernelClaim claims; // optional: claims every op of the key when empty
  std::string origin = "built-in"; // who registered it, for messages
};

class KernelRegistry {
public:
  // The process-wide registry.
  static KernelRegistry &get();

  // Adds an entry; one per (op, backend, dtype): a second fails, naming both registrants.
  Error add(KernelEntry e);
  // Adds the same maker for each dtype.
  Error add(const std::string &op, const std::string &backend, std::vector<ir::DType> dtypes,
            LayoutKind layouts, KernelMaker make, KernelClaim claims = nullptr,
            const std::string &origin = "built-in");
  // The entry of `backend` that claims `op` at these operand types, or null.
  const KernelEntry *find(const std::string &backend, const ir::Op &op,
                          const std::vector<ir::TensorType> &in,
                          const std::vector<ir::TensorType> &out) const;
  // Every entry, ordered by op, backend and dtype.
  std::vector<const KernelEntry *> all() const;

private:
  std::map<std::tuple<std::string, std::string, ir::DType>, KernelEntry> entries_;
};

// Adds a kernel to the process-wide registry (KernelRegistry::get().add).
Error registerKernel(KernelEntry e);

} // namespace dtnn::runtime
