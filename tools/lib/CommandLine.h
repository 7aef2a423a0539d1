// A small command-line parser shared by the drivers: `--flag`, `--opt=value`,
// `--opt value`, `-o value`, and positional arguments, with generated help.
#pragma once

#include "ir/Attributes.h"
#include "ir/Error.h"

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace dtnn::cli {

// Whether the ranks of a job must give an option alike (dtnn-run): by its
// value (a flag: whether it is given), by whether it is given (a file, whose
// path may differ between machines while its content is compared otherwise),
// or not at all (outputs, progress, threads).
enum class Agree { No, Value, Presence };

struct OptionSpec {
  std::string name;      // "model" for --model, "o" for -o
  std::string valueName; // empty for a flag without a value
  std::string help;
  bool repeatable = false;
  Agree agree = Agree::No;
};

struct ParsedArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> values;

  bool has(const std::string &name) const { return values.count(name) != 0; }
  // The last value given for `name`, or `fallback`.
  std::string get(const std::string &name, const std::string &fallback = "") const;
  const std::vector<std::string> &all(const std::string &name) const;
};

// Parses `args` against `specs`; fails with a usage error message.
Expected<ParsedArgs> parseArgs(const std::vector<std::string> &args,
                               const std::vector<OptionSpec> &specs);

// A stream that drops what it is given (the output of ranks other than 0).
struct NullStream : std::ostream {
  NullStream() : std::ostream(nullptr) {}
};

// Applies the flags that override train settings (--batch, --lr, --optimizer, ... as the
// run-settings schema names them) to a train section's `config`, each value checked by the
// schema; fails with a usage error message for a malformed value.
Error applySettingFlags(const ParsedArgs &args, ir::AttrMap &config);

// Reads the integer value `text` of option `name` ("--threads") into `out`,
// which must lie in [lo, hi]. Fails with a message that states the limit a
// value passes ("--threads accepts at most 4096, got '5000'") or the range
// expected of what is not an integer.
Error readCount(const std::string &name, const std::string &text, int64_t lo, int64_t hi,
                int64_t &out);

// A path a run reads or writes and what names it: {"--save", "ckpt.safetensors"}.
using NamedPath = std::pair<std::string, std::string>;

// Fails with the first clash among the paths a run writes (`outputs`) and
// reads (`inputs`): two outputs that are one file, or an output that is an
// input, which it would overwrite. Empty paths are skipped. Paths are
// compared after resolving `.`, `..` and symbolic links.
Error pathClash(const std::vector<NamedPath> &outputs, const std::vector<NamedPath> &inputs);

// Help text listing each option with its value name and description.
std::string optionsHelp(const std::vector<OptionSpec> &specs);

// What a tool says of an exception that reached its main: "out of memory" for
// std::bad_alloc, "cannot start a thread: ..." when the system refuses one,
// the reason for another failed system call (std::system_error), and
// "internal error: <what>" for anything else (a bug).
std::string exceptionMessage(std::exception_ptr e);

// Runs a tool's body, with SIGXFSZ ignored. An exception that escapes it is printed as
// "TOOL: error: MESSAGE" (after flushing stdout) and the tool returns 1, so
// that no failure ends in std::terminate.
int runGuarded(const std::string &tool, const std::function<int()> &body);

} // namespace dtnn::cli
