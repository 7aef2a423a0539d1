#include "runtime/Kernel.h"

namespace dtnn::runtime {

const char *queueKindName(QueueKind k) {
  switch (k) {
  case QueueKind::Compute: return "compute";
  case QueueKind::Copy: return "copy";
  case QueueKind::Comm: return "comm";
  }
  return "?";
}

Kernel::Kernel(const std::vector<ir::TensorType> &in, const std::vector<ir::TensorType> &out) {
  for (const ir::TensorType &t : in) in_.push_back(BufferDesc::plain(t));
  for (const ir::TensorType &t : out) out_.push_back(BufferDesc::plain(t));
}

Kernel::Kernel(const KernelRequest &r) {
  for (const BufferDesc &d : r.in) in_.push_back(BufferDesc::plain(d.type));
  for (const ir::TensorType &t : r.out) out_.push_back(BufferDesc::plain(t));
}

Kernel::~Kernel() = default;

} // namespace dtnn::runtime
