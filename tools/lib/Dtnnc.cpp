// dtnnc: the compiler driver. It parses options and calls the libraries;
// every stage it exposes (AST, IR, passes, summary) lives in a library.
#include "dtnn/Compiler.h"
#include "dtnn/Plugin.h"
#include "dtnn/Tools.h"
#include "dtnn/Registry.h"
#include "frontend/Frontend.h"
#include "ir/Files.h"
#include "ir/Output.h"
#include "ir/OpCatalogue.h"
#include "ir/SettingsCatalogue.h"
#include "ir/Printer.h"
#include "ir/RunSettings.h"
#include "ir/SourceFile.h"
#include "ir/Summary.h"
#include "ir/TextParser.h"
#include "ir/Verifier.h"
#include "passes/CostModel.h"
#include "passes/PassManager.h"
#include "passes/PassRegistry.h"
#include "passes/Pipelines.h"
#include "runtime/train/FusionTargets.h"
#include "runtime/Threads.h"
#include "runtime/plan/Plan.h"
#include "tools/lib/CommandLine.h"
#include "tools/lib/DataParallel.h"
#include "tools/lib/DtnncCommands.h"
#ifdef DTNN_HAVE_JIT
#include "backends/jit/JitBackend.h"
#endif
#ifdef DTNN_HAVE_CUDA
#include "backends/cuda/CudaBackend.h"
#endif

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <iostream>
#include <sstream>

using namespace dtnn;

