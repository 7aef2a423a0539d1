// The shape ops on the device (ir/ops/Shape.cpp), as the reference moves
// their bytes (backends/reference/Shape.cpp): flatten, reshape and
// reshape_like copy the buffer unless the result already has the operand's
// storage; concat, slice and slice_backward move rows of bytes between the
// parts before and after the axis; transpose merges the dimensions that
// stay together and runs the tiled or the row-gather kernel
// (kernels/Shape.h). Every geometry is fixed when the kernel is made.
#include "backends/cuda/device/Device.h"
#include "backends/cuda/device/kernels/Shape.h"

#include <algorithm>
#include <string>

namespace dtnn::cuda {

namespace {

// The result is the operand's bytes: a copy on the device, or nothing when the result took the
// operand's storage.
class SameBytes final : public DeviceOp {
public:
  explicit SameBytes(const DeviceKernelSpec &s) : bytes_(runtime::byteSize(s.out[0].type)) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    if (bytes_ == 0 || a.out[0].data == a.in[0].data) return Error::success();
    return check(cudaMemcpyAsync(a.out[0].data, a.in[0].data, bytes_, cudaMemcpyDeviceToDevice, l.stream),
                 "cudaMemcpyAsync");
  }

private:
  size_t bytes_;
};

int64_t elemBytes(const ir::TensorType &t) { return int64_t(ir::dtypeSize(t.dtype)); }

// A type split at `axis` into the elements before it, its size and the bytes of one step along
// it, as the reference's splitAt.
struct Split {
  int64_t outer = 1, dim = 1, innerBytes = 1;
};

Split splitAt(const ir::TensorType &t, int64_t axisAttr) {
  int64_t rank = int64_t(t.rank());
  int64_t axis = axisAttr < 0 ? axisAttr + rank : axisAttr;
  Split s;
  s.innerBytes = elemBytes(t);
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis)
      s.outer *= t.dims[d];
    else if (d == axis)
      s.dim = t.dims[d];
    else
      s.innerBytes *= t.dims[d];
  }
  return s;
}

// concat: each input's rows copied to its offset along the axis of the result.
class Concat final : public DeviceOp {
public:
  explicit Concat(const DeviceKernelSpec &s) {
    int64_t axis = s.op->attrs().getInt("axis");
    Split out = splitAt(s.out[0].type, axis);
    int64_t row = 0;
    for (const runtime::BufferDesc &in : s.in) {
      Split p = splitAt(in.type, axis);
      RowCopy c;
      c.rows = p.outer;
      c.width = p.dim * p.innerBytes;
      c.srcPitch = c.width;
      c.dstPitch = out.dim * out.innerBytes;
      c.dstOffset = row * out.innerBytes;
      copies_.push_back(c);
      row += p.dim;
    }
  }

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    for (size_t i = 0; i < copies_.size(); ++i)
      if (Error e = check(launchCopyRows(a.in[i].data, a.out[0].data, copies_[i], l.stream), "concat"))
        return e;
    return Error::success();
  }

private:
  std::vector<RowCopy> copies_;
};

// The rows of slice(x) {axis, begin, end}: x's rows from `begin` along the axis, or, for
// slice_backward, where dy's rows go in the gradient.
RowCopy sliceRows(const ir::TensorType &whole, const ir::TensorType &part, const ir::AttrMap &at) {
  int64_t axis = at.getInt("axis"), begin = at.getInt("begin");
  Split w = splitAt(whole, axis), p = splitAt(part, axis);
  RowCopy c;
  c.rows = p.outer;
  c.width = p.dim * p.innerBytes;
  c.srcPitch = w.dim * w.innerBytes;
  c.dstPitch = c.width;
  c.srcOffset = begin * w.innerBytes;
  return c;
}

// slice %x: the rows [begin, end) along the axis.
class Slice final : public DeviceOp {
public:
  explicit Slice(const DeviceKernelSpec &s)
      : rows_(sliceRows(s.in[0].type, s.out[0].type, s.op->attrs())) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchCopyRows(a.in[0].data, a.out[0].data, rows_, l.stream), "slice");
  }

