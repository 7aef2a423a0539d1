// Commands of `dtnnc` that live in files of their own (tools/lib/Dtnnc.cpp dispatches to them).
#pragma once

#include "frontend/Frontend.h"
#include "tools/lib/CommandLine.h"

#include <string>
#include <vector>

namespace dtnn::tools {

// The front end's options of a command's --model and -I, the standard library searched last.
frontend::CompileOptions compileOptions(const cli::ParsedArgs &args);

// `dtnnc gradcheck OP [--type TYPE]... | FILE.dtir`: argv after the command word; returns the
// exit status.
int dtnncGradCheck(const std::vector<std::string> &argv);

// `dtnnc import MODEL.onnx [-o FILE.dtnn] [--weights FILE]`: argv after the command word.
int dtnncImport(const std::vector<std::string> &argv);

// `dtnnc export MODEL.dtnn -o MODEL.onnx [--init-from W]`: argv after the command word.
int dtnncExport(const std::vector<std::string> &argv);

} // namespace dtnn::tools
