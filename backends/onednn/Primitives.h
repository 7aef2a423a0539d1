// Helpers for the oneDNN kernel families: descriptors that let oneDNN choose
// the layout, the choice between the layouts operands arrive in and the ones
// oneDNN prefers, and kernels more than one family uses.
#pragma once

#include "backends/onednn/Common.h"

#include <string>
#include <utility>
#include <vector>

namespace dtnn::onednn {

// A descriptor of `dims` (f32 unless `dt` says otherwise) whose layout the primitive chooses.
inline memory::desc anyDesc(const memory::dims &dims,
                            memory::data_type dt = memory::data_type::f32) {
  return memory::desc(dims, dt, memory::format_tag::any);
}

// A descriptor of `dims` (and `like`'s rank) in `like`'s layout where that
// is channels-last or channels blocked by 8 or 16 (acdb, aBcd16b, and their
// 3-d and 5-d forms), else plain.
memory::desc sameLayout(const memory::desc &like, const memory::dims &dims);

// Whether a primitive descriptor runs oneDNN's reference (slow) code.
bool isReference(const dnnl::primitive_desc_base &pd);

// An operand as it arrives, with the dims its primitive gives it.
using Arriving = std::pair<const BufferDesc *, memory::dims>;

// Makes a primitive descriptor with `make`, given one memory descriptor per
// arriving operand: first the layouts they arrive in where those are
// oneDNN's own (so no conversion is needed), else the layouts oneDNN
// prefers; the latter wins when the former fails or runs reference code
// where the latter does not.
template <typename PD, typename Make>
PD preferArriving(const std::vector<Arriving> &operands, Make make) {
  std::vector<memory::desc> arriving, any;
  bool native = false;
  for (const auto &[d, dims] : operands) {
    memory::data_type dt = dataTypeOf(d->type.dtype);
    any.push_back(anyDesc(dims, dt));
    native = native || d->layout.backend() == kBackendName;
    arriving.push_back(d->layout.backend() == kBackendName ? descOf(*d, dims) : anyDesc(dims, dt));
  }
  PD chosen = make(any);
  if (!native) return chosen;
  try {
    PD kept = make(arriving);
    if (!isReference(kept) || isReference(chosen)) return kept;
  } catch (const dnnl::error &) {
  }
  return chosen;
}

// The gradient of a bias: dy [N, K, ...] summed over every dim but the
// channels (1), into a plain [K] (conv2d_backward_bias, dense_backward_bias).
// It takes dy plain or in oneDNN's channel-blocked layouts (Reduce.cpp).
class SumToChannels : public runtime::Kernel {
public:
  explicit SumToChannels(const KernelRequest &r);
  Error run(const KernelArgs &args, runtime::ExecContext &ctx) override;

protected:
  // Sums a plain [rows, channels] instead.
  void setPlainRows(int64_t rows, int64_t channels) {
    block_ = 1;
    n_ = rows;
    c_ = channels;
    spatial_ = 1;
  }

private:
  int64_t block_ = 1, n_ = 1, c_ = 1, spatial_ = 1;
};

} // namespace dtnn::onednn
