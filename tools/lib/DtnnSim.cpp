// dtnn-sim: predicts the step time, exposed communication and scaling
// efficiency of data-parallel training on a cluster. For each rank count it
// compiles the train step as dtnn-run would on that many ranks (buckets
// included) and plays it with passes/Simulate.h: per-op times measured on
// this machine (`dtnn-run --op-profile-out`) or estimated, and the network's
// α-β model (`--net`, written by `dtnn-run --calibrate`, or 100 Gb/s
// defaults). Each rank keeps its batch (weak scaling).
#include "dtnn/Compiler.h"
#include "dtnn/Plugin.h"
#include "dtnn/Tools.h"
#include "dtnn/Registry.h"
#include "frontend/Frontend.h"
#include "passes/CostModel.h"
#include "ir/RunSettings.h"
#include "passes/PassManager.h"
#include "passes/Pipelines.h"
#include "runtime/train/FusionTargets.h"
#include "passes/Simulate.h"
#include "tools/lib/CommandLine.h"
#include "tools/lib/DataParallel.h"

#include <cstdio>
#include <iostream>
#include <sstream>

using namespace dtnn;

namespace {

constexpr int kOk = 0, kInputError = 1, kUsageError = 2;

int usageError(const std::string &msg) {
  std::cerr << "dtnn-sim: error: " << msg << "\nRun 'dtnn-sim --help' for usage.\n";
  return kUsageError;
}

// "1,2,4" -> {1, 2, 4}; empty on a malformed list.
// Reads the comma-separated rank counts of --ranks into `out`; fails with a usage error.
Error parseRanks(const std::string &text, std::vector<int> &out) {
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    int64_t v = 0;
    if (Error msg = cli::readCount("--ranks", item, 1, 1 << 20, v))
      return Error::make(msg.message() + " (a list of rank counts, e.g. 1,2,4)");
    out.push_back(static_cast<int>(v));
  }
  if (out.empty() || text.back() == ',')
    return Error::make("--ranks expects a list of rank counts, e.g. 1,2,4, got '" + text + "'");
  return Error::success();
}

