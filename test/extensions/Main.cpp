// dtnn-extensions: dtnn's drivers with this program's extension (the op `square`) registered;
// they load plugins (--plugin) as the plain programs do.
//
//   dtnn-extensions dtnnc ARGS...     dtnnc with the extensions
//   dtnn-extensions dtnn-run ARGS...  dtnn-run with the extensions
//   dtnn-extensions duplicate KIND    registers a built-in name again (op, pass,
//                                     optimizer, data source) and prints the error
#include "Extensions.h"

#include "dtnn/Registry.h"
#include "dtnn/Tools.h"

#include "ir/OpTable.h"
#include "passes/Optimizers.h"
#include "passes/Pass.h"
#include "runtime/train/data/Sources.h"

#include <cstdio>
#include <cstring>
#include <memory>

namespace {

// A pass that calls itself `dce`, the name of a built-in pass.
class ImpostorPass : public dtnn::passes::Pass {
public:
  std::string_view name() const override { return "dce"; }
  std::string_view description() const override { return "does nothing"; }
  dtnn::Expected<bool> run(dtnn::ir::Module &) override { return false; }
};

// Registers a second entry under a built-in name of registry `kind`.
dtnn::Error registerDuplicate(const std::string &kind) {
  using namespace dtnn;
  if (kind == "op") {
    ir::OpDef def = *ir::OpTable::get().lookup("relu");
    return ir::registerOp(std::move(def), ext::kOrigin);
  }
  if (kind == "pass")
    return passes::registerPass([] { return std::make_unique<ImpostorPass>(); }, ext::kOrigin);
  if (kind == "optimizer") return passes::registerOptimizer({.name = "sgd"}, ext::kOrigin);
  if (kind == "data")
    return registerDataSource({.name = "mnist", .load = [](const DataSpec &, const std::string &,
                                                           uint64_t) -> Expected<DataSplits> {
                                 return Error::make("unreachable");
                               }},
                              ext::kOrigin);
  if (kind == "self") return ext::registerSquare(); // this program's own op, a second time
  return Error::make("unknown kind '" + kind + "'");
}

int usage() {
  std::fprintf(stderr, "usage: dtnn-extensions (dtnnc|dtnn-run) ARGS... | duplicate KIND\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) return usage();
  // The built-in entries first, then this program's.
  for (dtnn::Error (*reg)() : {dtnn::registerBuiltins, ext::registerSquare}) {
    if (dtnn::Error e = reg()) {
      std::fprintf(stderr, "dtnn-extensions: error: %s\n", e.message().c_str());
      return 1;
    }
  }
  if (std::strcmp(argv[1], "duplicate") == 0) {
    if (argc != 3) return usage();
    dtnn::Error e = registerDuplicate(argv[2]);
    if (!e) return 0;
    std::fprintf(stderr, "dtnn-extensions: error: %s\n", e.message().c_str());
    return 1;
  }
  // The driver sees its own name as argv[0].
  if (std::strcmp(argv[1], "dtnnc") == 0) return dtnn::dtnncMain(argc - 1, argv + 1);
  if (std::strcmp(argv[1], "dtnn-run") == 0) return dtnn::dtnnRunMain(argc - 1, argv + 1);
  return usage();
}
