// The text form of a plan, as `dtnnc compile --emit=plan` prints it after
// any stage:
//
//   plan @LeNet.train batch=64 arena=BYTES live=BYTES params=BYTES
//   plan @LeNet.train batch=64 arena=BYTES live=BYTES device-arena=BYTES device-live=BYTES ...
//     param @conv2d.0.weight : f32[6,1,5,5]:Abcd8a
//     %0 = conv2d[onednn] %x, @conv2d.0.weight, @conv2d.0.bias : f32[64,6,28,28]:aBcd8b $0
//     %1 = relu[onednn] %0 : f32[64,6,28,28]:aBcd8b in %0
//     %1.1 = convert[onednn] %1 : f32[64,6,28,28] $1204224
//     return %12, %13
//
// Each step shows its backend in brackets; from `layouts` on, each value its
// layout after a colon and parameters in a native layout are listed; from
// `buffers` on, each result its arena offset ($OFFSET), its offset in the
// executor's cache for a step computed once per change of the parameters
// (cache$OFFSET), or the value whose storage it shares (in %N), each
// workspace its offset and size, and the header the arena, live, parameter
// and cache bytes (cache= only when there is one) of host memory, and of
// device memory (device-arena=, device-live=, device-cache=) when the plan
// has values there; a copy between them shows as `copy[BACKEND]`, and a
// value in device memory with `@device` after its type. Before `buffers` the
// header names the last stage done. A fused op shows the ops of its region
// and, after `from`, the source location of each.
#include "ir/ops/FusedActivation.h"
#include "runtime/plan/Plan.h"

#include <set>
#include <sstream>

namespace dtnn::runtime {

std::string Plan::str() const {
  std::ostringstream os;
  bool layouts = stage >= PlanStage::Layouts, buffers = stage >= PlanStage::Buffers;
  os << "plan @" << graph->name() << " batch=" << batch;
  if (buffers) {
    const SpaceBytes &host = bytes(MemorySpace::Host), &device = bytes(MemorySpace::Device);
    os << " arena=" << host.arena << " live=" << host.live;
    if (device.arena || device.cached)
      os << " device-arena=" << device.arena << " device-live=" << device.live;
    os << " params=" << paramBytes << (host.cached ? " cache=" + std::to_string(host.cached) : "")
       << (device.cached ? " device-cache=" + std::to_string(device.cached) : "");
  } else
    os << " stage=" << planStageName(stage);
  os << "\n";
  auto typeText = [&](int id) {
    return layouts ? values[id].desc.str() : values[id].desc.type.str();
  };
  if (layouts) {
    std::set<std::string> listed;
    for (const PlanValue &v : values)
      if (v.storage == PlanValue::Storage::Param && !v.desc.layout.isPlain() &&
          listed.insert(v.param).second)
        os << "  param " << v.name << " : " << v.desc.str() << "\n";
  }
  for (const PlanStep &s : steps) {
    os << "  ";
    for (size_t i = 0; i < s.out.size(); ++i) os << (i ? ", " : "") << values[s.out[i]].name;
    // A fused residual and activation show as `conv2d+add+relu`, a region as
    // `fused(mul+sum_like)`: one kernel runs them all.
    os << (s.out.empty() ? "" : " = ") << (s.op ? ir::kernelLabel(*s.op) : s.name()) << "["
       << s.backend << "]";
    for (size_t i = 0; i < s.in.size(); ++i) os << (i ? ", " : " ") << values[s.in[i]].name;
    for (size_t i = 0; i < s.out.size(); ++i) {
      const PlanValue &v = values[s.out[i]];
      os << (i ? ", " : " : ") << typeText(s.out[i]);
      if (!buffers || v.desc.bytes == 0) continue;
      if (v.storage == PlanValue::Storage::Alias)
        os << " in " << values[v.aliasOf].name;
      else if (v.storage == PlanValue::Storage::Cached)
        os << " cache$" << v.offset;
      else
        os << " $" << v.offset;
    }
    if (buffers && s.workspaceBytes)
      os << " workspace=$" << s.workspaceOffset << "+" << s.workspaceBytes;
    // A region names the source of every op it absorbed.
    if (s.op && s.op->body() && s.op->loc().known()) {
      os << " from";
      for (size_t i = 0; i < s.op->loc().locs.size(); ++i) {
        const SourceLoc &l = s.op->loc().locs[i];
        os << (i ? ", " : " ") << l.file << ":" << l.line << ":" << l.col;
      }
    }
    os << "\n";
  }
  if (buffers)
    for (const std::vector<int> &g : groups) {
      os << "  group";
      for (size_t i = 0; i < g.size(); ++i) os << (i ? ", " : " ") << values[g[i]].name;
      os << "\n";
    }
  os << "  return";
  for (size_t i = 0; i < outputs.size(); ++i) os << (i ? ", " : " ") << values[outputs[i]].name;
  os << "\n";
  return os.str();
}

std::string opLocation(const ir::Op &op) {
  if (!op.loc().known()) return "";
  const SourceLoc &l = op.loc().locs[0];
  return l.file + ":" + std::to_string(l.line) + ":" + std::to_string(l.col);
}

std::string stepLayer(const Plan &plan, const PlanStep &s) {
  for (int id : s.in) {
    const PlanValue &v = plan.values[id];
    if (v.storage != PlanValue::Storage::Param) continue;
    size_t dot = v.param.rfind('.');
    return v.param.substr(0, dot == std::string::npos ? v.param.size() : dot);
  }
  return "";
}

uint64_t operandBytes(const Plan &plan, const PlanStep &s) {
  uint64_t bytes = 0;
  for (int id : s.in) bytes += plan.values[size_t(id)].desc.bytes;
  return bytes;
}

std::string stepLayerName(const Plan &plan, const PlanStep &s) {
  if (std::string layer = stepLayer(plan, s); !layer.empty()) return layer + " " + s.op->name();
  std::string where = opLocation(*s.op);
  return s.op->name() + (where.empty() ? "" : " " + where);
}

} // namespace dtnn::runtime