private:
  RowCopy rows_;
};

// slice_backward %dy, %x: zeros of x's type with dy's rows at [begin, end), every byte written
// once.
class SliceBackward final : public DeviceOp {
public:
  explicit SliceBackward(const DeviceKernelSpec &s) {
    RowCopy c = sliceRows(s.out[0].type, s.in[0].type, s.op->attrs());
    std::swap(c.srcPitch, c.dstPitch);
    std::swap(c.srcOffset, c.dstOffset);
    rows_ = c;
  }

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchPadRows(a.in[0].data, a.out[0].data, rows_, l.stream), "slice_backward");
  }

private:
  RowCopy rows_;
};

// The transpose of `dims` by `perm` with the dimensions of size 1 dropped and the input
// dimensions that stay adjacent in the result merged into one, so that only real moves remain
// (an identity becomes rank 0 or 1, a plain copy).
TransposeGeom mergedTranspose(const std::vector<int64_t> &dims, const std::vector<int64_t> &perm,
                              int64_t bytes) {
  size_t n = dims.size();
  // The kept input dimensions, renumbered, in the result's order.
  std::vector<int64_t> renumber(n, -1), kept;
  for (size_t d = 0; d < n; ++d)
    if (dims[d] != 1) {
      renumber[d] = int64_t(kept.size());
      kept.push_back(dims[d]);
    }
  std::vector<int64_t> order;
  for (int64_t p : perm)
    if (renumber[p] >= 0) order.push_back(renumber[p]);
  // Runs of the result's dimensions that are consecutive input dimensions, by first input
  // dimension.
  std::vector<std::pair<int64_t, int64_t>> runs; // (first input dimension, last)
  for (int64_t d : order) {
    if (!runs.empty() && runs.back().second + 1 == d)
      runs.back().second = d;
    else
      runs.push_back({d, d});
  }
  std::vector<std::pair<int64_t, int64_t>> byInput = runs;
  std::sort(byInput.begin(), byInput.end());
  TransposeGeom g;
  g.rank = int(runs.size());
  g.elemBytes = bytes;
  for (size_t k = 0; k < byInput.size(); ++k) {
    int64_t size = 1;
    for (int64_t d = byInput[k].first; d <= byInput[k].second; ++d) size *= kept[d];
    g.dims[k] = size;
  }
  for (size_t i = 0; i < runs.size(); ++i)
    g.perm[i] = int(std::lower_bound(byInput.begin(), byInput.end(), runs[i]) - byInput.begin());
  return g;
}

// transpose %x {perm}: the merged permutation (see mergedTranspose).
class Transpose final : public DeviceOp {
public:
  explicit Transpose(const DeviceKernelSpec &s)
      : empty_(elementsOf(s.in[0].type) == 0),
        geom_(mergedTranspose(s.in[0].type.dims, s.op->attrs().getInts("perm"), elemBytes(s.in[0].type))) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    if (empty_) return Error::success();
    return check(launchTranspose(a.in[0].data, a.out[0].data, geom_, l.stream), "transpose");
  }

private:
  bool empty_;
  TransposeGeom geom_;
};

} // namespace

Expected<std::unique_ptr<DeviceKernel>> makeSameBytes(const DeviceKernelSpec &s) {
  return make<SameBytes>(s);
}

void registerShapeKernels(DeviceRegistry &r) {
  for (const char *kind : {"flatten", "reshape", "reshape_like"})
    r.add(kind, makeSameBytes); // the same bytes in the same order
  r.add("concat", [](const DeviceKernelSpec &s) { return make<Concat>(s); });
  r.add("slice", [](const DeviceKernelSpec &s) { return make<Slice>(s); });
  r.add("slice_backward", [](const DeviceKernelSpec &s) { return make<SliceBackward>(s); });
  r.add("transpose", [](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    if (s.in[0].type.rank() > size_t(kMaxTransposeRank))
      return Error::make("the cuda transpose takes at most " + std::to_string(kMaxTransposeRank) +
                         " dimensions, not " + std::to_string(s.in[0].type.rank()));
    return make<Transpose>(s);
  });
}

} // namespace dtnn::cuda
