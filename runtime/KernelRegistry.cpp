#include "runtime/KernelRegistry.h"

#include "ir/Registry.h"

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

Error KernelRegistry::add(KernelEntry e) {
  auto key = std::make_tuple(e.op, e.backend, e.dtype);
  if (auto it = entries_.find(key); it != entries_.end())
    return Error::make(ir::duplicateMessage("kernel", e.op + "' of backend '" + e.backend +
                                                          "' at '" + std::string(ir::dtypeName(e.dtype)),
                                            it->second.origin, e.origin));
  if (!e.make) return Error::make("kernel '" + e.op + "' of " + e.origin + " makes nothing");
  entries_.emplace(std::move(key), std::move(e));
  return Error::success();
}

Error KernelRegistry::add(const std::string &op, const std::string &backend,
                          std::vector<ir::DType> dtypes, LayoutKind layouts, KernelMaker make,
                          KernelClaim claims, const std::string &origin) {
  for (ir::DType t : dtypes)
    if (Error e = add(KernelEntry{op, backend, t, layouts, make, claims, origin})) return e;
  return Error::success();
}

Error registerKernel(KernelEntry e) { return KernelRegistry::get().add(std::move(e)); }

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
