// Buffer assignment. Algorithm:
//  1. Liveness: each arena value lives from its defining step to its last
//     use (graph outputs to the end; a use that reads only the type does not
//     count); an alias (the new version of a written operand) extends the
//     life of the value whose storage it is.
//  2. Groups: the operands of a kernel that wants them contiguous (each a
//     distinct arena value) become one block, in order, living from the
//     first one's definition to the last one's last use.
//  3. In-place reuse, in schedule order: a result takes the storage of an
//     operand the op table lets it reuse (OperandSpec::reuse) when that
//     storage dies at this op, has the result's layout and size, neither is
//     in a group, and the kernel allows it; the result then extends that
//     storage's life.
//  4. Offsets, greedy by size, in each memory space's arena apart: blocks
//     (storage, groups and each step's workspace, in its backend's memory)
//     in order of decreasing size take the smallest gap between the blocks
//     of the space already placed whose lives overlap theirs, or the end.
//     Sizes are rounded up to 64 bytes.
// A space's `live` is the largest sum of its block sizes alive at one step;
// its `arena` is the end of its last block.
// Before all that, in a plan that writes no parameter (an eval step), the
// steps computed from parameters alone (pure ops and conversions whose
// operands are parameters or results of such steps, whose results are not
// graph outputs) run once per change of the parameters: their results go to
// the executor's cache, one after another, and leave the arena.
#include "runtime/plan/Occupancy.h"
#include "runtime/plan/Plan.h"

#include <algorithm>
#include <set>

namespace dtnn::runtime {

namespace {

uint64_t align(uint64_t n) { return (n + 63) / 64 * 64; }

struct Block {
  uint64_t size = 0;
  int begin = 0, end = 0; // steps, inclusive
  uint64_t offset = 0;
  std::vector<int> values; // laid out in order; empty for a workspace
  int workspaceOf = -1;
  MemorySpace space = MemorySpace::Host;
};

class BufferAssigner {
public:
  explicit BufferAssigner(Plan &plan) : plan_(plan), n_(plan.values.size()) {}

  Error run() {
    cacheParameterOnlySteps();
    liveness();
    findGroups();
    reuse();
    std::vector<Block> all = makeBlocks();
    for (size_t sp = 0; sp < kMemorySpaces; ++sp) {
      std::vector<Block> blocks;
      for (const Block &b : all)
        if (size_t(b.space) == sp) blocks.push_back(b);
      place(blocks);
      SpaceBytes &bytes = plan_.spaces[sp];
      for (const Block &b : blocks) {
        uint64_t at = b.offset;
        for (int id : b.values) {
          plan_.values[id].offset = at;
          at += align(plan_.values[id].desc.bytes);
        }
        if (b.workspaceOf >= 0) plan_.steps[b.workspaceOf].workspaceOffset = b.offset;
        bytes.arena = std::max(bytes.arena, b.offset + b.size);
      }
      bytes.live = measureLive(blocks);
    }
    std::set<std::string> params;
    for (const PlanValue &v : plan_.values)
      if (v.storage == PlanValue::Storage::Param && params.insert(v.param).second)
        plan_.paramBytes += v.desc.bytes;
    plan_.stage = PlanStage::Buffers;
    return Error::success();
  }

private:
  bool inArena(int id) const { return plan_.values[id].storage == PlanValue::Storage::Arena; }

  void cacheParameterOnlySteps() {
    for (const PlanStep &step : plan_.steps)
      for (size_t i = 0; i < step.in.size(); ++i)
        if (step.writes(i) &&
            plan_.values[plan_.root(step.in[i])].storage == PlanValue::Storage::Param)
          plan_.writesParams = true;
    // A write-back of a parameter updated in a copy (Layouts.cpp).
    for (const PlanValue &v : plan_.values)
      if (v.storage == PlanValue::Storage::Alias && v.def >= 0 && !plan_.steps[v.def].op &&
          plan_.values[plan_.root(v.aliasOf)].storage == PlanValue::Storage::Param)
        plan_.writesParams = true;
    if (plan_.writesParams) return;
    std::set<int> outputs(plan_.outputs.begin(), plan_.outputs.end());
    for (PlanStep &step : plan_.steps) {
      bool once = !step.out.empty() && (!step.op || step.op->def().pure());
      for (size_t i = 0; once && i < step.in.size(); ++i) {
        const PlanValue &v = plan_.values[step.in[i]];
        once = step.shapeOnly(i) || v.storage == PlanValue::Storage::Param ||
               v.storage == PlanValue::Storage::Cached;
      }
      for (int id : step.out) once = once && !outputs.count(id);
      if (!once) continue;
      step.once = true;
      for (int id : step.out) {
        PlanValue &v = plan_.values[id];
        v.storage = PlanValue::Storage::Cached;
        uint64_t &cached = plan_.bytes(v.desc.space).cached;
        v.offset = cached;
        cached += align(v.desc.bytes);
      }
    }
  }

  void liveness() {
    int steps = static_cast<int>(plan_.steps.size());
    end_.assign(n_, -1);
    for (size_t id = 0; id < n_; ++id) end_[id] = plan_.values[id].def;
    for (int s = 0; s < steps; ++s) {
      const PlanStep &step = plan_.steps[s];
      for (size_t i = 0; i < step.in.size(); ++i)
        if (!step.shapeOnly(i)) end_[step.in[i]] = std::max(end_[step.in[i]], s);
    }
    for (int id : plan_.outputs) end_[id] = steps;
    // Aliases from lowering (new versions) extend their storage's life.
    for (size_t id = 0; id < n_; ++id)
      if (plan_.values[id].storage == PlanValue::Storage::Alias) {
        int r = plan_.root(static_cast<int>(id));
        end_[r] = std::max(end_[r], end_[id]);
      }
  }

