// What `dtnnc compile --emit=cuda` prints: the CUDA source of every kernel a
// plan generates for the cuda backend, in plan order.
#include "backends/cuda/CudaBackend.h"
#include "backends/cuda/CudaKernel.h"

#include "ir/ops/FusedActivation.h"

#include <map>

namespace dtnn::cuda {

Expected<std::string> generatedKernelsSource(const runtime::Plan &plan) {
  std::string out;
  std::map<std::string, std::string> seen; // source key -> the first kernel's name
  size_t number = 0;
  for (const runtime::PlanStep &s : plan.steps) {
    const auto *k = dynamic_cast<const CudaKernel *>(s.kernel.get());
    if (!k || !k->spec().region) continue;
    const RegionCode &code = *k->spec().region;
    std::string name = "region_" + std::to_string(number++);
    std::string head = "// " + name + ": " + (s.op ? ir::kernelLabel(*s.op) : s.name()) + " over";
    for (const std::vector<runtime::BufferDesc> *list : {&k->spec().in, &k->spec().out})
      for (const runtime::BufferDesc &d : *list) head += " " + d.str();
    const char *shape = code.shape == RegionCode::Shape::Map           ? "map"
                        : code.shape == RegionCode::Shape::ReduceInner ? "reduce-inner"
                                                                       : "reduce-outer";
    head += "\n// shape " + std::string(shape) + ", sizes " + ir::dimsStr(code.sizes);
    if (code.shape != RegionCode::Shape::Map)
      head += ", " + std::to_string(code.outputs) + " outputs of " + std::to_string(code.length) +
              " in " + std::to_string(code.segments) + " segments";
    head += ", key " + code.key + "\n";
    auto [it, added] = seen.emplace(code.key, name);
    out += head + (added ? code.source : "// the source of " + it->second + "\n");
  }
  return out;
}

} // namespace dtnn::cuda
