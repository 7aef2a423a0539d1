#include "runtime/ModuleRunner.h"

#include "ir/Log.h"

#include "runtime/HostMemory.h"

#include <algorithm>

namespace dtnn::runtime {

ModuleRunner::ModuleRunner(const ir::Module &m, const BackendSet &backends,
                           Communicator *comm)
    : module_(m), backends_(backends), ownComm_(comm ? nullptr : makeLocalCommunicator()),
      comm_(comm ? comm : ownComm_.get()),
      commQueue_(makeThreadQueue("comm")),
      params_(std::make_unique<ParamStore>(m, backends)), ctx_{backends, m, {}} {
  // The host arena is the device backend's pinned memory when the run has one.
  Backend *device = backends.device();
  arenas_[size_t(MemorySpace::Host)] =
      std::make_unique<Arena>(device ? *device : backends.primary(), MemorySpace::Host);
  if (device) arenas_[size_t(MemorySpace::Device)] = std::make_unique<Arena>(*device, MemorySpace::Device);
  if (auto dup = comm_->duplicate())
    computeComm_ = std::move(*dup);
  else
    setUpError_ = dup.takeError();
}

ModuleRunner::~ModuleRunner() {
  entries_.clear();
  consumeError(commQueue_->synchronize()); // a destructor has no one to report to
}

const Plan *ModuleRunner::plan(const ir::Graph &g, int64_t batch) const {
  auto it = entries_.find({&g, batch});
  return it == entries_.end() ? nullptr : it->second.plan.get();
}

uint64_t ModuleRunner::heldBytes() const {
  uint64_t arenas = 0;
  for (const auto &a : arenas_)
    if (a) arenas += a->bytes();
  return params_->bytes() + arenas + inputBytes_;
}

std::string stepName(const ir::Graph &g) {
  const std::string &name = g.name();
  size_t dot = name.rfind('.');
  if (dot == std::string::npos) return "the forward pass of " + name;
  std::string kind = name.substr(dot + 1), model = name.substr(0, dot);
  if (kind == "train" || kind == "eval" || kind == "update") return "the " + kind + " step of " + model;
  if (kind == "grads") return "the gradient step of " + model;
  return "graph @" + name;
}

SpaceNeed ModuleRunner::addressSpaceNeed(const Plan &plan, int64_t batch) const {
  SpaceNeed need{stepName(*plan.graph) + " at batch " + std::to_string(batch), {}};
  auto scaled = [&](uint64_t bytes) {
    return batch == plan.batch ? bytes : uint64_t(double(bytes) * double(batch) / double(plan.batch));
  };
  // Address space is the host's: a device's memory counts only where it is pinned host memory.
  bool hostPrimary = backends_.primary().memorySpace() == MemorySpace::Host;
  uint64_t code = 0, inputs = 0, moved = 0;
  for (const PlanStep &s : plan.steps) code += s.kernel->codeBytes();
  for (int id : plan.inputs) inputs += 2 * plan.values[id].desc.bytes;
  if (plan.stage != PlanStage::Bind && hostPrimary)
    for (const auto &[name, desc] : ctx_.params)
      if (!(params_->desc(name) == desc)) moved += desc.bytes;
  const SpaceBytes &host = plan.bytes(MemorySpace::Host);
  uint64_t arena = scaled(host.arena), held = arenas_[size_t(MemorySpace::Host)]->bytes();
  need.add("its kernels' generated code", code);
  need.add("its values", (arena > held ? arena - held : 0) + host.cached);
  need.add("its inputs", scaled(inputs)); // pinned staging buffers for a device
  need.add("parameters moved to its kernels' layouts", moved);
  need.note = spaceNote_;
  return need;
}

SpaceNeed ModuleRunner::addressSpaceNeed(const ir::Graph &g, int64_t batch) const {
  const Plan *built = nullptr;
  for (const auto &[key, entry] : entries_)
    if (key.first == &g && (!built || key.second > built->batch)) built = entry.plan.get();
  if (!built) return {stepName(g) + " at batch " + std::to_string(batch), {}};
  return addressSpaceNeed(*built, batch);
}

namespace {

// One line on a plan: its graph and batch, its kernels by backend, its conversions and memory.
std::string summary(const Plan &p) {
  std::map<std::string, int> byBackend;
  int conversions = 0;
  for (const PlanStep &s : p.steps) {
    if (!s.op) ++conversions;
    else ++byBackend[s.backend];
  }
  std::string kernels;
  for (const auto &[backend, n] : byBackend)
    kernels += (kernels.empty() ? "" : ", ") + std::to_string(n) + " on " + backend;
  return "@" + (p.graph ? p.graph->name() : std::string("?")) + " at batch " +
         std::to_string(p.batch) + ": " + std::to_string(p.steps.size() - size_t(conversions)) +
         " kernels (" + kernels + "), " + std::to_string(conversions) +
         " layout conversions, arena " + std::to_string(p.bytes(MemorySpace::Host).arena) +
         " bytes (" + std::to_string(p.bytes(MemorySpace::Host).live) + " live at most), " +
         (p.bytes(MemorySpace::Device).arena
              ? "device arena " + std::to_string(p.bytes(MemorySpace::Device).arena) + " bytes (" +
                    std::to_string(p.bytes(MemorySpace::Device).live) + " live at most), "
              : std::string()) +
         "parameters " + std::to_string(p.paramBytes) + " bytes";
}

} // namespace

Expected<Executor *> ModuleRunner::executor(const ir::Graph &g, int64_t batch) {
  auto it = entries_.find({&g, batch});
  if (it != entries_.end()) return it->second.exec.get();
  auto plan = buildPlan(g, batch, ctx_, PlanStage::Buffers);
  if (!plan) return plan.takeError();
  uint64_t inputs = 0, params = 0;
  for (int id : plan->inputs) inputs += 2 * plan->values[id].desc.bytes;
  for (const auto &p : module_.params())
    params += ctx_.params.count(p->name) ? ctx_.params.at(p->name).bytes : params_->desc(p->name).bytes;
  Backend &primary = backends_.primary();
  MemorySpace home = primary.memorySpace();
  const Arena &homeArena = *arenas_[size_t(home)];
  uint64_t need = params + std::max(homeArena.bytes(), plan->bytes(home).arena) +
                  plan->bytes(home).cached + inputBytes_ + inputs;
  if (Error e = checkFits(need, primary.memoryBytes(),
                          "at batch " + std::to_string(batch) + ", the values of @" + g.name() +
                              " and the parameters need",
                          memoryOwner(primary)))
    return Error::make(e.message() + "; use a smaller batch");
  // Binding generates the kernels' code, which oneDNN cannot survive running out of room for.
  if (Error e = checkAddressSpace(addressSpaceNeed(*plan, batch), "or use a smaller batch"))
    return e;
  if (Error e = bindKernels(*plan)) return e;
  for (const auto &[name, desc] : ctx_.params)
    if (Error e = params_->setLayout(name, desc)) return e;
  DTNN_LOG_AT(Info, "plan", summary(*plan));
  DTNN_LOG_AT(Debug, "plan", plan->str());
  Entry &e = entries_[{&g, batch}];
  e.plan = std::make_unique<Plan>(std::move(*plan));
  std::array<Arena *, kMemorySpaces> arenas{};
  for (size_t sp = 0; sp < kMemorySpaces; ++sp) arenas[sp] = arenas_[sp].get();
  e.exec = std::make_unique<Executor>(*e.plan, ExecServices{arenas, *params_, backends_, comm_,
                                                            commQueue_.get(), computeComm_.get(),
                                                            replay_});
  inputBytes_ += inputs;
  return e.exec.get();
}

} // namespace dtnn::runtime
