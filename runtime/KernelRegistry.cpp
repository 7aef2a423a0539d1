#include "runtime/KernelRegistry.h"

#include <cassert>

namespace dtnn::runtime {

const char *layoutKindName(LayoutKind k) {
  switch (k) {
  case LayoutKind::Plain: return "plain";
  case LayoutKind::Same: return "same";
  case LayoutKind::Native: return "native";
  case LayoutKind::Any: return "any";
  }
  return "?";
}

KernelRegistry &KernelRegistry::get() {
  static KernelRegistry registry;
  return registry;
}

void KernelRegistry::add(KernelEntry e) {
  auto key = std::make_tuple(e.op, e.backend, e.dtype);
  assert(!entries_.count(key) && "kernel registered twice");
  entries_.emplace(std::move(key), std::move(e));
}

void KernelRegistry::add(const std::string &op, const std::string &backend,
                         std::vector<ir::DType> dtypes, LayoutKind layouts, KernelMaker make,
                         KernelClaim claims) {
  for (ir::DType t : dtypes) add(KernelEntry{op, backend, t, layouts, make, claims});
}

const KernelEntry *KernelRegistry::find(const std::string &backend, const ir::Op &op,
                                        const std::vector<ir::TensorType> &in,
                                        const std::vector<ir::TensorType> &out) const {
  ir::DType t = !in.empty() ? in[0].dtype : !out.empty() ? out[0].dtype : ir::DType::F32;
  auto it = entries_.find(std::make_tuple(op.name(), backend, t));
  if (it == entries_.end()) return nullptr;
  if (it->second.claims && !it->second.claims(op, in)) return nullptr;
  return &it->second;
}

std::vector<const KernelEntry *> KernelRegistry::all() const {
  std::vector<const KernelEntry *> out;
  for (const auto &[key, e] : entries_) out.push_back(&e);
  return out;
}

} // namespace dtnn::runtime
