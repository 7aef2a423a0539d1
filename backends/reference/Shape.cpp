// Reference kernels of the ops declared in ir/ops/Shape.cpp. They move
// bytes, so every element type works: reshapes are copies, and concat,
// slice and transpose index by element size.
#include "backends/reference/KernelUtil.h"

#include <cstring>
#include <vector>

namespace dtnn::reference {

namespace {

size_t elemSize(const TensorView &v) { return ir::dtypeSize(v.type.dtype); }

size_t bytesOf(const TensorView &v) { return static_cast<size_t>(v.numel()) * elemSize(v); }

// flatten, reshape, reshape_like: the same elements in the same order.
void copyKernel(const KernelArgs &a) {
  if (a.out[0].data != a.in[0].data) std::memcpy(a.out[0].data, a.in[0].data, bytesOf(a.in[0]));
}

// Splits `v` at `axis` into [outer, dim, inner] (inner in bytes).
struct Split {
  int64_t outer = 1, dim = 1;
  size_t innerBytes = 1;
};

Split splitAt(const TensorView &v, int64_t axisAttr) {
  int64_t rank = static_cast<int64_t>(v.rank());
  int64_t axis = axisAttr < 0 ? axisAttr + rank : axisAttr;
  Split s;
  s.innerBytes = elemSize(v);
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis)
      s.outer *= v.dim(d);
    else if (d == axis)
      s.dim = v.dim(d);
    else
      s.innerBytes *= static_cast<size_t>(v.dim(d));
  }
  return s;
}

// Copies, for each outer index, `rows` rows of the source at row `srcRow`
// to the destination at row `dstRow`.
void copyRows(const Split &src, const Split &dst, char *to, const char *from, int64_t srcRow,
              int64_t dstRow, int64_t rows) {
  size_t chunk = static_cast<size_t>(rows) * src.innerBytes;
  parallelFor(src.outer, [&](int64_t o) {
    std::memcpy(to + (o * dst.dim + dstRow) * dst.innerBytes,
                from + (o * src.dim + srcRow) * src.innerBytes, chunk);
  });
}

void concatKernel(const KernelArgs &a) {
  int64_t axis = a.op->attrs().getInt("axis");
  Split out = splitAt(a.out[0], axis);
  int64_t row = 0;
  for (const TensorView &in : a.in) {
    Split s = splitAt(in, axis);
    copyRows(s, out, a.out[0].as<char>(), in.as<char>(), 0, row, s.dim);
    row += s.dim;
  }
}

void sliceKernel(const KernelArgs &a) {
  const ir::AttrMap &at = a.op->attrs();
  int64_t axis = at.getInt("axis"), begin = at.getInt("begin");
  Split in = splitAt(a.in[0], axis), out = splitAt(a.out[0], axis);
  copyRows(in, out, a.out[0].as<char>(), a.in[0].as<char>(), begin, 0, out.dim);
}

// slice_backward %dy, %x: zeros with dy at [begin, end) along axis.
void sliceBackwardKernel(const KernelArgs &a) {
  const ir::AttrMap &at = a.op->attrs();
  int64_t axis = at.getInt("axis"), begin = at.getInt("begin");
  std::memset(a.out[0].data, 0, bytesOf(a.out[0]));
  Split dy = splitAt(a.in[0], axis), dx = splitAt(a.out[0], axis);
  copyRows(dy, dx, a.out[0].as<char>(), a.in[0].as<char>(), 0, begin, dy.dim);
}

// Transposes with elements moved as E (an unsigned integer of the element's
// size): each output row gathers from the input with the stride of the
// input dimension that becomes the last output dimension.
template <typename E> void transposeAs(const KernelArgs &a) {
  const std::vector<int64_t> &perm = a.op->attrs().getInts("perm");
  const TensorView &in = a.in[0], &out = a.out[0];
  size_t rank = perm.size();
  if (rank == 0) {
    *out.as<E>() = *in.as<E>();
    return;
  }
  std::vector<int64_t> inStride(rank, 1), stride(rank);
  for (size_t d = rank - 1; d-- > 0;) inStride[d] = inStride[d + 1] * in.dim(d + 1);
  for (size_t d = 0; d < rank; ++d) stride[d] = inStride[perm[d]];
  int64_t inner = out.dim(rank - 1), innerStride = stride[rank - 1];
  int64_t rows = inner == 0 ? 0 : out.numel() / inner;
  const E *src = in.as<E>();
  E *dst = out.as<E>();
  parallelFor(rows, [&](int64_t r) {
    int64_t off = 0, rest = r;
    for (size_t d = rank - 1; d-- > 0;) {
      off += (rest % out.dim(d)) * stride[d];
      rest /= out.dim(d);
    }
    E *row = dst + r * inner;
    for (int64_t j = 0; j < inner; ++j) row[j] = src[off + j * innerStride];
  });
}

void transposeKernel(const KernelArgs &a) {
  switch (elemSize(a.in[0])) {
  case 1: transposeAs<uint8_t>(a); break;
  case 2: transposeAs<uint16_t>(a); break;
  case 4: transposeAs<uint32_t>(a); break;
  default: transposeAs<uint64_t>(a); break;
  }
}

} // namespace

void registerShapeKernels(KernelTable &t) {
  t.add("flatten", copyKernel);
  t.add("reshape", copyKernel);
  t.add("reshape_like", copyKernel);
  t.add("concat", concatKernel);
  t.add("slice", sliceKernel);
  t.add("slice_backward", sliceBackwardKernel);
  t.add("transpose", transposeKernel);
}


} // namespace dtnn::reference
