// `dtnnc gradcheck`: an op's gradient rule checked against central finite differences of its
// kernels (runtime/train/GradCheck.h), for the author of a new op, built in or a plugin's:
//
//   dtnnc gradcheck mish --plugin mish.so             the op on one f64[2,3] operand
//   dtnnc gradcheck matmul --type f64[2,3] --type f64[3,4]
//   dtnnc gradcheck f.dtir                            graph @f of a file (any ops, attributes)
//
// It prints a line per checked input and exits 0 when every gradient agrees, 1 when one does
// not (listing the first elements that differ) or the check cannot run.
#include "tools/lib/DtnncCommands.h"

#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/SourceFile.h"
#include "ir/TextParser.h"
#include "runtime/train/GradCheck.h"
#include "tools/lib/CommandLine.h"

#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace dtnn::tools {

namespace {

constexpr int kOk = 0, kInputError = 1, kUsageError = 2;
constexpr size_t kShownMismatches = 5;

int usageError(const std::string &msg) {
  std::cerr << "dtnnc gradcheck: error: " << msg << "\n"
            << "Run 'dtnnc gradcheck --help' for usage.\n";
  return kUsageError;
}

// A module whose graph @f applies op `name` to inputs of `types` (one f64[2,3] per operand the
// op requires when none are given).
std::unique_ptr<ir::Module> opModule(const std::string &name, std::vector<std::string> types,
                                     SourceManager &sm, DiagnosticEngine &diags) {
  const ir::OpDef *def = ir::OpTable::get().lookup(name);
  if (!def) {
    std::cerr << "dtnnc gradcheck: error: unknown op '" << name
              << "' (a plugin's op needs --plugin LIB.so)\n";
    return nullptr;
  }
  if (types.empty())
    for (const ir::OperandSpec &o : def->operands)
      if (o.arity == ir::OperandSpec::Required) types.push_back("f64[2,3]");
  // The inputs are parsed as IR text, so that a malformed type is diagnosed as in a .dtir file.
  std::string text = "graph @f(";
  for (size_t i = 0; i < types.size(); ++i)
    text += (i ? ", %x" : "%x") + std::to_string(i) + ": " + types[i];
  text += ") -> " + types[0] + " {\n  return %x0\n}\n";
  auto m = ir::parseModule(text, "--type", sm, diags);
  if (!m) return nullptr;
  ir::Graph *g = m->findGraph("f");
  ir::Builder b(*g);
  ir::Value *y = b.create1(name, std::vector<ir::Value *>(g->inputs().begin(), g->inputs().end()));
  if (!y) {
    std::cerr << "dtnnc gradcheck: error: " << b.takeError().message() << "\n";
    return nullptr;
  }
  g->setOutputs({y});
  return m;
}

} // namespace

int dtnncGradCheck(const std::vector<std::string> &argv) {
  std::vector<cli::OptionSpec> specs = {
      {"type", "TYPE", "the type of the op's next operand (default f64[2,3] each)", true},
      {"seed", "S", "the seed of the random inputs and dy (default 1)"},
      {"rtol", "X", "relative tolerance (default 1e-5)"},
      {"atol", "X", "absolute tolerance (default 1e-7)"},
      {"plugin", "LIB.so", "load a plugin's ops (repeatable; also $DTNN_PLUGINS)", true},
      {"help", "", "show this help"}};
  auto args = cli::parseArgs(argv, specs);
  if (!args) return usageError(args.error().message());
  if (args->has("help")) {
    std::cout << "usage: dtnnc gradcheck OP [--type TYPE]... | gradcheck FILE.dtir\n\n"
                 "Checks the gradient rule of an op (applied to f64 inputs of the given types), "
                 "or of the ops of graph @f of a file, against central finite differences.\n\n"
              << cli::optionsHelp(specs);
    return kOk;
  }
  if (args->positional.size() != 1) return usageError("expected one op name or .dtir file");
  runtime::GradCheckOptions opts;
  for (auto [flag, value] : {std::pair{"rtol", &opts.rtol}, std::pair{"atol", &opts.atol}}) {
    if (!args->has(flag)) continue;
    char *end = nullptr;
    std::string text = args->get(flag);
    *value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || !(*value >= 0))
      return usageError("--" + std::string(flag) + " must be a number >= 0, got '" + text + "'");
  }
  if (args->has("seed")) {
    int64_t seed = 0;
    if (Error e = cli::readCount("--seed", args->get("seed"), 0, INT64_MAX, seed))
      return usageError(e.message());
    opts.seed = uint64_t(seed);
  }
  const std::string &what = args->positional[0];
  bool file = what.ends_with(".dtir");
  if (file && args->has("type")) return usageError("--type applies to an op, not to a file");
  SourceManager sm;
  DiagnosticEngine diags(sm, std::cerr);
  std::unique_ptr<ir::Module> m;
  if (file) {
    Expected<std::string> text = readSourceFile(what, ".dtir file");
    if (!text) {
      diags.error({what, 0, 0}, text.error().message());
      return kInputError;
    }
    m = ir::parseModule(*text, what, sm, diags);
  } else {
    m = opModule(what, args->all("type"), sm, diags);
  }
  if (!m) return kInputError;
  auto results = runtime::checkGradients(*m, opts);
  if (!results) {
    std::cerr << "dtnnc gradcheck: error: " << what << ": " << results.error().message() << "\n";
    return kInputError;
  }
  bool ok = true;
  for (const runtime::GradCheckResult &r : *results) {
    char worst[32];
    std::snprintf(worst, sizeof worst, "%.3g", r.worstDifference);
    std::cout << "gradcheck " << what << ": d/d" << r.name << " " << r.type.str() << ": "
              << r.checked << (r.checked == 1 ? " element" : " elements")
              << ", largest difference " << worst << " of the tolerance: "
              << (r.ok() ? "ok" : "WRONG") << "\n";
    for (size_t i = 0; i < r.mismatches.size() && i < kShownMismatches; ++i)
      std::cout << "  element " << r.mismatches[i].element << ": analytic "
                << std::setprecision(10) << r.mismatches[i].analytic << ", numeric "
                << r.mismatches[i].numeric << "\n";
    ok = ok && r.ok();
  }
  if (results->empty()) {
    std::cerr << "dtnnc gradcheck: error: " << what << ": no f64 input or parameter to check\n";
    return kInputError;
  }
  return ok ? kOk : kInputError;
}

} // namespace dtnn::tools
