// dtnn-run: trains a model. It compiles the file, applies the command-line
// overrides to the file's train settings, builds the train and eval steps
// with the `train` pipeline, and hands them to the runtime's training loop.
#include "dtnn/Compiler.h"
#include "dtnn/Plugin.h"
#include "dtnn/Tools.h"
#include "dtnn/Registry.h"
#include "ir/Log.h"
#include "frontend/Frontend.h"
#include "passes/Optimizers.h"
#include "passes/PassManager.h"
#include "runtime/HostMemory.h"
#include "runtime/ResourceLimits.h"
#include "runtime/train/FusionTargets.h"
#include "runtime/train/Interrupt.h"
#include "runtime/Threads.h"
#include "runtime/BackendRegistry.h"
#include "runtime/Profile.h"
#include "runtime/train/Trainer.h"
#include "runtime/train/data/Samples.h"
#include "ir/Output.h"
#include "runtime/comm/Calibrate.h"
#include "runtime/comm/Mpi.h"
#include "passes/CostModel.h"
#include "tools/lib/DataParallel.h"
#include "tools/lib/Elastic.h"
#include "tools/lib/CommandLine.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <new>
#include <optional>

using namespace dtnn;

namespace {

constexpr int kOk = 0, kInputError = 1, kUsageError = 2;

// The options other than the train settings' (see options()).
const std::vector<cli::OptionSpec> kOptions = {
    {"model", "NAME", "the model to train (default: the file's only model)", false, cli::Agree::Value},
    {"data", "DIR", "read the data set from DIR instead of its default folder", false, cli::Agree::Presence},
    {"synthetic", "", "train on synthetic data shaped like the model's input", false, cli::Agree::Value},
    {"data-workers", "N", "threads decoding and augmenting image files (default: half the CPUs "
                          "this process may use, at least 1)"},
    {"synthetic-size", "TRAIN[,TEST]", "images of the synthetic training and test sets "
                                       "(default: the train section's, else 6000,1000)", false, cli::Agree::Value},
    {"backend", "NAME", "kernel backend (default: the first of 'dtnn-run --help')", false, cli::Agree::Value},
    {"threads", "T", "threads of the one thread pool (default: OMP_NUM_THREADS, else the CPUs "
                     "this process may use that other processes leave idle)"},
    {"metrics", "FILE", "write one JSON object per epoch to FILE"},
    {"save", "FILE", "write a checkpoint (safetensors) when training ends"},
    {"resume", "FILE", "start from a checkpoint", false, cli::Agree::Presence},
    {"init-from", "FILE", "start from the weights and running statistics of a safetensors file "
                          "(a checkpoint, or converted torchvision weights), not its optimizer "
                          "state or progress", false, cli::Agree::Presence},
    {"eval-only", "", "evaluate on the test set without training", false, cli::Agree::Value},
    {"predict", "FILE", "instead of training, compute the model's outputs for the input tensor "
                        "named like the model's input in FILE (safetensors), or print the likeliest "
                        "classes of an image file or of a folder's images", false, cli::Agree::Presence},
    {"predictions", "FILE", "where --predict writes the outputs (safetensors: 'output'), or "
                            "--generate the text"},
    {"generate", "N", "instead of training, continue a prompt (--prompt TEXT, or the text of "
                      "--predict FILE) with N tokens sampled from a model of token sequences, "
                      "seeded by --seed, and print the text", false, cli::Agree::Value},
    {"prompt", "TEXT", "the text --generate continues", false, cli::Agree::Value},
    {"temperature", "T", "with --generate: sample from softmax(logits / T) (default 1; 0: the "
                         "most likely token)", false, cli::Agree::Value},
    {"top-k", "K", "with --generate: sample among the K most likely tokens (default: all)", false,
     cli::Agree::Value},
    {"steps", "N", "stop after N training steps in all, then evaluate", false, cli::Agree::Value},
    {"no-progress", "", "print one line per epoch: no progress bar on a terminal, and no "
                        "progress lines otherwise"},
    {"progress-every", "SECONDS", "when the output is not a terminal, a progress line every "
                                  "SECONDS of an epoch (default 30)"},
    {"profile", "", "time every op of the train step and print a table at the end"},
    {"trace", "FILE.json", "write the run's trace (Perfetto, chrome://tracing): kernels, layout "
                           "conversions, allreduces, data loading, checkpoints; each rank a track"},
    {"trace-steps", "N", "the train steps --trace records kernel by kernel (default 10)"},
    {"no-fuse", "", "leave out the passes that fuse ops (to bisect a result or measure the gain); implies --no-jit", false, cli::Agree::Value},
    {"no-jit", "", "leave out decompose-batchnorm and fuse-elementwise, which make the fused ops the jit backend compiles", false, cli::Agree::Value},
    {"jit-cache", "DIR", "where the jit keeps compiled kernels across runs (default: "
                         "$DTNN_JIT_CACHE, else ~/.cache/dtnn/jit; 'off': nowhere)"},
    {"tf32", "MODE", "on a GPU, where float32 products may round to TF32: conv (PyTorch's "
                     "defaults: convolutions), all, or off (strict float32)", false, cli::Agree::Value},
    {"collectives", "KIND", "on GPUs under mpirun: nccl (one rank a GPU) or mpi (host copies "
                            "staged through pinned memory; ranks may share a GPU); default: "
                            "nccl unless a node has more ranks than GPUs", false, cli::Agree::Value},
    {"no-cuda-graph", "", "on a GPU, launch each step's kernels one by one instead of replaying "
                          "the step as a CUDA graph"},
    {"op-profile-out", "FILE", "also write the train step's per-op times to FILE (for --op-profile)"},
    {"comm-timeout", "S", "under mpirun: end the job when a collective waits S seconds (default 60)"},
    {"comm-slowdown", "F", "under mpirun: end the job when a reduction's waits grow to F times "
                           "their usual length, 3 steps in a row, naming the node whose link "
                           "slowed (default 10; 0: never)"},
    {"comm-progress-ms", "MS", "under mpirun: while reductions are in flight, move their messages "
                               "every MS ms during kernels too (default 1; 0: mostly between kernels)"},
    {"skip-comm", "", "under mpirun: skip the gradient reductions (to measure their cost)", false, cli::Agree::Value},
    {"deterministic", "", "bitwise the same checkpoints whatever the rank and thread counts "
                          "(micro-batches, one thread a kernel, exact sums)", false, cli::Agree::Value},
    {"micro-batch", "M", "with --deterministic: samples a micro-batch (default 8)", false, cli::Agree::Value},
    {"elastic", "N", "launch a job of N ranks ($DTNN_MPIRUN, else mpirun) and, when ranks or "
                     "nodes are lost, start it again from its last checkpoint on the ranks that "
                     "remain (needs --save)"},
    {"max-restarts", "R", "with --elastic: the restarts after which a failure ends the run "
                          "(default 3)"},
    {"calibrate", "FILE", "under mpirun: measure allreduce latency and bandwidth, write FILE "
                          "(for --net), and stop"},
    {"I", "DIR", "also search DIR for imported files", true},
    {"plugin", "LIB.so", "load a plugin's ops, passes, optimizers, data sources... (repeatable; "
                         "also $DTNN_PLUGINS, paths separated by ':')", true, cli::Agree::Value},
    {"help", "", "show this help"},
};

int usageError(const std::string &msg) {
  std::cerr << "dtnn-run: error: " << msg << "\nRun 'dtnn-run --help' for usage.\n";
  return kUsageError;
}

// Parses a whole non-negative integer.
bool parsePositive(const std::string &s, double &out) {
  try {
    size_t used = 0;
    out = std::stod(s, &used);
    return used == s.size() && out > 0 && out < 1e30;
  } catch (const std::exception &) {
    return false;
  }
}

// Every option: the tool's own, and one per train setting that has a flag
// in the run-settings schema (--batch, --lr, ...), after --synthetic-size.
std::vector<cli::OptionSpec> options() {
  std::vector<cli::OptionSpec> all;
  for (const cli::OptionSpec &o : kOptions) {
    all.push_back(o);
    if (o.name != "synthetic-size") continue;
    for (const ir::RunSettingDef &d : ir::runSettingDefs()) {
      if (d.flag.empty()) continue;
      std::string help = d.help;
      if (d.kind == ir::SettingKind::Choice) {
        std::string names;
        for (const ir::SettingChoice &c : d.choices()) names += (names.empty() ? "" : ", ") + c.name;
        help += ": " + names;
      }
      all.push_back({d.flag, d.valueName, help});
    }
  }
  return all;
}

// Times allreduces on `comm` and fits the α-β model to them; `table` gets
// the measurements, a line each.
// The network model fitted to allreduce timings ({bytes, seconds}) over `ranks` ranks, each
// timing a line of `table`.
Expected<passes::NetModel> fitTimings(const std::vector<std::pair<double, double>> &timings,
                                      int ranks, std::string &table) {
  std::vector<double> bytes, secs;
  for (const auto &[b, sec] : timings) {
    bytes.push_back(b);
    secs.push_back(sec);
    char line[96];
    std::snprintf(line, sizeof line, "  %10.0f bytes  %9.1f us  %7.2f GB/s\n", b, 1e6 * sec,
                  b / sec / 1e9);
    table += line;
  }
  return passes::fitNetModel(bytes, secs, ranks);
}

Expected<passes::NetModel> measureLink(runtime::Communicator &comm, std::string &table) {
  auto t = runtime::timeAllreduces(comm, 16 << 20, 10);
  if (!t) return t.takeError();
  std::vector<std::pair<double, double>> timings;
  for (const auto &x : *t) timings.push_back({x.bytes, x.seconds});
  return fitTimings(timings, comm.size(), table);
}

// On several nodes: the link between nodes measured by one rank a node, and
// the link within a node by the ranks of each node at once (when a node has
// two or more), both reported by rank 0.
Expected<passes::NetModel> measureNodes(runtime::Communicator &comm, std::string &table) {
  bool first = true;
  for (int r = 0; r < comm.rank(); ++r) first = first && comm.nodeOf(r) != comm.nodeOf(comm.rank());
  auto node = comm.split(comm.nodeOf(comm.rank()), "calibration");
  if (!node) return node.takeError();
  passes::NetModel within;
  bool hasWithin = (*node)->size() > 1;
  std::string nodeTable;
  if (hasWithin) {
    auto w = measureLink(**node, nodeTable);
    if (!w) return w.takeError();
    within = *w;
  }
  auto leaders = comm.split(first ? 0 : -1, "calibration");
  if (!leaders) return leaders.takeError();
  passes::NetModel net;
  if (*leaders) {
    auto n = measureLink(**leaders, table);
    if (!n) return n.takeError();
    net = *n;
  }
  // Rank 0 leads node 0; the others wait for it here.
  float token = 0;
  if (Error e = comm.allreduce(&token, 1, ir::DType::F32, runtime::ReduceOp::Sum, "calibration"))
    return e;
  if (hasWithin) {
    net.nodeAlpha = within.alpha;
    net.nodeBeta = within.beta;
    net.hasNodeLink = true;
    table = "between nodes (one rank a node):\n" + table + "within node " +
            comm.nodeName(0) + " (" + std::to_string((*node)->size()) + " ranks):\n" + nodeTable;
  }
  return net;
}

// The reductions of a device backend (NCCL), timed like measureLink's; fails for a backend that
// reduces through the host.
Expected<passes::NetModel> measureDevice(runtime::Communicator &comm, runtime::Backend &device,
                                         std::string &table) {
  auto t = device.timeAllreduces(comm, 16 << 20, 10);
  if (!t) return t.takeError();
  return fitTimings(*t, comm.size(), table);
}

// Measures the network of the job's ranks and writes the model to `path`: the reductions of
// `device` when it has its own (NCCL: the GPUs and their links move the data, host_share 0),
// else the host communicator's.
int calibrate(runtime::Communicator &comm, const std::string &path, runtime::Backend *device) {
  if (comm.size() < 2) {
    std::cerr << "dtnn-run: error: --calibrate measures the network between ranks; run it "
                 "under mpirun with two or more\n";
    return kUsageError;
  }
  std::string table;
  bool onDevice = false;
  Expected<passes::NetModel> net = Error::make("not measured");
  if (device) {
    net = measureDevice(comm, *device, table);
    onDevice = static_cast<bool>(net);
    if (!net) {
      DTNN_LOG_AT(Info, "calibrate", net.error().message() + "; measuring the host's reductions");
      consumeError(net.takeError());
      table.clear();
    }
  }
  if (!onDevice) net = comm.nodeCount() > 1 ? measureNodes(comm, table) : measureLink(comm, table);
  if (!net) {
    std::cerr << ("dtnn-run: error: " + net.error().message() + "\n");
    return kInputError;
  }
  // Over the slowest link the job has: between nodes when it spans several.
  if (!onDevice) {
    auto share = runtime::timeHostShare(comm, net->beta);
    if (!share) {
      std::cerr << ("dtnn-run: error: " + share.error().message() + "\n");
      return kInputError;
    }
    net->hostShare = *share;
  }
  if (comm.rank() != 0) return kOk;
  std::string where = std::string(onDevice ? "NCCL over " : "") + std::to_string(comm.size()) + " ranks" +
                      (comm.nodeCount() > 1 ? " on " + std::to_string(comm.nodeCount()) + " nodes"
                                            : std::string());
  std::string comment = "measured by dtnn-run --calibrate on " + where +
                        " (fastest of 10 allreduces per size):\n#" +
                        table.substr(0, table.size() - 1);
  for (size_t i = comment.find('\n'); i != std::string::npos; i = comment.find('\n', i + 1))
    if (i + 1 < comment.size() && comment[i + 1] != '#') comment.insert(i + 1, "#");
  std::string text = passes::formatNetModel(*net, comment);
  if (Error e = writeOutput(path, text)) {
    std::cerr << ("dtnn-run: error: " + e.message() + "\n");
    return kInputError;
  }
  std::cout << "allreduce on " << where << ":\n" << table << "alpha " << net->alpha * 1e6
            << " us, beta " << net->beta * 1e9 << " ns/byte (";
  if (net->beta > 0)
    std::cout << 1 / net->beta / 1e9 << " GB/s";
  else
    std::cout << "times did not grow with size: were the ranks busy?";
  std::cout << ")";
  if (net->hasNodeLink && comm.nodeCount() > 1)
    std::cout << "; within a node alpha " << net->nodeAlpha * 1e6 << " us, beta "
              << net->nodeBeta * 1e9 << " ns/byte";
  std::cout << "; cores busy moving data " << std::lround(100 * net->hostShare)
            << "% of a reduction's time; written to " << path << "\n";
  return kOk;
}

// What the ranks must agree on from the command line: the text of the model
// file and its imports, and the options whose specs say so.
std::vector<runtime::AgreedItem> agreedItems(const cli::ParsedArgs &args,
                                             const std::vector<cli::OptionSpec> &specs,
                                             const SourceManager &sm) {
  std::vector<std::string_view> texts = sm.texts();
  std::sort(texts.begin(), texts.end());
  std::string joined;
  for (std::string_view t : texts) joined.append(t).push_back('\0');
  std::vector<runtime::AgreedItem> items = {
      {"the text of the model file and its imports", "", std::move(joined),
       "'" + args.positional[0] + "'"}};
  for (const cli::OptionSpec &o : specs) {
    if (o.agree == cli::Agree::No) continue;
    std::string value = !args.has(o.name)                                          ? "not given"
                        : o.agree == cli::Agree::Presence || o.valueName.empty() ? "given"
                                                                                   : "'" + args.get(o.name) + "'";
    items.push_back({"--" + o.name, value, "", ""});
  }
  return items;
}

// Writes the op profile of the train step (rank 0).
Error writeOpProfile(const std::string &path, const runtime::StepProfile &p) {
  passes::OpProfile out;
  out.graph = p.plan().graph->name();
  out.batch = p.plan().batch;
  std::map<std::string, std::pair<double, int>> sums;
  double ops = 0;
  for (const auto &[op, sec] : p.opSeconds()) {
    auto &s = sums[passes::opKey(*op)];
    s.first += sec;
    s.second += 1;
    ops += sec;
  }
  out.overhead = std::max(0.0, p.meanStepSeconds() - ops);
  for (const auto &[key, s] : sums) out.seconds[key] = s.first / s.second;
  return writeOutput(path, passes::formatOpProfile(out));
}

// --elastic N: this process launches the job and restarts it (tools/lib/Elastic.h).
int elastic(const cli::ParsedArgs &args, std::vector<std::string> argvec) {
  if (!args.has("elastic")) return usageError("--max-restarts needs --elastic N");
  if (runtime::launchedByMpi())
    return usageError("--elastic launches the job itself: run 'dtnn-run --elastic N ...' without "
                      "mpirun ($DTNN_MPIRUN names the launcher it runs)");
  cli::ElasticOptions o;
  if (Error msg = cli::readCount("--elastic", args.get("elastic"), 1, 1 << 20, o.ranks))
    return usageError(msg.message());
  if (args.has("max-restarts"))
    if (Error msg = cli::readCount("--max-restarts", args.get("max-restarts"), 0, 1000, o.maxRestarts))
      return usageError(msg.message());
  if (!args.has("save"))
    return usageError("--elastic restarts a job from its last checkpoint: give --save FILE "
                      "(and --checkpoint-every N for checkpoints during training)");
  for (const char *mode : {"eval-only", "predict", "generate", "calibrate"})
    if (args.has(mode))
      return usageError(std::string("--elastic restarts training; --") + mode + " does not apply");
  const char *launcher = std::getenv("DTNN_MPIRUN");
  o.launcher = launcher && *launcher ? launcher : "mpirun";
  std::error_code ec;
  o.program = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return usageError("cannot find this program's path (/proc/self/exe): " + ec.message());
  cli::dropOption(argvec, "--elastic", true);
  cli::dropOption(argvec, "--max-restarts", true);
  return cli::runElastic(o, std::move(argvec));
}

// Everything but the last-resort handling of main.
int run(int argc, char **argv, std::unique_ptr<runtime::Communicator> &comm) {
  // Line by line also into a file or a pipe, so that a long run's log is current.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::vector<std::string> argvec(argv + 1, argv + argc);
  std::vector<cli::OptionSpec> specs = options();
  specs.insert(specs.end() - 2, cli::kDataParallelOptions.begin(), cli::kDataParallelOptions.end());
  auto args = cli::parseArgs(argvec, specs);
  if (!args) return usageError(args.error().message());
  if (args->has("help")) {
    std::string names;
    for (const std::string &n : runtime::BackendRegistry::get().names())
      names += (names.empty() ? "" : ", ") + n;
    std::cout << "usage: dtnn-run FILE.dtnn [options]\n\n"
              << "Trains the model of FILE.dtnn; its train section gives the defaults.\n\n"
              << cli::optionsHelp(specs) << "\nBackends of this build, the default first: "
              << names << "\n";
    return kOk;
  }
  if (args->has("elastic") || args->has("max-restarts")) return elastic(*args, argvec);
  runtime::BackendOptions bo;
  if (args->has("threads")) {
    int64_t t = 0;
    if (Error msg = cli::readCount("--threads", args->get("threads"), 1, 4096, t))
      return usageError(msg.message());
    bo.threads = static_cast<int>(t);
  }
  if (args->has("jit-cache")) bo.kernelCache = args->get("jit-cache");
  if (args->has("tf32")) {
    bo.tf32 = args->get("tf32");
    if (bo.tf32 != "conv" && bo.tf32 != "all" && bo.tf32 != "off")
      return usageError("--tf32 expects conv, all or off, got '" + bo.tf32 + "'");
  }
  bo.deterministic = args->has("deterministic");
  // Before MPI and the thread pool start: may run this program again, waiting passively.
  runtime::waitPassivelyIfOversubscribed(argv, bo.threads);
  runtime::MpiOptions mo;
  if (args->has("comm-timeout")) {
    double t = 0;
    if (!parsePositive(args->get("comm-timeout"), t))
      return usageError("--comm-timeout expects a positive number of seconds, got '" +
                        args->get("comm-timeout") + "'");
    mo.timeoutSeconds = t;
  }
  if (args->has("comm-slowdown")) {
    double f = 0;
    const std::string &v = args->get("comm-slowdown");
    if (v != "0" && (!parsePositive(v, f) || f <= 1))
      return usageError("--comm-slowdown expects 0 or a factor above 1, got '" + v + "'");
    mo.slowdownFactor = f;
  }
  if (args->has("comm-progress-ms")) {
    double ms = 0;
    const std::string &v = args->get("comm-progress-ms");
    if (v != "0" && !parsePositive(v, ms))
      return usageError("--comm-progress-ms expects 0 or a positive number of milliseconds, got '" +
                        v + "'");
    mo.progressSeconds = ms / 1000;
  }
  if (runtime::launchedByMpi()) {
    auto c = runtime::makeMpiCommunicator(mo);
    if (!c) {
      std::cerr << ("dtnn-run: error: " + c.error().message() + "\n");
      return kInputError;
    }
    comm = std::move(*c);
    if (comm->size() > 1) {
      runtime::installStopSignals(("dtnn-run: rank " + std::to_string(comm->rank())).c_str(), true);
      log::setRank(comm->rank());
    }
  } else {
    comm = runtime::makeLocalCommunicator();
  }
  // A device backend's GPU and reductions follow the ranks of this node.
  int local = 0, onNode = 0;
  for (int r = 0; r < comm->size(); ++r)
    if (comm->nodeOf(r) == comm->nodeOf(comm->rank())) {
      onNode += 1;
      local += r < comm->rank();
    }
  bo.ranksOnNode = onNode;
  if (runtime::launchedByMpi()) bo.localRank = local;
  bo.collectives = args->has("collectives") ? args->get("collectives") : "auto";
  if (bo.collectives != "auto" && bo.collectives != "nccl" && bo.collectives != "mpi")
    return usageError("--collectives expects nccl or mpi, got '" + bo.collectives + "'");
  bo.commTimeoutSeconds = mo.timeoutSeconds;
  if (args->has("calibrate")) {
    // On a device that reduces in its own memory (NCCL), its reductions are the ones measured.
    std::optional<runtime::BackendSet> device;
    if (args->has("backend")) {
      auto set = runtime::BackendSet::create(args->get("backend"), bo);
      if (!set) {
        std::cerr << "dtnn-run: error: " << set.error().message() << "\n";
        return kInputError;
      }
      device.emplace(std::move(*set));
    }
    return calibrate(*comm, args->get("calibrate"), device ? &device->primary() : nullptr);
  }
  if (args->positional.size() != 1) return usageError("expected one model file");
  if (Error clash = cli::pathClash(
          {{"--save", args->get("save")}, {"--metrics", args->get("metrics")},
           {"--predictions", args->get("predictions")}, {"--trace", args->get("trace")},
           {"--op-profile-out", args->get("op-profile-out")}},
          {{"the model file", args->positional[0]}, {"--resume", args->get("resume")},
           {"--init-from", args->get("init-from")}, {"--predict", args->get("predict")},
           {"--net", args->get("net")}, {"--op-profile", args->get("op-profile")}}))
    return usageError(clash.message());
  if (args->has("data") && args->has("synthetic"))
    return usageError("--data and --synthetic exclude each other");
  bool generating = args->has("generate");
  // Images to predict print their classes; a tensor's outputs go to a file.
  bool images = args->has("predict") && namesImages(args->get("predict"));
  if (!generating && !images && args->has("predict") != args->has("predictions"))
    return usageError("--predict IN and --predictions OUT go together");
  if (images && args->has("predictions"))
    return usageError("--predict " + args->get("predict") + " names images, whose classes are "
                      "printed; --predictions does not apply");
  for (const char *flag : {"prompt", "temperature", "top-k"})
    if (args->has(flag) && !generating)
      return usageError(std::string("--") + flag + " needs --generate N");
  if (generating && args->has("prompt") == args->has("predict"))
    return usageError("--generate continues one prompt: give --prompt TEXT or --predict FILE");
  if ((args->has("predict") || generating) && args->has("eval-only"))
    return usageError(std::string(generating ? "--generate" : "--predict") +
                      " and --eval-only exclude each other");
  // What only training uses would be ignored by a run that trains nothing.
  for (const char *mode : {"eval-only", "predict", "generate"})
    for (const char *flag : {"save", "steps", "lr", "epochs", "checkpoint-every", "validation",
                             "profile", "op-profile-out", "skip-comm", "deterministic",
                             "trace", "trace-steps",
                             "micro-batch", "sync-bn", "bucket-bytes", "net", "op-profile"})
      if (args->has(mode) && args->has(flag))
        return usageError(std::string("--") + mode + " trains nothing, so --" + flag +
                          " does not apply");
  for (const char *mode : {"predict", "generate"})
    if (args->has(mode) && args->has("metrics"))
      return usageError(std::string("--") + mode +
                        " computes outputs and no metrics, so --metrics does not apply");
  if (args->has("init-from") && args->has("resume"))
    return usageError("--init-from and --resume exclude each other: --resume continues a run, "
                      "weights and optimizer state; --init-from starts one from weights");

  runtime::RunOptions ro;
  if (args->has("steps"))
    if (Error msg = cli::readCount("--steps", args->get("steps"), 0, INT64_MAX, ro.maxSteps))
      return usageError(msg.message());
  if (Error msg = runtime::BackendSet::checkName(args->get("backend"))) return usageError(msg.message());
  auto backends = runtime::BackendSet::create(args->get("backend"), bo);
  if (!backends) {
    std::cerr << "dtnn-run: error: " << backends.error().message() << "\n";
    return kInputError;
  }

  passes::DataParallelOptions dp;
  dp.ranks = comm->size();
  dp.nodes = comm->nodeCount();
  if (Error msg = cli::readDataParallelOptions(*args, dp)) return usageError(msg.message());
  // Read now, so that a bad file is reported on one rank as on many.
  if (!dp.netPath.empty())
    if (auto net = passes::readNetModel(dp.netPath); !net) {
      std::cerr << ("dtnn-run: error: " + net.error().message() + "\n");
      return kInputError;
    }
  // Every rank compiles; rank 0 alone reports.
  cli::NullStream quiet;
  std::ostream &out = comm->rank() == 0 ? std::cout : quiet;
  SourceManager sm;
  DiagnosticEngine diags(sm, comm->rank() == 0 ? std::cerr : quiet);
  frontend::CompileOptions co;
  co.modelName = args->get("model");
  co.importDirs = args->all("I");
  co.importDirs.push_back(standardLibraryDir());
  auto module = frontend::compileFile(args->positional[0], co, sm, diags);
  if (!module) return kInputError;
  if (Error msg = cli::applySettingFlags(*args, module->trainConfig()))
    return usageError(msg.message());

  // Settings errors first, before the passes would report them less directly.
  auto settings = ir::readRunSettings(module->trainConfig());
  if (settings) {
    if (auto spec = passes::readOptimizer(settings->optimizer); !spec) settings = spec.takeError();
  }
  if (!settings) {
    std::cerr << ("dtnn-run: error: " + settings.error().message() + "\n");
    return kInputError;
  }
  if (settings->precision.name == "bf16")
    for (const auto &b : backends->all()) {
      std::string warning;
      if (Error e = b->checkPrecision(ir::DType::BF16, warning)) {
        std::cerr << ("dtnn-run: error: " + e.message() + "\n");
        return kInputError;
      }
      if (!warning.empty()) out << "warning: " << warning << "\n";
    }
  passes::PassManagerOptions po;
  po.noFuse = args->has("no-fuse");
  po.noJit = args->has("no-jit");
  // Fusion passes ask the backends this run plans with.
  auto target = runtime::makeFusionTarget(args->get("backend"));
  if (!target) return usageError(target.error().message());
  po.target = target->get();
  passes::PassManager pm(po);
  // A deterministic run reduces gradients itself, after a gradient step per
  // micro-batch; others reduce them in the train step, as the passes place it.
  // --predict runs the forward graph only, so a model of any output shape can.
  std::string pipeline = passes::trainPipeline(dp);
  if (args->has("predict") || generating)
    pipeline = "inference";
  else if (args->has("deterministic"))
    pipeline += ",split-train-step";
  else if (std::string d = passes::dataParallelPipeline(dp); !d.empty())
    pipeline += "," + d;
  if (!args->has("predict") && !generating) pipeline += "," + passes::updatePipeline();
  pipeline = passes::withPrecision(pipeline, settings->precision.name);
  if (Error e = pm.parsePipeline(pipeline)) return usageError(e.message());
  if (Error e = pm.run(*module)) {
    std::cerr << ("dtnn-run: error: " + e.message() + "\n");
    return kInputError;
  }

  ro.dataDir = args->get("data");
  ro.synthetic = args->has("synthetic");
  ro.evalOnly = args->has("eval-only");
  if (args->has("data-workers")) {
    int64_t w = 0;
    if (Error msg = cli::readCount("--data-workers", args->get("data-workers"), 1, 256, w))
      return usageError(msg.message());
    ro.dataWorkers = static_cast<int>(w);
  }
  ro.metricsPath = args->get("metrics");
  ro.tracePath = args->get("trace");
  if (args->has("trace-steps")) {
    if (!args->has("trace")) return usageError("--trace-steps needs --trace FILE.json");
    if (Error msg = cli::readCount("--trace-steps", args->get("trace-steps"), 0, 100000,
                                   ro.traceSteps))
      return usageError(msg.message());
  }
  ro.savePath = args->get("save");
  ro.resumePath = args->get("resume");
  ro.initFromPath = args->get("init-from");
  ro.predictPath = args->get("predict");
  ro.predictionsPath = args->get("predictions");
  if (generating) {
    if (Error msg = cli::readCount("--generate", args->get("generate"), 1, 1000000, ro.generate))
      return usageError(msg.message());
    ro.prompt = args->get("prompt");
    ro.promptFromFile = args->has("predict");
    if (args->has("top-k"))
      if (Error msg = cli::readCount("--top-k", args->get("top-k"), 1, INT32_MAX, ro.sampling.topK))
        return usageError(msg.message());
    if (args->has("temperature")) {
      const std::string &t = args->get("temperature");
      if (t != "0" && !parsePositive(t, ro.sampling.temperature))
        return usageError("--temperature expects 0 or a positive number, got '" + t + "'");
      if (t == "0") ro.sampling.temperature = 0;
    }
  }
  // Open MPI gives each rank a pseudo-terminal whether mpirun writes to one or to a file, so
  // under a launcher the output is taken for a log: progress lines, no bar and its escapes.
  ro.progress = args->has("no-progress")                           ? runtime::ProgressMode::Off
                : isatty(STDOUT_FILENO) && !runtime::launchedByMpi() ? runtime::ProgressMode::Bar
                                                                     : runtime::ProgressMode::Lines;
  if (args->has("progress-every")) {
    std::string text = args->get("progress-every");
    char *end = nullptr;
    double s = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || !(s > 0 && s <= 1e9))
      return usageError("--progress-every expects seconds between 0 and 1e9, got '" + text + "'");
    ro.progressSeconds = s;
  }
  if (args->has("synthetic-size")) {
    if (!ro.synthetic) return usageError("--synthetic-size needs --synthetic");
    std::string sizes = args->get("synthetic-size");
    size_t comma = sizes.find(',');
    if (Error msg = cli::readCount("--synthetic-size", sizes.substr(0, comma), 1,
                                   INT32_MAX, ro.syntheticTrain))
      return usageError(msg.message());
    if (comma != std::string::npos)
      if (Error msg = cli::readCount("--synthetic-size", sizes.substr(comma + 1), 1,
                                     INT32_MAX, ro.syntheticTest))
        return usageError(msg.message());
  }
  ro.profile = args->has("profile") || args->has("op-profile-out");
  ro.comm = comm.get();
  ro.skipComm = args->has("skip-comm");
  ro.deterministic = args->has("deterministic");
  ro.replay = !args->has("no-cuda-graph");
  if (args->has("micro-batch"))
    if (Error msg =
            cli::readCount("--micro-batch", args->get("micro-batch"), 1, INT64_MAX, ro.microBatch))
      return usageError(msg.message());
  if (args->has("micro-batch") && !ro.deterministic)
    return usageError("--micro-batch needs --deterministic");
  // A deterministic run reduces gradients itself, and normalizes each micro-batch.
  for (const char *flag : {"sync-bn", "skip-comm", "bucket-bytes", "net", "op-profile"})
    if (ro.deterministic && args->has(flag))
      return usageError(std::string("--") + flag + " does not apply with --deterministic, which "
                        "sums gradients itself and normalizes each micro-batch on its own");
  ro.agreed = agreedItems(*args, specs, sm);
  for (const char *flag : {"save", "metrics", "predictions", "op-profile-out", "trace"})
    if (args->has(flag)) ro.outputs.emplace_back(std::string("--") + flag, args->get(flag));
  if (args->has("op-profile-out")) {
    std::string path = args->get("op-profile-out");
    ro.onProfile = [path](const runtime::StepProfile &p) { return writeOpProfile(path, p); };
  }
  return static_cast<int>(runtime::train(*module, *settings, ro, *backends, out, std::cerr));
}

} // namespace