int run(int argc, char **argv) {
  std::vector<cli::OptionSpec> specs = {
      {"model", "NAME", "the model to simulate (default: the file's only model)"},
      {"ranks", "LIST", "rank counts, e.g. 1,16,64,1024 (default 1,2,4)"},
      {"batch", "B", "samples a rank (default: the train section's batch)"},
      {"ranks-per-node", "L", "ranks share a node L at a time: buckets may reduce "
                              "hierarchically (default: every rank a node of its own)"},
      {"backend", "NAME", "plan the train step as dtnn-run --backend NAME does, its fused ops "
                          "those of an op profile measured there (default: dtnn-run's)"},
      {"I", "DIR", "also search DIR for imported files", true},
      {"plugin", "LIB.so", "load a plugin's ops, passes... (repeatable; also $DTNN_PLUGINS)", true},
      {"help", "", "show this help"},
  };
  specs.insert(specs.end() - 1, cli::kDataParallelOptions.begin(), cli::kDataParallelOptions.end());
  auto args = cli::parseArgs(std::vector<std::string>(argv + 1, argv + argc), specs);
  if (!args) return usageError(args.error().message());
  if (args->has("help")) {
    std::cout << "usage: dtnn-sim FILE.dtnn [options]\n\nPredicts data-parallel step times on a "
                 "cluster, each rank keeping its batch.\n\n"
              << cli::optionsHelp(specs);
    return kOk;
  }
  if (args->positional.size() != 1) return usageError("expected one model file");
  std::vector<int> ranks;
  if (Error msg = parseRanks(args->get("ranks", "1,2,4"), ranks))
    return usageError(msg.message());
  int64_t perNode = 1;
  if (args->has("ranks-per-node"))
    if (Error msg = cli::readCount("--ranks-per-node", args->get("ranks-per-node"), 1, 1 << 20,
                                   perNode))
      return usageError(msg.message());
  for (int p : ranks)
    if (p > perNode && p % perNode)
      return usageError(std::to_string(p) + " ranks do not fill nodes of --ranks-per-node " +
                        std::to_string(perNode));
  passes::DataParallelOptions dp;
  if (Error msg = cli::readDataParallelOptions(*args, dp)) return usageError(msg.message());
  passes::NetModel net;
  if (!dp.netPath.empty()) {
    auto n = passes::readNetModel(dp.netPath);
    if (!n) {
      std::cerr << "dtnn-sim: error: " << n.error().message() << "\n";
      return kInputError;
    }
    net = *n;
  }
  std::optional<passes::OpProfile> profile;
  if (!dp.profilePath.empty()) {
    auto p = passes::readOpProfile(dp.profilePath);
    if (!p) {
      std::cerr << "dtnn-sim: error: " << p.error().message() << "\n";
      return kInputError;
    }
    profile = std::move(*p);
  }

  // The fusion passes ask the backend, so that the ops are those dtnn-run runs and profiles.
  auto target = runtime::makeFusionTarget(args->get("backend"));
  if (!target) return usageError(target.error().message());
  frontend::CompileOptions co;
  co.modelName = args->get("model");
  co.importDirs = args->all("I");
  co.importDirs.push_back(standardLibraryDir());
  double base = 0;
  bool header = false;
  for (int p : ranks) {
    SourceManager sm;
    DiagnosticEngine diags(sm, std::cerr);
    auto module = frontend::compileFile(args->positional[0], co, sm, diags);
    if (!module) return kInputError;
    auto settings = ir::readRunSettings(module->trainConfig());
    if (!settings) {
      std::cerr << "dtnn-sim: error: " << settings.error().message() << "\n";
      return kInputError;
    }
    int64_t batch = settings->batch;
    if (args->has("batch"))
      if (Error msg = cli::readCount("--batch", args->get("batch"), 1, INT64_MAX, batch))
        return usageError(msg.message());
    if (profile && profile->batch != batch)
      return usageError("the op profile was measured at batch " + std::to_string(profile->batch) +
                        " a rank, the simulation is at " + std::to_string(batch) +
                        "; pass --batch " + std::to_string(profile->batch));
    module->trainConfig().set("batch", batch * p);
    dp.ranks = p;
    dp.nodes = p > perNode ? static_cast<int>(p / perNode) : 1;
    dp.localBatch = batch;
    passes::PassManagerOptions po;
    po.target = target->get();
    passes::PassManager pm(po);
    if (Error e = pm.parsePipeline(
            passes::withPrecision(passes::trainStepPipeline(dp), settings->precision.name)))
      return usageError(e.message());
    if (Error e = pm.run(*module)) {
      std::cerr << "dtnn-sim: error: " << e.message() << "\n";
      return kInputError;
    }
    const ir::Graph *train = nullptr;
    for (const auto &g : module->graphs())
      if (g->name().ends_with(".train")) train = g.get();
    if (!train) {
      std::cerr << "dtnn-sim: error: the model has no train step\n";
      return kInputError;
    }
    std::vector<double> times;
    if (profile) {
      auto t = passes::opTimesFromProfile(*profile, *train, dp.profilePath);
      if (!t) {
        std::cerr << "dtnn-sim: error: " << t.error().message() << "\n";
        return kInputError;
      }
      times = std::move(*t);
    } else {
      times = passes::estimateOpTimes(*train, batch);
    }
    passes::StepPrediction s = passes::simulateStep(*train, times, net, p, dp.nodes);
    // The measured step's time outside its ops, serial with them.
    if (profile) {
      s.compute += profile->overhead;
      s.step += profile->overhead;
    }
    if (!header) {
      std::printf("%s, %lld samples a rank; network: %s; op times: %s\n", train->name().c_str(),
                  static_cast<long long>(batch), net.source.c_str(),
                  profile ? dp.profilePath.c_str() : "estimated from MACs and bytes");
      std::printf("%7s %6s %13s %8s %11s %9s %11s %9s %12s %11s\n", "ranks", "nodes",
                  "global batch", "buckets", "compute ms", "comm ms", "exposed ms", "step ms",
                  "images/s", "efficiency");
      header = true;
      base = s.step;
    }
    if (p == 1) base = s.step;
    std::printf("%7d %6d %13lld %8d %11.3f %9.3f %11.3f %9.3f %12.1f %10.1f%%\n", p,
                dp.nodes, static_cast<long long>(batch * p), s.buckets, 1e3 * s.compute, 1e3 * s.comm,
                1e3 * s.exposed, 1e3 * s.step, s.step > 0 ? batch * p / s.step : 0.0,
                s.step > 0 ? 100 * base / s.step : 0.0);
  }
  return kOk;
}

} // namespace

int dtnn::dtnnSimMain(int argc, char **argv) {
  if (Error e = registerBuiltins()) {
    std::cerr << "dtnn-sim: error: " << e.message() << "\n";
    return kInputError;
  }
  if (Error e = loadPlugins(argc, argv)) {
    std::cerr << "dtnn-sim: error: " << e.message() << "\n";
    return kInputError;
  }
  return cli::runGuarded("dtnn-sim", [&] { return run(argc, argv); });
}
