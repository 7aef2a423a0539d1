// oneDNN kernels of the binary arithmetic ops (add, sub, mul, div) and of
// concat. oneDNN's binary primitive broadcasts its second operand only, so
// an op whose first operand broadcasts is claimed only when it commutes (add,
// mul: the operands swap); the others go to the reference backend. Operands
// of the result's shape share the first one's layout. add's fused activation
// is an eltwise post-op.
#include "backends/onednn/Primitives.h"

namespace dtnn::onednn {

namespace {

using dnnl::algorithm;

algorithm binaryAlgorithm(const std::string &op) {
  if (op == "add") return algorithm::binary_add;
  if (op == "sub") return algorithm::binary_sub;
  if (op == "mul") return algorithm::binary_mul;
  return algorithm::binary_div;
}

bool commutes(const std::string &op) { return op == "add" || op == "mul"; }

// `t`'s dims right-aligned to `rank` with leading ones (numpy broadcasting).
memory::dims alignedDims(const ir::TensorType &t, size_t rank) {
  memory::dims d(rank - t.rank(), 1);
  for (int64_t x : t.dims) d.push_back(x);
  return d;
}

class Binary : public PrimitiveKernel {
public:
  explicit Binary(const KernelRequest &r) : PrimitiveKernel(r) {
    const ir::TensorType &y = r.out[0];
    size_t full = r.in[0].type == y ? 0 : 1, other = 1 - full; // full: src0
    memory::dims yd = dimsOf(y);
    memory::desc src0 = descOf(r.in[full], yd);
    memory::desc src1 = r.in[other].type == y ? src0
                                              : plainDesc(alignedDims(r.in[other].type, y.rank()),
                                                          dataTypeOf(r.in[other].type.dtype));
    dnnl::binary::desc d(binaryAlgorithm(r.op.name()), src0, src1, src0);
    dnnl::binary::primitive_desc pd(d, withFusedActivation(userScratchpad(), r.op), engine());
    setDesc(pd);
    use(DNNL_ARG_SRC_0, full, pd.src0_desc());
    use(DNNL_ARG_SRC_1, other, pd.src1_desc());
    give(DNNL_ARG_DST, 0, pd.dst_desc());
  }
};

// Claims a binary op when its first operand has the result's type, or it
// commutes and its second one does.
bool claimsBinary(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  if (in[0].dtype != in[1].dtype) return false;
  std::vector<ir::TensorType> t = in;
  ir::InferCtx ctx{t, op.attrs(), {}, {}};
  if (ir::inferResultTypes(op.def(), ctx)) return false;
  if (!claimsFusedActivation(op, in)) return false;
  return in[0] == ctx.results[0] || (commutes(op.name()) && in[1] == ctx.results[0]);
}

// y = concat(inputs...) along the axis, in a layout oneDNN chooses.
class Concat : public PrimitiveKernel {
public:
  explicit Concat(const KernelRequest &r) : PrimitiveKernel(r) {
    int64_t axis = r.op.attrs().getInt("axis");
    if (axis < 0) axis += static_cast<int64_t>(r.out[0].rank());
    std::vector<memory::desc> srcs;
    for (const BufferDesc &d : r.in) srcs.push_back(descOf(d, dimsOf(d.type)));
    dnnl::concat::primitive_desc pd(static_cast<int>(axis), srcs, engine(), userScratchpad());
    setDesc(pd);
    for (size_t i = 0; i < r.in.size(); ++i)
      use(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), i, pd.src_desc(static_cast<int>(i)));
    give(DNNL_ARG_DST, 0, pd.dst_desc());
  }
};

} // namespace

void registerBinaryKernels(KernelList &r) {
  for (const char *op : {"add", "sub", "mul", "div"})
    add(r, op, maker<Binary>(), claimsBinary, withBf16());
  add(r, "concat", maker<Concat>(), nullptr, withBf16());
}

} // namespace dtnn::onednn
