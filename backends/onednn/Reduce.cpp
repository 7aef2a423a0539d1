#include "backends/onednn/Primitives.h"

#include <string>

namespace dtnn::onednn {

bool isReference(const dnnl::primitive_desc_base &pd) {
  return std::string(pd.impl_info_str()).find("ref") != std::string::npos;
}

SumToChannels::SumToChannels(const KernelRequest &r) : PrimitiveKernel(r) {
  memory::dims dims = dimsOf(r.in[0].type);
  memory::dims to(dims.size(), 1);
  to[1] = dims[1];
  memory::desc dst = plainDesc(to);
  // A reduction takes its source as it is: in the layout it arrives in.
  memory::desc src = descOf(r.in[0], dims);
  dnnl::reduction::primitive_desc pd(
      dnnl::reduction::desc(dnnl::algorithm::reduction_sum, src, dst, 0.f, 0.f),
      userScratchpad(), engine());
  setDesc(pd);
  use(DNNL_ARG_SRC, 0, pd.src_desc());
  argOut(DNNL_ARG_DST, 0, dst);
}

} // namespace dtnn::onednn
