// oneDNN kernel of matmul (ir/ops/Matmul.cpp): one matmul primitive over
// plain operands. Batch dimensions are aligned right with leading ones, as
// oneDNN broadcasts a batch dimension of size 1 in either operand; a
// transposed operand is the same bytes described with its last two strides
// swapped, so no copy is made.
#include "backends/onednn/Primitives.h"

namespace dtnn::onednn {

namespace {

// The descriptor of a plain tensor of type `t` seen as a matrix operand of
// rank `rank`: leading dimensions of size 1 added, and the last two
// dimensions swapped (by their strides) when `transposed`.
memory::desc matrixView(const ir::TensorType &t, size_t rank, bool transposed) {
  memory::dims dims(rank - t.rank(), 1);
  for (int64_t d : t.dims) dims.push_back(d);
  memory::dims strides(rank, 1);
  for (size_t i = rank; i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(dims[i], 1);
  if (transposed) {
    std::swap(dims[rank - 1], dims[rank - 2]);
    std::swap(strides[rank - 1], strides[rank - 2]);
  }
  return memory::desc(dims, dataTypeOf(t.dtype), strides);
}

class Matmul : public PrimitiveKernel {
public:
  explicit Matmul(const KernelRequest &r) : PrimitiveKernel(r) {
    const ir::AttrMap &attrs = r.op.attrs();
    size_t rank = r.out[0].rank();
    memory::desc a = matrixView(r.in[0].type, rank, attrs.getBool("transpose_a"));
    memory::desc b = matrixView(r.in[1].type, rank, attrs.getBool("transpose_b"));
    memory::desc y = plainDesc(dimsOf(r.out[0]), dataTypeOf(r.out[0].dtype));
    dnnl::matmul::primitive_desc pd({a, b, y}, userScratchpad(), engine());
    setDesc(pd);
    argIn(DNNL_ARG_SRC, 0, a);
    argIn(DNNL_ARG_WEIGHTS, 1, b);
    argOut(DNNL_ARG_DST, 0, y);
  }
};

} // namespace

void registerMatmulKernels(KernelList &r) {
  add(r, "matmul", maker<Matmul>(), nullptr, withBf16());
}

} // namespace dtnn::onednn
