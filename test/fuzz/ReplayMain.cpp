// Runs the fuzz entry point over saved inputs, so that the test suite checks
// the corpus with the normal compiler and no fuzzing runtime. Arguments are
// files or folders; folders are walked recursively and every input runs in
// sorted path order.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
// Registers dtnn's built-in entries (FuzzSupport.cpp); libFuzzer calls it itself.
extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv);

namespace fs = std::filesystem;

namespace {

// Adds `arg` (a file, or every regular file below a folder) to `out`; false if it does not exist.
bool collect(const fs::path &arg, std::vector<fs::path> &out) {
  std::error_code ec;
  if (fs::is_directory(arg, ec)) {
    for (fs::recursive_directory_iterator it(arg, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec)) out.push_back(it->path());
    return !ec;
  }
  if (!fs::is_regular_file(arg, ec)) return false;
  out.push_back(arg);
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE-OR-FOLDER...\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (!collect(argv[i], inputs)) {
      std::fprintf(stderr, "error: cannot read '%s'\n", argv[i]);
      return 2;
    }
  }
  std::sort(inputs.begin(), inputs.end());
  LLVMFuzzerInitialize(&argc, &argv);
  for (const fs::path &p : inputs) {
    std::ifstream in(p, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "error: cannot read '%s'\n", p.c_str());
      return 2;
    }
    std::printf("replaying %s (%zu bytes)\n", p.c_str(), bytes.size());
    std::fflush(stdout);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs\n", inputs.size());
  return inputs.empty() ? 1 : 0;
}
