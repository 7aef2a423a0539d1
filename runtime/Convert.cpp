#include "runtime/Convert.h"

#include "runtime/HostMemory.h"

#include <cstdlib>
#include <cstring>
#include <memory>

namespace dtnn::runtime {

Error convertBuffer(const BackendSet &backends, const BufferDesc &from, const void *src,
                    const BufferDesc &to, void *dst) {
  if (from == to) return Error::make("converting " + from.str() + " to itself");
  if (!from.layout.isPlain() && !to.layout.isPlain() &&
      from.layout.backend() != to.layout.backend()) {
    BufferDesc mid = BufferDesc::plain(from.type);
    std::unique_ptr<void, void (*)(void *)> tmp(allocateHostZeroed(mid.bytes), std::free);
    if (Error e = convertBuffer(backends, from, src, mid, tmp.get())) return e;
    return convertBuffer(backends, mid, tmp.get(), to, dst);
  }
  const Layout &native = from.layout.isPlain() ? to.layout : from.layout;
  Backend *owner = backends.find(native.backend());
  if (!owner) return Error::make("no backend of this run converts " + from.str() + " to " + to.str());
  auto kernel = owner->makeConversion(from, to);
  if (!kernel) return kernel.takeError();
  if (Error e = (*kernel)->bind()) return e;
  KernelArgs args;
  args.in = {{const_cast<void *>(src), from.type}};
  args.out = {{dst, to.type}};
  std::unique_ptr<void, void (*)(void *)> ws(nullptr, std::free);
  if (uint64_t n = (*kernel)->workspaceBytes()) {
    ws.reset(allocateHostZeroed(n));
    args.workspace = ws.get();
  }
  Queue &q = owner->computeQueue();
  ExecContext ctx{q, nullptr};
  q.submit([&] { return (*kernel)->run(args, ctx); });
  return q.synchronize();
}

} // namespace dtnn::runtime
