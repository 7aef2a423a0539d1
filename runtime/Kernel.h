// Kernels: the code a backend runs for one op of a plan (or one layout
// conversion), made once per plan for the op's static types and layouts.
// A kernel's life has three parts that follow the plan's stages: made
// during layout assignment, when it says which layouts it wants for its
// operands and gives its results; bound once buffers are assigned
// (primitives, descriptors, JIT code); then run, any number of times, with
// the execution context of the queue it was launched on.
#pragma once

#include "ir/Error.h"
#include "ir/IR.h"
#include "runtime/Layout.h"
#include "runtime/Tensor.h"

#include <memory>
#include <vector>

namespace dtnn::runtime {

class Backend;
class Communicator;
class Queue;

// The queue a kernel is launched on: the backend's compute queue, a copy
// queue (input staging), or the communication queue (collectives).
enum class QueueKind { Compute, Copy, Comm };
const char *queueKindName(QueueKind k);

// What a kernel sees when it runs: the op (for its attributes; null for a
// conversion), views of its operands and results, and its workspace. The
// new version of an operand the op writes in place is a result whose view
// is the operand's storage.
struct KernelArgs {
  const ir::Op *op = nullptr;
  std::vector<TensorView> in;
  std::vector<TensorView> out;
  void *workspace = nullptr;
};

// Where a kernel runs: its queue and the services it may reach.
// This rank's part of the step's global batch in a data-parallel run: its
// weight in averaged gradients (its samples over the global batch's; 0 for a
// rank that only holds a stand-in sample) and the position of its first
// sample in the global batch (so that dropout masks follow the sample, not
// the rank).
struct StepPart {
  double share = 1;
  int64_t offset = 0;
};

struct ExecContext {
  Queue &queue;
  Communicator *comm = nullptr;
  const StepPart *part = nullptr; // null outside an executor: one rank, share 1
  double share() const { return part ? part->share : 1.0; }
  int64_t offset() const { return part ? part->offset : 0; }
};

// What a kernel is made for: one op at static types, the buffers its
// operands arrive in (the producers' descriptors; a parameter whose layout
// is not fixed yet arrives plain), and the types of its results.
struct KernelRequest {
  const ir::Op &op;
  std::vector<BufferDesc> in;
  std::vector<ir::TensorType> out;
  Backend &backend;
};

class Kernel {
public:
  // A kernel whose operands and results are plain host buffers of these
  // types; a kernel that wants other layouts changes in_ and out_.
  Kernel(const std::vector<ir::TensorType> &in, const std::vector<ir::TensorType> &out);
  // The same for a request: its operand and result types.
  explicit Kernel(const KernelRequest &r);
  virtual ~Kernel();

  // The buffers the kernel wants its operands in; a producer that gives
  // another layout gets a conversion.
  const std::vector<BufferDesc> &operandDescs() const { return in_; }
  // The buffers of its own results (the new version of a written operand
  // keeps the operand's buffer).
  const std::vector<BufferDesc> &resultDescs() const { return out_; }
  // Scratch memory it needs while it runs, in bytes.
  virtual uint64_t workspaceBytes() const { return 0; }
  // Whether result r may share the storage of operand i (the op table's
  // reuse) for this kernel; kernels that cannot run in place say no.
  virtual bool allowsReuse(size_t operand, size_t result) const {
    (void)operand;
    (void)result;
    return true;
  }
  virtual QueueKind queue() const { return QueueKind::Compute; }
  // Whether its operands should lie one after another in memory, in order
  // (a collective then sends them as one buffer, without copies). Buffer
  // assignment honours it where every operand is a distinct arena value.
  virtual bool wantsContiguousOperands() const { return false; }

  // The address space bind() is expected to map for generated code, so that
  // a plan whose kernels would not fit under the address-space limit is
  // refused before any is bound (see ResourceLimits.h).
  virtual uint64_t codeBytes() const { return 0; }

  // Prepares to run (primitives, code); called once per plan after buffer
  // assignment.
  virtual Error bind() { return Error::success(); }
  // Runs once; failures come back as values.
  virtual Error run(const KernelArgs &args, ExecContext &ctx) = 0;

protected:
  std::vector<BufferDesc> in_, out_;
};

} // namespace dtnn::runtime
