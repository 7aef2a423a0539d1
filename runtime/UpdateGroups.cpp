#include "runtime/UpdateGroups.h"

#include "ir/ops/FusedUpdate.h"

namespace dtnn::runtime {

Expected<UpdateGroups> updateGroups(const KernelRequest &r) {
  std::optional<ir::UpdateGroupCounts> counts = ir::fusedUpdateGroups(r.op.attrs(), r.in.size());
  if (!counts)
    return Error::make("fused_update: its attributes do not fit its " +
                       std::to_string(r.in.size()) + " operands");
  UpdateGroups g;
  g.tensors = counts->tensors;
  g.width = counts->width();
  g.coefficients = counts->coefficients;
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
