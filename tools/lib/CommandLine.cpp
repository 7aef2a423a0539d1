#include "tools/lib/CommandLine.h"

#include "ir/Diagnostics.h"
#include "ir/RunSettings.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <climits>
#include <filesystem>
#include <iostream>
#include <new>
#include <system_error>

namespace dtnn::cli {

std::string ParsedArgs::get(const std::string &name, const std::string &fallback) const {
  auto it = values.find(name);
  return it == values.end() || it->second.empty() ? fallback : it->second.back();
}

const std::vector<std::string> &ParsedArgs::all(const std::string &name) const {
  static const std::vector<std::string> none;
  auto it = values.find(name);
  return it == values.end() ? none : it->second;
}

Expected<ParsedArgs> parseArgs(const std::vector<std::string> &args,
                               const std::vector<OptionSpec> &specs) {
  ParsedArgs out;
  std::vector<std::string> names;
  for (const auto &s : specs) names.push_back(s.name);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (a.size() < 2 || a[0] != '-') {
      out.positional.push_back(a);
      continue;
    }
    std::string body = a.substr(a[1] == '-' ? 2 : 1);
    std::optional<std::string> inlineValue;
    if (size_t eq = body.find('='); eq != std::string::npos) {
      inlineValue = body.substr(eq + 1);
      body = body.substr(0, eq);
    }
    const OptionSpec *spec = nullptr;
    for (const auto &s : specs)
      if (s.name == body) spec = &s;
    if (!spec) {
      std::string hint = closestMatch(body, names);
      return Error::make("unknown option '" + a + "'" +
                         (hint.empty() ? "" : "; did you mean '" + std::string(hint.size() == 1 ? "-" : "--") +
                                                  hint + "'?"));
    }
    std::string value;
    if (!spec->valueName.empty()) {
      if (inlineValue) {
        value = *inlineValue;
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return Error::make("option '" + a + "' needs a value (" + spec->valueName + ")");
      }
    } else if (inlineValue) {
      return Error::make("option '--" + spec->name + "' takes no value");
    }
    // An empty value (`--save=`, `--model=`, `-o ""`) names nothing: an error,
    // not the option's absence. Only a list may be empty (`--passes=`).
    if (!spec->valueName.empty() && spec->valueName != "LIST" && value.empty()) {
      return Error::make("option '" + std::string(spec->name.size() == 1 ? "-" : "--") +
                         spec->name + "' needs a " + spec->valueName + ", got an empty one");
    }
    auto &slot = out.values[spec->name];
    if (!slot.empty() && !spec->repeatable && !spec->valueName.empty() && slot.back() != value) {
      return Error::make("option '--" + spec->name + "' given twice");
    }
    slot.push_back(value);
  }
  return out;
}

std::string optionsHelp(const std::vector<OptionSpec> &specs) {
  std::string out = "Options:\n";
  for (const auto &s : specs) {
    std::string flag = (s.name.size() == 1 ? "  -" : "  --") + s.name;
    if (!s.valueName.empty()) flag += (s.name.size() == 1 ? " " : "=") + s.valueName;
    if (flag.size() < 28) flag += std::string(28 - flag.size(), ' ');
    else flag += "  ";
    out += flag + s.help + "\n";
  }
  return out;
}

Error pathClash(const std::vector<NamedPath> &outputs, const std::vector<NamedPath> &inputs) {
  auto resolved = [](const std::string &p) {
    std::error_code ec;
    std::filesystem::path a = std::filesystem::absolute(p, ec).lexically_normal();
    std::filesystem::path r = std::filesystem::weakly_canonical(a, ec);
    return ec ? a : r;
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].second.empty()) continue;
    std::filesystem::path out = resolved(outputs[i].second);
    for (size_t j = 0; j < i; ++j)
      if (!outputs[j].second.empty() && resolved(outputs[j].second) == out)
        return Error::make(outputs[j].first + " and " + outputs[i].first +
                           " name the same file '" + outputs[i].second + "'");
    for (const NamedPath &in : inputs)
      if (!in.second.empty() && resolved(in.second) == out)
        return Error::make(outputs[i].first + " '" + outputs[i].second + "' would overwrite " +
                           in.first + " '" + in.second + "'");
  }
  return Error::success();
}

Error readCount(const std::string &name, const std::string &text, int64_t lo, int64_t hi,
                int64_t &out) {
  std::string range = hi == INT64_MAX ? "an integer of at least " + std::to_string(lo)
                                      : "an integer from " + std::to_string(lo) + " to " +
                                            std::to_string(hi);
  const char *end = text.data() + text.size();
  auto [stop, ec] = std::from_chars(text.data(), end, out);
  bool digits = !text.empty() && stop == end;
  if (digits && ec == std::errc::result_out_of_range)
    return Error::make(name +
                       (text[0] == '-' ? " must be at least " + std::to_string(lo)
                                       : " accepts at most " + std::to_string(hi)) +
                       ", got '" + text + "'");
  std::string got = ", got '" + text + "'";
  if (!digits || ec != std::errc()) return Error::make(name + " expects " + range + got);
  if (out < lo) return Error::make(name + " must be at least " + std::to_string(lo) + got);
  if (out > hi) return Error::make(name + " accepts at most " + std::to_string(hi) + got);
  return Error::success();
}

std::string exceptionMessage(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::bad_alloc &) {
    return "out of memory";
  } catch (const std::system_error &err) {
    // std::thread's constructor reports a thread the system refuses this way.
    if (err.code() == std::errc::resource_unavailable_try_again)
      return "cannot start a thread: " + err.code().message() +
             " (the process is at its limit of memory or threads; see ulimit -v and -u)";
    return err.what();
  } catch (const std::exception &err) {
    return std::string("internal error: ") + err.what();
  } catch (...) {
    return "internal error: unknown exception";
  }
}

int runGuarded(const std::string &tool, const std::function<int()> &body) {
  // A write past the file-size limit (ulimit -f) fails with EFBIG and is reported; the signal
  // would end the process without a word.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    return body();
  } catch (...) {
    std::cout << std::flush;
    std::cerr << tool << ": error: " << exceptionMessage(std::current_exception()) << "\n";
    return 1;
  }
}

// Applies the flags that override train settings, each checked by the
// run-settings schema; fails with a usage error message for a malformed value.
Error applySettingFlags(const ParsedArgs &args, ir::AttrMap &config) {
  for (const ir::RunSettingDef &d : ir::runSettingDefs()) {
    if (d.flag.empty() || !args.has(d.flag)) continue;
    std::string flag = "--" + d.flag, text = args.get(d.flag);
    ir::AttrValue value = text;
    if (d.kind == ir::SettingKind::Count) {
      int64_t n = 0;
      if (Error msg = readCount(flag, text, d.least, INT64_MAX, n))
        return msg;
      value = n;
    } else if (d.kind == ir::SettingKind::Fraction || d.kind == ir::SettingKind::Rate) {
      char *end = nullptr;
      errno = 0;
      double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0')
        return Error::make(flag + " expects " + ir::settingExpectation(d) + ", got '" + text + "'");
      if (errno == ERANGE)
        return Error::make(flag + " expects " + ir::settingExpectation(d) + ", got '" + text + "', which is " +
               (std::fabs(v) > 1 ? "too large for a double" : "too small for a double (it rounds to 0)"));
      value = v;
    }
    if (Error msg = ir::setRunSetting(config, d, value))
      return Error::make(d.kind == ir::SettingKind::Choice
                 ? msg.message()
                 : flag + " expects " + ir::settingExpectation(d) + ", got '" + text + "'");
  }
  return Error::success();
}

} // namespace dtnn::cli