// Runs that would not fit in the backend's memory are refused before they
// start; an allocation that fails anyway (data sets, host copies), or any
// other exception, ends the run with a message instead of an abort.
// In a job of several ranks, a rank that fails ends the whole job, so that
// no other rank waits for it in a collective.
int dtnn::dtnnRunMain(int argc, char **argv) {
  // Before any thread starts: under ulimit -v, malloc's extra arenas would take the room.
  runtime::keepMallocInOneArena();
  runtime::installStopSignals("dtnn-run");
  std::unique_ptr<runtime::Communicator> comm;
  int status = kOk;
  try {
    if (Error e = registerBuiltins()) {
      std::cerr << "dtnn-run: error: " << e.message() << "\n";
      return kInputError;
    }
    // Before the arguments are read: a plugin's settings choices (optimizers, data sources) are
    // flags' values.
    if (Error e = loadPlugins(argc, argv)) {
      std::cerr << "dtnn-run: error: " << e.message() << "\n";
      return kInputError;
    }
    status = run(argc, argv, comm);
  } catch (...) {
    std::cout << std::flush;
    try {
      std::string message = cli::exceptionMessage(std::current_exception());
      // An allocation that no check foresaw: say what the limit of ulimit -v or -d leaves, if any.
      if (runtime::MappingLimit l = runtime::mappingLimit(); message == "out of memory" && l.limit != UINT64_MAX)
        message += ": " + l.name + " of " + runtime::formatBytes(l.limit) + " leaves " +
                   runtime::formatBytes(l.left) + "; raise the limit";
      std::cerr << ("dtnn-run: " +
                    (comm && comm->size() > 1 ? "rank " + std::to_string(comm->rank()) + ": " : "") +
                    "error: " + message + "\n");
    } catch (const std::bad_alloc &) {
      // Too little memory left even for the message's text: a fixed one.
      static const char kText[] =
          "dtnn-run: error: out of memory, with too little left to say more; raise the limit "
          "(ulimit -v or -d) or free memory\n";
      (void)!write(STDERR_FILENO, kText, sizeof kText - 1);
    }
    status = kInputError;
  }
  // A run a signal stopped (128 + the signal) stopped on every rank, which agreed to, so the
  // job ends by itself; any other failure of one rank ends the others.
  if (status != kOk && status < 128 && comm && comm->size() > 1) comm->abortJob(status);
  return status;
}
