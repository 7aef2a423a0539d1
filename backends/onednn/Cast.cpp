// oneDNN kernel of cast (ir/ops/Cast.cpp) between f32 and bf16: a reorder that
// keeps the layout the operand arrives in and changes the element type only
// (oneDNN rounds to nearest even, as the reference does).
#include "backends/onednn/Primitives.h"

namespace dtnn::onednn {

namespace {

// `md` with element type `dt`: the same dims, blocks and strides (in elements).
memory::desc withDataType(const memory::desc &md, memory::data_type dt) {
  memory::desc out = md;
  out.data.data_type = memory::convert_to_c(dt);
  return out;
}

class Cast : public PrimitiveKernel {
public:
  explicit Cast(const KernelRequest &r) : PrimitiveKernel(r) {
    memory::desc from = descOf(r.in[0], dimsOf(r.in[0].type));
    memory::desc to = withDataType(from, dataTypeOf(r.out[0].dtype));
    setDesc(dnnl::reorder::primitive_desc(engine(), from, engine(), to, userScratchpad()));
    use(DNNL_ARG_FROM, 0, from);
    give(DNNL_ARG_TO, 0, to);
  }
};

// Casts between f32 and bf16; f64 goes to the reference backend.
bool claimsCast(const ir::Op &, const std::vector<ir::TensorType> &in) {
  return in[0].dtype == ir::DType::F32 || in[0].dtype == ir::DType::BF16;
}

} // namespace

void registerCastKernels(KernelList &r) {
  add(r, "cast", maker<Cast>(),
      [](const ir::Op &op, const std::vector<ir::TensorType> &in) {
        const std::string to = op.attrs().getString("to");
        return claimsCast(op, in) && (to == "f32" || to == "bf16");
      },
      withBf16());
}

} // namespace dtnn::onednn
