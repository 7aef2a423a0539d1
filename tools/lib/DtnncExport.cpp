// `dtnnc export MODEL.dtnn -o MODEL.onnx [--init-from W] [--model NAME] [--opset N] [-I DIR]...`.
#include "tools/lib/DtnncCommands.h"

#include "frontend/Frontend.h"
#include "frontend/onnx/Door.h"
#include "ir/Output.h"
#include "runtime/BackendRegistry.h"
#include "runtime/ParamStore.h"
#include "runtime/train/TrainState.h"
#include "tools/lib/CommandLine.h"

#include <cstring>
#include <iostream>
#include <set>

namespace dtnn::tools {

namespace {

const std::vector<cli::OptionSpec> kSpecs = {
    {"o", "FILE", "where the ONNX model goes (required)"},
    {"init-from", "FILE", "the weights (safetensors, as dtnn-run --init-from reads them; default: "
                          "the layers' initialization, seed 0)"},
    {"model", "NAME", "the model to export (default: the file's only model)"},
    {"opset", "N", "the ONNX opset to write, 17 to 20 (default 17)"},
    {"I", "DIR", "also search DIR for imported files", true},
    {"help", "", "print this help"},
};

int usage(const std::string &msg) {
  std::cerr << "dtnnc export: error: " << msg << "\nRun 'dtnnc export --help' for usage.\n";
  return 2;
}

int fail(const std::string &msg) {
  std::cerr << "dtnnc: error: " << msg << "\n";
  return 1;
}

} // namespace

int dtnncExport(const std::vector<std::string> &argv) {
  auto args = cli::parseArgs(argv, kSpecs);
  if (!args) return usage(args.error().message());
  if (args->has("help")) {
    std::cout << "usage: dtnnc export MODEL.dtnn -o MODEL.onnx [--init-from W.safetensors] [--opset N]\n\n"
              << "Writes a model's inference graph and weights as an ONNX model, checked by ONNX's checker.\n\n"
              << cli::optionsHelp(kSpecs);
    return 0;
  }
  if (args->positional.size() != 1) return usage("expected one .dtnn file");
  std::string out = args->get("o"), weightsPath = args->get("init-from");
  if (out.empty()) return usage("-o FILE is required");
  if (Error clash = cli::pathClash({{"-o", out}}, {{"the model", args->positional[0]}, {"--init-from", weightsPath}}))
    return usage(clash.message());
  onnximport::ExportOptions opts;
  if (args->has("opset")) {
    int64_t opset = 0;
    if (Error e = cli::readCount("--opset", args->get("opset"), 17, 20, opset)) return usage(e.message());
    opts.opset = int(opset);
  }
  SourceManager sm;
  DiagnosticEngine diags(sm, std::cerr);
  auto module = frontend::compileFile(args->positional[0], compileOptions(*args), sm, diags);
  if (!module) return 1;
  // The weights: initialized as a run would, then those of --init-from.
  runtime::BackendOptions bo;
  bo.threads = 1;
  auto backends = runtime::BackendSet::create("reference", bo);
  if (!backends) return fail(backends.error().message());
  runtime::ParamStore store(*module, *backends);
  if (Error e = runtime::initializeParams(store, 0)) return fail(e.message());
  if (!weightsPath.empty()) {
    std::set<std::string> names;
    for (const auto &op : module->graphs().front()->ops())
      for (const ir::Value *v : op->operands())
        if (v->param()) names.insert(v->param()->name);
    if (Error e = runtime::loadWeights(weightsPath, names, store)) return fail(e.message());
  }
  onnximport::ExportWeights weights;
  for (const auto &p : module->params()) {
    if (p->type.dtype != ir::DType::F32) continue;
    auto t = store.read(p->name);
    if (!t) return fail(t.error().message());
    weights.values[p->name].assign(t->data<float>(), t->data<float>() + t->numel());
  }
  auto bytes = onnximport::exportOnnx(*module, weights, opts);
  if (!bytes) return fail(args->positional[0] + ": " + bytes.error().message());
  if (Error e = writeOutput(out, *bytes)) return fail(e.message());
  return 0;
}

} // namespace dtnn::tools
