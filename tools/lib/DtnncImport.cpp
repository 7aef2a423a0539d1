// `dtnnc import MODEL.onnx -o MODEL.dtnn [--weights W.safetensors] [--model NAME]`.
#include "tools/lib/DtnncCommands.h"

#include "frontend/onnx/Import.h"
#include "ir/Output.h"
#include "runtime/train/Checkpoint.h"
#include "tools/lib/CommandLine.h"

#include <cstring>
#include <iostream>

namespace dtnn::tools {

namespace {

const std::vector<cli::OptionSpec> kSpecs = {
    {"o", "FILE", "where the .dtnn source goes ('-' for stdout, the default)"},
    {"weights", "FILE", "where the weights go (safetensors, for dtnn-run --init-from)"},
    {"model", "NAME", "the model's name (default: the ONNX graph's)"},
    {"help", "", "print this help"},
};

int usage(const std::string &msg) {
  std::cerr << "dtnnc import: error: " << msg << "\nRun 'dtnnc import --help' for usage.\n";
  return 2;
}

} // namespace

int dtnncImport(const std::vector<std::string> &argv) {
  auto args = cli::parseArgs(argv, kSpecs);
  if (!args) return usage(args.error().message());
  if (args->has("help")) {
    std::cout << "usage: dtnnc import MODEL.onnx [-o MODEL.dtnn] [--weights W.safetensors]\n\n"
              << "Writes an ONNX model as .dtnn source and its weights as safetensors.\n\n"
              << cli::optionsHelp(kSpecs);
    return 0;
  }
  if (args->positional.size() != 1) return usage("expected one ONNX file");
  std::string out = args->get("o", "-"), weights = args->get("weights");
  if (Error clash = cli::pathClash({{"-o", out == "-" ? "" : out}, {"--weights", weights}},
                                   {{"the model", args->positional[0]}}))
    return usage(clash.message());
  onnximport::ImportOptions opts;
  opts.modelName = args->get("model");
  opts.sourceName = out == "-" ? "" : out;
  auto result = onnximport::importModel(args->positional[0], opts);
  if (!result) {
    std::cerr << "dtnnc: error: " << result.error().message() << "\n";
    return 1;
  }
  if (!weights.empty()) {
    runtime::Checkpoint ckpt;
    for (const auto &w : result->weights) {
      runtime::Tensor t(ir::TensorType(ir::DType::F32, w.dims));
      if (!w.data.empty()) std::memcpy(t.raw(), w.data.data(), w.data.size() * sizeof(float));
      ckpt.tensors.emplace(w.name, std::move(t));
    }
    ckpt.metadata = {{"source", args->positional[0]}};
    if (Error e = runtime::saveCheckpoint(weights, ckpt)) {
      std::cerr << "dtnnc: error: " << e.message() << "\n";
      return 1;
    }
  } else if (!result->weights.empty()) {
    std::cerr << "dtnnc import: warning: the model has " << result->weights.size()
              << " weights and no --weights file was given; they are not written\n";
  }
  if (out == "-") {
    std::cout << result->source;
  } else if (Error e = writeOutput(out, result->source)) {
    std::cerr << "dtnnc: error: " << e.message() << "\n";
    return 1;
  }
  return 0;
}

} // namespace dtnn::tools
