// `dtnnc import MODEL.onnx -o MODEL.dtnn [--weights W.safetensors] [--model NAME]
// [--constant NAME=FILE]...`.
#include "tools/lib/DtnncCommands.h"

#include "frontend/onnx/Door.h"
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
    {"constant", "NAME=FILE", "bind graph input NAME to the tensor in FILE (a serialized TensorProto), "
                              "as a constant of the import (repeatable)", true},
    {"no-fold", "", "write one line per layer, without folding repeated structure into blocks and loops"},
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
    std::cout << "usage: dtnnc import MODEL.onnx [-o MODEL.dtnn] [--weights W.safetensors] "
                 "[--constant NAME=FILE]...\n\n"
              << "Writes an ONNX model as .dtnn source and its weights as safetensors.\n\n"
              << cli::optionsHelp(kSpecs);
    return 0;
  }
  if (args->positional.size() != 1) return usage("expected one ONNX file");
  std::string out = args->get("o", "-"), weights = args->get("weights");
  onnximport::ImportOptions opts;
  for (const std::string &c : args->all("constant")) {
    size_t eq = c.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == c.size())
      return usage("--constant takes NAME=FILE, got '" + c + "'");
    opts.constants.emplace_back(c.substr(0, eq), c.substr(eq + 1));
  }
  std::vector<std::pair<std::string, std::string>> inputs = {{"the model", args->positional[0]}};
  for (const auto &[name, file] : opts.constants) inputs.emplace_back("the constant " + name, file);
  if (Error clash = cli::pathClash({{"-o", out == "-" ? "" : out}, {"--weights", weights}}, inputs))
    return usage(clash.message());
  opts.modelName = args->get("model");
  opts.fold = !args->has("no-fold");
  opts.sourceName = out == "-" ? "" : out;
  auto result = onnximport::importOnnx(args->positional[0], opts);
  if (!result) {
    std::cerr << "dtnnc: error: " << result.error().message() << "\n";
    return 1;
  }
  for (const auto &note : result->notes) std::cerr << "dtnnc import: note: " << note << "\n";
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
