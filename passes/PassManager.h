// Runs an ordered list of passes over a module, with the debugging hooks of
// the command line: verification after each pass, IR dumps, and timing.
#pragma once

#include "ir/Error.h"
#include "passes/FusionTarget.h"
#include "passes/Pass.h"

#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace dtnn::passes {

// What the pass manager does around each pass.
struct PassManagerOptions {
  bool verifyEach = false;               // Run the verifier after every pass.
  bool printIrAfterAll = false;          // Dump the module after every pass.
  std::vector<std::string> printIrAfter; // Dump the module after these passes.
  bool timePasses = false;               // Print a timing table at the end.
  std::ostream *irOut = nullptr;         // Where IR dumps go; null means std::cout.
  std::ostream *timingOut = nullptr;     // Where the timing table goes; null means std::cerr.
  bool noFuse = false;                   // Leave out the passes that fuse ops.
  bool noJit = false;                    // Leave out the passes that make ops for the jit.
  const FusionTarget *target = nullptr;  // What fusion passes ask; null: fuse freely.
  std::vector<Remark> *remarks = nullptr; // Where passes record their decisions; null: nowhere.
};

// An ordered pipeline of passes.
class PassManager {
public:
  explicit PassManager(PassManagerOptions o);

  // Appends the passes of a comma-separated list of pass or pipeline names.
  // `repeat(a,b,...)` is a group: its passes run in turn until a whole
  // round changes nothing (each pass reports whether it changed the
  // module), at most kMaxRounds rounds; groups do not nest.
  Error parsePipeline(std::string_view commaList);
  // Appends one pass.
  void add(std::unique_ptr<Pass> p);
  // The pass names of the pipeline, comma-separated.
  std::string pipelineStr() const;
  // Runs every pass in order; stops at the first failure.
  Error run(ir::Module &m);

  static constexpr int kMaxRounds = 10;

private:
  // One pass, or a group run to a fixed point.
  struct Entry {
    std::vector<std::unique_ptr<Pass>> passes;
    bool repeat = false;
  };
  Error parseItems(std::string_view commaList, bool inGroup, std::vector<Entry> &out);
  // Runs one pass with the hooks around it, adding its wall time to `ms`.
  Expected<bool> runOne(Pass &pass, ir::Module &m, double &ms);
  // The entry as a pipeline writes it: `name{options}` or `repeat(...)`.
  static std::string entryStr(const Entry &e);
  // Rejects --print-ir-after names that are not passes.
  Error checkPrintIrAfter() const;
  // Writes the --time-passes table: each pass's wall time, over all its rounds.
  void printTiming(const std::map<const Pass *, double> &ms) const;

  PassManagerOptions opts_;
  std::vector<Entry> entries_; // The pipeline, in run order.
};

} // namespace dtnn::passes