namespace {

constexpr int kOk = 0, kInputError = 1, kUsageError = 2;

const char *kUsage =
    "usage: dtnnc <command> [options]\n"
    "\n"
    "Commands:\n"
    "  compile FILE.dtnn   check a model and print it as AST or graph IR\n"
    "  opt FILE.dtir       run passes over textual IR and print the result\n"
    "  summary FILE.dtnn   print a per-layer table of a model\n"
    "  gradcheck OP|FILE   check an op's gradient rule against finite differences\n"
    "  import MODEL.onnx   write an ONNX model as .dtnn source and safetensors weights\n"
    "  export FILE.dtnn    write a model's inference graph and weights as an ONNX model\n"
    "  ops                 print the op catalogue (Markdown) generated from the op table\n"
    "  settings            print the run settings and their choices (Markdown) from the registries\n"
    "\n"
    "Run 'dtnnc <command> --help' for the options of a command.\n";

const std::vector<cli::OptionSpec> kPassOptions = {
    {"passes", "LIST", "comma-separated passes or pipelines to run"},
    {"print-ir-after-all", "", "print the IR after every pass"},
    {"print-ir-after", "NAME", "print the IR after the named pass", true},
    {"verify-each", "", "verify the IR after every pass"},
    {"time-passes", "", "print the time each pass took (to stderr)"},
    {"remarks", "", "print what the passes decided and why (to stderr; --emit=plan prints it above the plans)"},
    {"no-fuse", "", "leave out the passes that fuse ops (to bisect a result or measure the gain); implies --no-jit"},
    {"no-jit", "", "leave out decompose-batchnorm and fuse-elementwise, which make the fused ops the jit backend compiles"},
};

const std::vector<cli::OptionSpec> kPlanOptions = {
    {"batch", "B", "the batch size of --emit=plan, llvm and cuda (default 1)"},
    {"target-cpu", "CPU", "the CPU --emit=llvm compiles for, as LLVM names it (default: this "
                          "machine's)"},
    {"backend", "NAME", "the backend --emit=plan plans for (default: the build's default)"},
    {"collectives", "KIND", "how a GPU plan reduces gradients: nccl (on the device, the default) "
                            "or mpi (host copies, for ranks that share a GPU)"},
    {"stop-after", "STAGE", "print --emit=plan after select, layouts, buffers or bind (default bind)"},
    {"threads", "T", "the thread count --emit=plan plans for (default: the CPUs this process may "
                     "run on, so that one machine always prints the same plan)"},
    {"jit-cache", "DIR", "where the jit keeps compiled kernels across runs (default: "
                         "$DTNN_JIT_CACHE, else ~/.cache/dtnn/jit; 'off': nowhere)"},
};

// What --emit=plan prints: plans at one batch size on one backend, after one stage.
struct PlanOptions {
  int64_t batch = 1;
  int threads = 0;
  std::string backend;
  runtime::PlanStage last = runtime::PlanStage::Bind;
  std::string targetCpu;
  std::string kernelCache;
  std::string collectives = "nccl";
};

// Reads the plan options; fails with a usage error message.
Error readPlanOptions(const cli::ParsedArgs &args, bool emitPlan, PlanOptions &o) {
  if (args.has("batch")) {
    const std::string b = args.get("batch");
    char *end = nullptr;
    long long v = std::strtoll(b.c_str(), &end, 10);
    if (b.empty() || *end != '\0' || v < 1 || v > (1LL << 30))
      return Error::make("--batch expects an integer from 1 to 1073741824, got '" + b + "'");
    o.batch = v;
  }
  o.backend = args.get("backend");
  o.targetCpu = args.get("target-cpu");
  if (Error e = runtime::BackendSet::checkName(o.backend)) return e;
  // Kernels size their scratch by the thread count; a count sampled from the machine's load
  // would make the plan text change from run to run.
  o.threads = runtime::affinityCpuCount();
  if (args.has("threads")) {
    int64_t t = 0;
    if (Error msg = cli::readCount("--threads", args.get("threads"), 1, 4096, t))
      return msg;
    o.threads = static_cast<int>(t);
  }
  if (args.has("jit-cache")) o.kernelCache = args.get("jit-cache");
  if (args.has("collectives")) {
    o.collectives = args.get("collectives");
    if (o.collectives != "nccl" && o.collectives != "mpi")
      return Error::make("--collectives expects nccl or mpi, got '" + o.collectives + "'");
  }
  if (args.has("stop-after")) {
    auto stage = runtime::parsePlanStage(args.get("stop-after"));
    if (!emitPlan) return Error::make("--stop-after needs --emit=plan");
    if (!stage)
      return Error::make("unknown plan stage '" + args.get("stop-after") +
             "' (expected select, layouts, buffers or bind)");
    o.last = *stage;
  }
  return Error::success();
}

std::vector<cli::OptionSpec> withCommon(std::vector<cli::OptionSpec> specs) {
  specs.push_back({"o", "FILE", "write the output to FILE instead of stdout"});
  specs.push_back({"plugin", "LIB.so", "load a plugin's ops, passes, optimizers... (repeatable; "
                                       "also $DTNN_PLUGINS, paths separated by ':')", true});
  specs.push_back({"help", "", "show this help"});
  return specs;
}

int usageError(const std::string &cmd, const std::string &msg) {
  std::cerr << "dtnnc " << cmd << ": error: " << msg << "\n"
            << "Run 'dtnnc " << cmd << " --help' for usage.\n";
  return kUsageError;
}

// The -o file when it is the input file, which writing would destroy.
Error outputClash(const cli::ParsedArgs &args) {
  std::string out = args.get("o");
  return cli::pathClash({{"-o", out == "-" ? "" : out}}, {{"the input file", args.positional[0]}});
}

// Writes `text` to the -o file (all or nothing) or stdout.
int emit(const cli::ParsedArgs &args, const std::string &text) {
  std::string out = args.get("o");
  if (out.empty() || out == "-") {
    std::cout << text << std::flush;
    if (!std::cout) {
      std::cerr << "dtnnc: error: cannot write to standard output: " << std::strerror(errno) << "\n";
      return kInputError;
    }
    return kOk;
  }
  if (Error e = writeOutput(out, text)) {
    std::cerr << "dtnnc: error: " << e.message() << "\n";
    return kInputError;
  }
  return kOk;
}

// Builds a pass manager from the pass options and runs it on `m`: false when a pass failed,
// which it reports; fails with a usage error for a bad pipeline or pass name.
Expected<bool> runPasses(const cli::ParsedArgs &args, const std::string &defaultPipeline,
                         ir::Module &m, std::ostream &irOut, std::vector<passes::Remark> &remarks) {
  passes::PassManagerOptions o;
  o.remarks = &remarks;
  o.verifyEach = args.has("verify-each");
  o.printIrAfterAll = args.has("print-ir-after-all");
  o.printIrAfter = args.all("print-ir-after");
  o.timePasses = args.has("time-passes");
  o.irOut = &irOut;
  o.timingOut = &std::cerr;
  o.noFuse = args.has("no-fuse");
  o.noJit = args.has("no-jit");
  // Fusion passes ask the backends the module would run on (--backend).
  auto target = runtime::makeFusionTarget(args.get("backend"));
  if (!target) return target.takeError();
  o.target = target->get();
  for (const std::string &name : o.printIrAfter)
    if (!passes::createPass(name)) {
      std::string hint = closestMatch(name, passes::passNames());
      return Error::make("unknown pass '" + name + "' in --print-ir-after" +
                         (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
    }
  passes::PassManager pm(o);
  // An explicit empty --passes= runs nothing.
  std::string pipeline = args.has("passes") ? args.all("passes").back() : defaultPipeline;
  if (Error e = pm.parsePipeline(pipeline)) return e;
  if (Error e = pm.run(m)) {
    std::cerr << "dtnnc: error: " << e.message() << "\n";
    return false;
  }
  return true;
}

// Plans each graph of `m` at batch size `batch` on the backends `backend`
// names (and the fallbacks) up to stage `last`, and hands each plan to `use`.
// The train step is planned first, as dtnn-run plans it, so that its kernels
// choose the parameters' layouts.
Error forEachPlan(const ir::Module &m, const PlanOptions &o, runtime::PlanStage last,
                  const std::function<Error(const ir::Graph &, const runtime::Plan &)> &use) {
  runtime::BackendOptions bo;
  bo.threads = o.threads;
  bo.kernelCache = o.kernelCache;
  bo.collectives = o.collectives;
  bo.planOnly = true;
  auto backends = runtime::BackendSet::create(o.backend, bo);
  if (!backends) return backends.takeError();
  runtime::PlanContext ctx{*backends, m, {}};
  std::vector<const ir::Graph *> order;
  for (const auto &g : m.graphs())
    if (g->name().ends_with(".train")) order.push_back(g.get());
  for (const auto &g : m.graphs())
    if (!g->name().ends_with(".train")) order.push_back(g.get());
  for (const ir::Graph *g : order) {
    auto plan = runtime::buildPlan(*g, o.batch, ctx, last);
    if (!plan) return plan.takeError();
    if (Error e = use(*g, *plan)) return e;
  }
  return Error::success();
}

// Prints the plan of each graph of `m` after stage `o.last`, in the module's order.
Error printPlans(const ir::Module &m, const PlanOptions &o, std::ostream &os) {
  std::map<const ir::Graph *, std::string> text;
  if (Error e = forEachPlan(m, o, o.last, [&](const ir::Graph &g, const runtime::Plan &p) {
        text[&g] = p.str();
        return Error::success();
      }))
    return e;
  for (const auto &g : m.graphs()) os << text[g.get()];
  return Error::success();
}

// Draws the plan of each graph of `m` for Graphviz, one cluster each, in the module's order.
Error printDot(const ir::Module &m, const PlanOptions &o, std::ostream &os) {
  std::map<const ir::Graph *, std::string> text;
  if (Error e = forEachPlan(m, o, runtime::PlanStage::Select,
                            [&](const ir::Graph &g, const runtime::Plan &p) {
                              text[&g] = runtime::planDot(p);
                              return Error::success();
                            }))
    return e;
  os << "digraph dtnn {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n"
        "  edge [color=\"#555555\"];\n";
  for (const auto &g : m.graphs()) os << text[g.get()];
  os << "}\n";
  return Error::success();
}

// Prints the optimised LLVM IR of the jit's kernel for each fused op, graph by graph, in the
// layouts the plans at the plan options' batch chose, for the plan options' CPU.
Error printLlvm(const ir::Module &m, const PlanOptions &o, std::ostream &os) {
#ifdef DTNN_HAVE_JIT
  std::map<const ir::Graph *, std::string> text;
  if (Error e = forEachPlan(m, o, runtime::PlanStage::Layouts,
                            [&](const ir::Graph &g, const runtime::Plan &p) -> Error {
                              Expected<std::string> ir = jit::fusedKernelsIR(p, o.targetCpu);
                              if (!ir) return ir.takeError();
                              text[&g] = *ir;
                              return Error::success();
                            }))
    return e;
  for (const auto &g : m.graphs())
    if (!text[g.get()].empty()) os << "; graph @" << g->name() << "\n" << text[g.get()];
  return Error::success();
#else
  (void)m, (void)o, (void)os;
  return Error::make("--emit=llvm needs the jit backend, which this build does not have");
#endif
}

// Prints the CUDA source of the kernels the cuda backend generates for each graph, in the plans
// at the plan options' batch (planned for the cuda backend whatever --backend says).
Error printCuda(const ir::Module &m, PlanOptions o, std::ostream &os) {
#ifdef DTNN_HAVE_CUDA
  o.backend = "cuda";
  std::map<const ir::Graph *, std::string> text;
  if (Error e = forEachPlan(m, o, runtime::PlanStage::Layouts,
                            [&](const ir::Graph &g, const runtime::Plan &p) -> Error {
                              Expected<std::string> src = cuda::generatedKernelsSource(p);
                              if (!src) return src.takeError();
                              text[&g] = *src;
                              return Error::success();
                            }))
    return e;
  for (const auto &g : m.graphs())
    if (!text[g.get()].empty()) os << "// graph @" << g->name() << "\n" << text[g.get()];
  return Error::success();
#else
  (void)m, (void)o, (void)os;
  return Error::make("--emit=cuda needs the cuda backend, which this build does not have");
#endif
}

// Runs the passes of `pipeline` (or --passes) over `m`, then prints after what `out` holds what
// `kind` says (ir, plan, dot, llvm or cuda), where --output says.
int passAndEmit(const std::string &cmd, const cli::ParsedArgs &args, const std::string &pipeline,
                ir::Module &m, const std::string &kind, const PlanOptions &plan,
                std::ostringstream &out) {
  std::vector<passes::Remark> remarks;
  Expected<bool> ran = runPasses(args, pipeline, m, out, remarks);
  if (!ran) return usageError(cmd, ran.error().message());
  if (!*ran) return kInputError;
  for (const passes::Remark &r : remarks) {
    if (args.has("remarks")) std::cerr << r.str() << "\n";
    if (kind == "plan") out << r.str() << "\n";
  }
  Error e = kind == "plan"   ? printPlans(m, plan, out)
            : kind == "dot"  ? printDot(m, plan, out)
            : kind == "llvm" ? printLlvm(m, plan, out)
            : kind == "cuda" ? printCuda(m, plan, out)
                             : (ir::printModule(m, out), Error::success());
  if (e) {
    std::cerr << "dtnnc: error: " << e.message() << "\n";
    return kInputError;
  }
  return emit(args, out.str());
}

} // namespace

frontend::CompileOptions tools::compileOptions(const cli::ParsedArgs &args) {
  frontend::CompileOptions o;
  o.modelName = args.get("model");
  o.importDirs = args.all("I");
  o.importDirs.push_back(standardLibraryDir());
  return o;
}

namespace {

// A command that prints a catalogue (Markdown) and takes only the common options.
int cmdCatalogue(const std::string &name, const std::string &about,
                 void (*print)(std::ostream &), const std::vector<std::string> &argv) {
  auto specs = withCommon({});
  auto args = cli::parseArgs(argv, specs);
  if (!args) return usageError(name, args.error().message());
  if (args->has("help")) {
    std::cout << "usage: dtnnc " << name << " [options]\n\n" << about << "\n\n"
              << cli::optionsHelp(specs);
    return kOk;
  }
  if (!args->positional.empty())
    return usageError(name, "unexpected argument '" + args->positional[0] + "'");
  std::ostringstream text;
  print(text);
  return emit(*args, text.str());
}

int cmdCompile(const std::vector<std::string> &argv) {
  auto specs = withCommon(kPassOptions);
  specs.insert(specs.begin(), {{"model", "NAME", "the model to compile (default: the file's only model)"},
                               {"emit", "KIND", "what to print: ast, ir, train-ir (with the train and eval steps), plan, dot (the plans drawn for Graphviz), llvm (the jit's kernels) or cuda (the cuda backend's generated kernels; default ir)"},
                               {"I", "DIR", "also search DIR for imported files", true}});
  specs.insert(specs.begin() + 2, kPlanOptions.begin(), kPlanOptions.end());
  specs.insert(specs.begin() + 2, {"ranks", "P", "with --emit=train-ir or plan: make the train "
                                                 "step data-parallel over P ranks (default 1)"});
  specs.insert(specs.begin() + 3, {"nodes", "N", "with --ranks: the ranks run on N nodes (buckets "
                                                 "may reduce hierarchically; default 1)"});
  specs.insert(specs.begin() + 3, {"precision", "TYPE", "f32, or bf16: mixed precision (the "
                                   "mixed-precision pass; overrides the train section's "
                                   "precision)"});
  specs.insert(specs.begin() + 3, cli::kDataParallelOptions.begin(),
               cli::kDataParallelOptions.end());
  auto args = cli::parseArgs(argv, specs);
  if (!args) return usageError("compile", args.error().message());
  if (args->has("help")) {
    std::cout << "usage: dtnnc compile FILE.dtnn [options]\n\n" << cli::optionsHelp(specs);
    return kOk;
  }
  if (args->positional.size() != 1) return usageError("compile", "expected one input file");
  if (Error clash = outputClash(*args)) return usageError("compile", clash.message());
  std::string emitKind = args->get("emit", "ir");
  if (emitKind != "ast" && emitKind != "ir" && emitKind != "train-ir" && emitKind != "plan" &&
      emitKind != "dot" && emitKind != "llvm" && emitKind != "cuda")
    return usageError("compile", "unknown --emit kind '" + emitKind +
                                     "' (expected ast, ir, train-ir, plan, dot, llvm or cuda)");
  PlanOptions plan;
  if (Error msg = readPlanOptions(*args, emitKind == "plan", plan))
    return usageError("compile", msg.message());
  passes::DataParallelOptions dp;
  if (args->has("ranks")) {
    const std::string r = args->get("ranks");
    char *end = nullptr;
    long v = std::strtol(r.c_str(), &end, 10);
    if (r.empty() || *end != '\0' || v < 1 || v > 1 << 20)
      return usageError("compile", "--ranks expects an integer from 1 to 1048576, got '" + r + "'");
    if (emitKind != "train-ir" && emitKind != "plan" && emitKind != "dot")
      return usageError("compile", "--ranks needs --emit=train-ir, plan or dot");
    dp.ranks = static_cast<int>(v);
  }
  if (args->has("nodes")) {
    int64_t v = 0;
    if (Error msg = cli::readCount("--nodes", args->get("nodes"), 1, 1 << 20, v))
      return usageError("compile", msg.message());
    if (!args->has("ranks")) return usageError("compile", "--nodes needs --ranks");
    if (std::string bad = passes::checkNodes(dp.ranks, v); !bad.empty())
      return usageError("compile", "--nodes " + std::to_string(v) + ": " + bad);
    dp.nodes = static_cast<int>(v);
  }
  if (Error msg = cli::readDataParallelOptions(*args, dp))
    return usageError("compile", msg.message());
  SourceManager sm;
  DiagnosticEngine diags(sm, std::cerr);
  std::ostringstream out;
  if (emitKind == "ast") {
    if (!frontend::dumpAst(args->positional[0], tools::compileOptions(*args), sm, diags, out))
      return kInputError;
    return emit(*args, out.str());
  }
  auto module = frontend::compileFile(args->positional[0], tools::compileOptions(*args), sm, diags);
  if (!module) return kInputError;
  bool training = emitKind == "train-ir" || emitKind == "plan" || emitKind == "dot" ||
                  emitKind == "llvm" || emitKind == "cuda";
  // --ranks needs a training --emit, so only a train step is data-parallel.
  std::string pipeline = training ? passes::trainStepPipeline(dp) : "default";
  if (Error msg = cli::applySettingFlags(*args, module->trainConfig()))
    return usageError("compile", msg.message());
  auto settings = ir::readRunSettings(module->trainConfig());
  if (!settings) {
    std::cerr << "dtnnc: error: " << settings.error().message() << "\n";
    return kInputError;
  }
  pipeline = passes::withPrecision(pipeline, settings->precision.name);
  std::string kind = emitKind == "train-ir" ? "ir" : emitKind;
  return passAndEmit("compile", *args, pipeline, *module, kind, plan, out);
}

int cmdOpt(const std::vector<std::string> &argv) {
  auto specs = withCommon(kPassOptions);
  specs.push_back({"print-pipeline", "", "print the built-in pipelines and exit"});
  specs.push_back({"emit", "KIND", "what to print after the passes: ir, plan, dot (the plans drawn for Graphviz), llvm (the jit's kernels) or cuda (the cuda backend's generated kernels; default ir)"});
  specs.insert(specs.end(), kPlanOptions.begin(), kPlanOptions.end());
  specs.push_back({"no-verify-input", "", "do not verify the input IR (for passes that repair it)"});
  auto args = cli::parseArgs(argv, specs);
  if (!args) return usageError("opt", args.error().message());
  if (args->has("help")) {
    std::cout << "usage: dtnnc opt FILE.dtir [--passes=LIST] [options]\n\n" << cli::optionsHelp(specs);
    return kOk;
  }
  if (args->has("print-pipeline")) {
    std::cout << passes::printPipelines();
    return kOk;
  }
  if (args->positional.size() != 1) return usageError("opt", "expected one input file");
  if (Error clash = outputClash(*args)) return usageError("opt", clash.message());
  std::string emitKind = args->get("emit", "ir");
  if (emitKind != "ir" && emitKind != "plan" && emitKind != "dot" && emitKind != "llvm" &&
      emitKind != "cuda")
    return usageError("opt", "unknown --emit kind '" + emitKind +
                                 "' (expected ir, plan, dot, llvm or cuda)");
  PlanOptions plan;
  if (Error msg = readPlanOptions(*args, emitKind == "plan", plan))
    return usageError("opt", msg.message());
  const std::string &path = args->positional[0];
  SourceManager sm;
  DiagnosticEngine diags(sm, std::cerr);
  Expected<std::string> text = readSourceFile(path, ".dtir file");
  if (!text) {
    diags.error({path, 0, 0}, text.error().message());
    return kInputError;
  }
  ir::TextPositions positions;
  auto module = ir::parseModule(*text, path, sm, diags, &positions);
  if (!module) return kInputError;
  if (!args->has("no-verify-input")) {
    for (const Diagnostic &d : ir::verifyModule(*module, &positions)) diags.report(d);
    if (diags.hasErrors()) return kInputError;
  }
  std::ostringstream out;
  return passAndEmit("opt", *args, "", *module, emitKind, plan, out);
}

int cmdSummary(const std::vector<std::string> &argv) {
  auto specs = withCommon({{"model", "NAME", "the model to summarize (default: the file's only model)"},
                           {"I", "DIR", "also search DIR for imported files", true}});
  auto args = cli::parseArgs(argv, specs);
  if (!args) return usageError("summary", args.error().message());
  if (args->has("help")) {
    std::cout << "usage: dtnnc summary FILE.dtnn [options]\n\n" << cli::optionsHelp(specs);
    return kOk;
  }
  if (args->positional.size() != 1) return usageError("summary", "expected one input file");
  SourceManager sm;
  DiagnosticEngine diags(sm, std::cerr);
  auto module = frontend::compileFile(args->positional[0], tools::compileOptions(*args), sm, diags);
  if (!module) return kInputError;
  std::ostringstream out;
  ir::printSummary(ir::summarize(*module, *module->graphs().front()), out);
  return emit(*args, out.str());
}

int dtnnc(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return kUsageError;
  }
  std::string cmd = args.front();
  args.erase(args.begin());
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::cout << kUsage;
    return kOk;
  }
  if (cmd == "compile") return cmdCompile(args);
  if (cmd == "opt") return cmdOpt(args);
  if (cmd == "summary") return cmdSummary(args);
  if (cmd == "gradcheck") return tools::dtnncGradCheck(args);
  if (cmd == "import") return tools::dtnncImport(args);
  if (cmd == "export") return tools::dtnncExport(args);
  if (cmd == "ops")
    return cmdCatalogue("ops", "Prints the op catalogue (Markdown) generated from the op table.",
                        ir::printOpCatalogue, args);
  if (cmd == "settings")
    return cmdCatalogue("settings",
                        "Prints the run settings and the registered choices of each (Markdown).",
                        ir::printSettingsCatalogue, args);
  std::string hint =
      closestMatch(cmd, {"compile", "opt", "summary", "gradcheck", "import", "export", "ops", "settings"});
  std::cerr << "dtnnc: error: unknown command '" << cmd << "'"
            << (hint.empty() ? "" : "; did you mean '" + hint + "'?") << "\n"
            << kUsage;
  return kUsageError;
}

} // namespace

int dtnn::dtnncMain(int argc, char **argv) {
  if (Error e = registerBuiltins()) {
    std::cerr << "dtnnc: error: " << e.message() << "\n";
    return kInputError;
  }
  if (Error e = loadPlugins(argc, argv)) {
    std::cerr << "dtnnc: error: " << e.message() << "\n";
    return kInputError;
  }
  return cli::runGuarded("dtnnc", [&] { return dtnnc(argc, argv); });
}