  void reuse() {
    std::set<int> outputs;
    for (int id : plan_.outputs) outputs.insert(plan_.root(id));
    for (int s = 0; s < static_cast<int>(plan_.steps.size()); ++s) {
      PlanStep &step = plan_.steps[s];
      if (!step.op) continue;
      for (size_t i = 0; i < step.in.size(); ++i) {
        int r = step.specs[i]->reuse;
        if (r < 0 || static_cast<unsigned>(r) >= step.op->ownResults()) continue;
        int res = step.out[r], src = plan_.root(step.in[i]);
        const PlanValue &a = plan_.values[src], &b = plan_.values[res];
        if (!inArena(src) || !inArena(res) || grouped_[src] || grouped_[res] ||
            end_[src] != s || outputs.count(src) ||
            a.desc.bytes != b.desc.bytes || a.desc.layout != b.desc.layout ||
            a.desc.space != b.desc.space || !step.kernel->allowsReuse(i, r))
          continue;
        bool sharedWithOther = false;
        for (size_t j = 0; j < step.in.size(); ++j)
          sharedWithOther |= j != i && plan_.root(step.in[j]) == src && step.in[j] != step.in[i];
        if (sharedWithOther) continue;
        plan_.values[res].storage = PlanValue::Storage::Alias;
        plan_.values[res].aliasOf = src;
        end_[src] = std::max(end_[src], end_[res]);
      }
    }
  }

  // The operands of kernels that want them contiguous, where every one is a
  // distinct value of its own storage in the arena; reuse leaves them alone.
  void findGroups() {
    grouped_.assign(n_, false);
    for (const PlanStep &step : plan_.steps) {
      if (!step.kernel->wantsContiguousOperands() || step.in.size() < 2) continue;
      std::set<int> seen;
      bool ok = true;
      for (int id : step.in)
        ok = ok && inArena(id) && !grouped_[id] && seen.insert(id).second &&
             plan_.values[id].desc.space == plan_.values[step.in[0]].desc.space;
      if (!ok) continue;
      for (int id : step.in) grouped_[id] = true;
      plan_.groups.push_back(step.in);
    }
  }

  std::vector<Block> makeBlocks() {
    std::vector<Block> blocks;
    for (const std::vector<int> &group : plan_.groups) {
      Block b;
      b.begin = plan_.values[group[0]].def;
      b.space = plan_.values[group[0]].desc.space;
      for (int id : group) {
        b.values.push_back(id);
        b.size += align(plan_.values[id].desc.bytes);
        b.begin = std::min(b.begin, plan_.values[id].def);
        b.end = std::max(b.end, end_[id]);
      }
      blocks.push_back(b);
    }
    for (size_t id = 0; id < n_; ++id) {
      if (!inArena(static_cast<int>(id)) || grouped_[id] || plan_.values[id].desc.bytes == 0)
        continue;
      blocks.push_back({align(plan_.values[id].desc.bytes), plan_.values[id].def,
                        std::max(end_[id], plan_.values[id].def), 0, {static_cast<int>(id)}, -1,
                        plan_.values[id].desc.space});
    }
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
      PlanStep &step = plan_.steps[s];
      step.workspaceBytes = step.kernel->workspaceBytes();
      if (step.workspaceBytes)
        blocks.push_back({align(step.workspaceBytes), static_cast<int>(s), static_cast<int>(s), 0,
                          {}, static_cast<int>(s), step.space});
    }
    return blocks;
  }

  // Best fit: each block, largest first, takes the smallest gap between
  // what the blocks placed before it take during its life, or the end.
  static void place(std::vector<Block> &blocks) {
    std::vector<size_t> order(blocks.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (blocks[a].size != blocks[b].size) return blocks[a].size > blocks[b].size;
      return blocks[a].begin < blocks[b].begin;
    });
    Occupancy taken(lastStep(blocks));
    for (size_t i : order) {
      Block &b = blocks[i];
      uint64_t cursor = 0, best = UINT64_MAX, bestGap = UINT64_MAX;
      for (const auto &[off, end] : taken.takenDuring(b.begin, b.end)) {
        if (off > cursor && off - cursor >= b.size && off - cursor < bestGap) {
          best = cursor;
          bestGap = off - cursor;
        }
        cursor = std::max(cursor, end);
      }
      b.offset = best != UINT64_MAX ? best : cursor;
      taken.add(b.begin, b.end, b.offset, b.size);
    }
  }

  // The last step any block lives at.
  static int lastStep(const std::vector<Block> &blocks) {
    int last = 0;
    for (const Block &b : blocks) last = std::max(last, b.end);
    return last;
  }

  // The largest sum of block sizes alive at one step, from the changes at
  // each block's first step and after its last.
  uint64_t measureLive(const std::vector<Block> &blocks) const {
    size_t steps = plan_.steps.size() + 1;
    std::vector<uint64_t> change(steps + 1, 0);
    for (const Block &b : blocks) {
      size_t last = std::min<size_t>(b.end, steps - 1);
      if (b.begin > b.end || static_cast<size_t>(b.begin) > last) continue;
      change[b.begin] += b.size;
      change[last + 1] -= b.size;
    }
    uint64_t live = 0, most = 0;
    for (size_t s = 0; s < steps; ++s) {
      live += change[s];
      most = std::max(most, live);
    }
    return most;
  }

  Plan &plan_;
  size_t n_;
  std::vector<int> end_;
  std::vector<bool> grouped_;
};

} // namespace

Error assignBuffers(Plan &plan) { return BufferAssigner(plan).run(); }

} // namespace dtnn::runtime
