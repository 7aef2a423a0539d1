// Uses libdtnn through its public headers only: the version, compiling a model (one that
// imports the installed standard library of blocks), the diagnostics of a wrong one, and the
// `dtnnc` driver run in-process.
#include <dtnn/dtnn.h>

#include <cstdio>
#include <string>

namespace {

const char *kModel = R"(import "std/resnet.dtnn"
model Tiny(x: f32[N, 3, 8, 8]) -> f32[N, 4] {
  return x |> basic(16, stride=2) |> global_avgpool |> flatten |> dense(4)
}
)";

const char *kWrongModel = "model Wrong(x: f32[N, 8]) -> f32[N, 4] {\n  return x |> dense(4, bias=3)\n}\n";

} // namespace

int main(int argc, char **argv) {
  std::printf("dtnn %s, extension API %d\n", dtnn::versionString(), dtnn::apiVersion());

  dtnn::CompileRequest request;
  auto ir = dtnn::compileSource("tiny.dtnn", kModel, request);
  if (!ir) {
    std::printf("unexpected error: %s\n", ir.error().message().c_str());
    return 1;
  }
  std::printf("compiled Tiny: %zu bytes of IR\n%s", ir->size(), ir->c_str());

  auto wrong = dtnn::compileSource("wrong.dtnn", kWrongModel, request);
  if (wrong) return 1;
  std::printf("the wrong model:\n%s", wrong.error().message().c_str());

  // The rest of the arguments go to dtnnc, as if it were run.
  if (argc > 1) {
    argv[0] = const_cast<char *>("dtnnc");
    return dtnn::dtnncMain(argc, argv);
  }
  return 0;
}
