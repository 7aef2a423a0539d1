// The gradient of a bias: dy summed over every dim but the channels. oneDNN
// 2.6 runs its reduction primitive with reference code on blocked layouts
// (milliseconds for a LeNet layer), so this kernel sums itself: over the
// plain layout, or over oneDNN's channel-blocked one (aBcd8b, aBcd16b, ...),
// a block of channels per parallel iteration, in double, so the result does
// not depend on the thread count.
#include "backends/onednn/Primitives.h"

#include <map>
#include <string>

namespace dtnn::onednn {

bool isReference(const dnnl::primitive_desc_base &pd) {
  return std::string(pd.impl_info_str()).find("ref") != std::string::npos;
}

memory::desc sameLayout(const memory::desc &like, const memory::dims &dims) {
  using tag = memory::format_tag;
  static const std::map<std::string, tag> tags = {
      {"acb", tag::acb},         {"aBc8b", tag::aBc8b},       {"aBc16b", tag::aBc16b},
      {"acdb", tag::acdb},       {"aBcd8b", tag::aBcd8b},     {"aBcd16b", tag::aBcd16b},
      {"acdeb", tag::acdeb},     {"aBcde8b", tag::aBcde8b},   {"aBcde16b", tag::aBcde16b}};
  std::string t = tagOf(like);
  auto it = tags.find(t);
  if (it == tags.end() || dims.size() != size_t(like.data.ndims))
    return plainDesc(dims, like.data_type());
  return memory::desc(dims, like.data_type(), it->second);
}

namespace {

// The channel block of a layout that blocks dim 1 only, with the other dims
// in order (aBcd16b -> 16); 1 for plain; 0 for other layouts.
int64_t channelBlock(const BufferDesc &d) {
  if (d.layout.isPlain()) return 1;
  if (d.layout.backend() != kBackendName) return 0;
  const dnnl_memory_desc_t &md = d.layout.descAs<memory::desc>()->data;
  if (md.format_kind != dnnl_blocked) return 0;
  const dnnl_blocking_desc_t &b = md.format_desc.blocking;
  if (b.inner_nblks != 1 || b.inner_idxs[0] != 1) return 0;
  std::string want = "aB";
  for (int i = 2; i < md.ndims; ++i) want += static_cast<char>('a' + i);
  if (b.inner_blks[0] > 64) return 0;
  return d.layout.tag() == want + std::to_string(b.inner_blks[0]) + "b" ? b.inner_blks[0] : 0;
}

} // namespace

SumToChannels::SumToChannels(const KernelRequest &r) : Kernel(r) {
  block_ = channelBlock(r.in[0]);
  if (block_ > 0) in_[0] = r.in[0];
  else block_ = 1; // wants it plain
  const ir::TensorType &t = r.in[0].type;
  n_ = t.dims[0];
  c_ = t.dims[1];
  spatial_ = t.staticElements() / (n_ * c_);
}

Error SumToChannels::run(const KernelArgs &a, runtime::ExecContext &) {
  const float *dy = a.in[0].as<float>();
  float *out = a.out[0].as<float>();
  int64_t b = block_, blocks = (c_ + b - 1) / b, n = n_, s = spatial_;
#pragma omp parallel for schedule(static)
  for (int64_t cb = 0; cb < blocks; ++cb) {
    double sum[64] = {};
    for (int64_t i = 0; i < n; ++i) {
      const float *p = dy + (i * blocks + cb) * s * b;
      for (int64_t k = 0; k < s; ++k)
        for (int64_t j = 0; j < b; ++j) sum[j] += p[k * b + j];
    }
    for (int64_t j = 0; j < b && cb * b + j < c_; ++j) out[cb * b + j] = static_cast<float>(sum[j]);
  }
  return Error::success();
}

} // namespace dtnn::onednn
