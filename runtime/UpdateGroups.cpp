#include "runtime/UpdateGroups.h"

namespace dtnn::runtime {

Expected<UpdateGroups> updateGroups(const KernelRequest &r) {
  int64_t k = r.op.attrs().getInt("tensors"), s = r.op.attrs().getInt("states");
  UpdateGroups g;
  if (k < 1 || s < 0 || r.in.size() < size_t(k) * size_t(2 + s))
    return Error::make("fused_update: its attributes do not fit its " +
                       std::to_string(r.in.size()) + " operands");
  g.tensors = size_t(k);
  g.width = size_t(2 + s);
  g.coefficients = r.in.size() - g.tensors * g.width;
  g.descs = r.in;
  for (size_t t = 0; t < g.tensors; ++t) {
    const BufferDesc &param = r.in[g.member(t, 0)];
    for (size_t i = 0; i < g.width; ++i) g.descs[g.member(t, i)] = param;
    g.elements.push_back(int64_t(param.bytes / ir::dtypeSize(param.type.dtype)));
  }
  for (size_t c = 0; c < g.coefficients; ++c)
    g.descs[g.coefficient(c)] = BufferDesc::plain(r.in[g.coefficient(c)].type);
  return g;
}

} // namespace dtnn::runtime
