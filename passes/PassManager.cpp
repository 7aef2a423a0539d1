// The pass manager: pipeline parsing, running, and the hooks around each pass.
#include "passes/PassManager.h"

#include <map>

#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/PassRegistry.h"
#include "passes/Pipelines.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

namespace dtnn::passes {

namespace {

// `s` without leading and trailing blanks.
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Pass names and pipeline names: everything a pipeline list may mention.
std::vector<std::string> knownNames(bool withPipelines) {
  std::vector<std::string> names = passNames();
  if (withPipelines)
    for (const Pipeline &p : builtinPipelines()) names.push_back(p.name);
  return names;
}

// The error for an unknown name, with a suggestion when one is close.
Error unknownPass(const std::string &name, bool withPipelines, const std::string &context) {
  std::string msg = "unknown pass '" + name + "'" + context;
  std::string guess = closestMatch(name, knownNames(withPipelines));
  if (!guess.empty()) msg += "; did you mean '" + guess + "'?";
  return Error::make(msg);
}

} // namespace

PassManager::PassManager(PassManagerOptions o) : opts_(std::move(o)) {}

// Splits a pipeline at the commas outside braces and parentheses.
static std::vector<std::string> splitPipeline(std::string_view list) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (char c : list) {
    if (c == '{' || c == '(') ++depth;
    if (c == '}' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(std::move(cur));
  return parts;
}

// Applies `key=value key2=value2` to pass `p`.
static Error applyOptions(Pass &p, std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    if (i == text.size()) break;
    size_t end = text.find(' ', i);
    std::string_view kv = text.substr(i, end == std::string_view::npos ? end : end - i);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return Error::make("pass '" + std::string(p.name()) + "': expected key=value, got '" +
                         std::string(kv) + "'");
    if (Error e = p.setOption(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1))))
      return e;
    i += kv.size();
  }
  return Error::success();
}

Error PassManager::parsePipeline(std::string_view commaList) {
  std::vector<Entry> parsed;
  if (Error e = parseItems(commaList, false, parsed)) return e;
  for (Entry &e : parsed) {
    if (opts_.noFuse)
      std::erase_if(e.passes, [](const std::unique_ptr<Pass> &p) { return p->fuses(); });
    if (opts_.noJit)
      std::erase_if(e.passes, [](const std::unique_ptr<Pass> &p) { return p->forJit(); });
    if (!e.passes.empty()) entries_.push_back(std::move(e));
  }
  return Error::success();
}

Error PassManager::parseItems(std::string_view commaList, bool inGroup,
                              std::vector<Entry> &out) {
  for (const std::string &part : splitPipeline(commaList)) {
    std::string item(trim(part));
    if (item.empty()) continue;
    if (item.starts_with("repeat(")) {
      if (item.back() != ')') return Error::make("a group must end with ')': '" + item + "'");
      if (inGroup) return Error::make("groups do not nest: '" + item + "'");
      std::vector<Entry> inner;
      if (Error e = parseItems(std::string_view(item).substr(7, item.size() - 8), true, inner))
        return e;
      Entry group;
      group.repeat = true;
      for (Entry &e : inner)
        for (auto &p : e.passes) group.passes.push_back(std::move(p));
      if (group.passes.empty()) return Error::make("an empty group: '" + item + "'");
      out.push_back(std::move(group));
      continue;
    }
    std::string name = item, options;
    if (size_t brace = item.find('{'); brace != std::string::npos) {
      if (item.back() != '}')
        return Error::make("pass options must end with '}': '" + item + "'");
      name = std::string(trim(std::string_view(item).substr(0, brace)));
      options = item.substr(brace + 1, item.size() - brace - 2);
    }
    if (std::unique_ptr<Pass> p = createPass(name)) {
      if (Error e = applyOptions(*p, options)) return e;
      Entry one;
      one.passes.push_back(std::move(p));
      out.push_back(std::move(one));
    } else if (const Pipeline *pl = findPipeline(name)) {
      if (!options.empty()) return Error::make("pipeline '" + name + "' takes no options");
      std::string list;
      for (const std::string &n : pl->passes) list += (list.empty() ? "" : ",") + n;
      if (Error e = parseItems(list, inGroup, out))
        return Error::make("pipeline '" + pl->name + "': " + e.message());
    } else {
      return unknownPass(name, true, "");
    }
  }
  return Error::success();
}

void PassManager::add(std::unique_ptr<Pass> p) {
  Entry one;
  one.passes.push_back(std::move(p));
  entries_.push_back(std::move(one));
}

std::string PassManager::entryStr(const Entry &e) {
  std::string inner;
  for (const auto &p : e.passes) {
    inner += (inner.empty() ? "" : ",") + std::string(p->name());
    if (std::string o = p->optionsStr(); !o.empty()) inner += "{" + o + "}";
  }
  return e.repeat ? "repeat(" + inner + ")" : inner;
}

std::string PassManager::pipelineStr() const {
  std::string s;
  for (const Entry &e : entries_) s += (s.empty() ? "" : ",") + entryStr(e);
  return s;
}

Error PassManager::checkPrintIrAfter() const {
  for (const std::string &n : opts_.printIrAfter)
    if (!createPass(n)) return unknownPass(n, false, " in --print-ir-after");
  return Error::success();
}

Error PassManager::run(ir::Module &m) {
  if (Error e = checkPrintIrAfter()) return e;
  std::map<const Pass *, double> ms;
  for (const Entry &e : entries_) {
    // A group runs its passes in turn until a whole round changes nothing.
    int rounds = e.repeat ? kMaxRounds : 1;
    bool changed = true;
    for (int round = 0; round < rounds && changed; ++round) {
      changed = false;
      for (const auto &pass : e.passes) {
        Expected<bool> c = runOne(*pass, m, ms[pass.get()]);
        if (!c) return c.takeError();
        changed |= *c;
      }
    }
    if (e.repeat && changed)
      return Error::make("a group of passes reached no fixed point in " +
                         std::to_string(kMaxRounds) + " rounds: " + entryStr(e));
  }
  if (opts_.timePasses) printTiming(ms);
  return Error::success();
}

Expected<bool> PassManager::runOne(Pass &pass, ir::Module &m, double &ms) {
  std::string name(pass.name());
  pass.setTarget(opts_.target);
  pass.setRemarks(opts_.remarks);
  auto start = std::chrono::steady_clock::now();
  Expected<bool> changed = pass.run(m);
  auto end = std::chrono::steady_clock::now();
  ms += std::chrono::duration<double, std::milli>(end - start).count();
  if (!changed) return Error::make("pass '" + name + "' failed: " + changed.error().message());
  const auto &after = opts_.printIrAfter;
  if (opts_.printIrAfterAll || std::find(after.begin(), after.end(), name) != after.end()) {
    std::ostream &irOut = opts_.irOut ? *opts_.irOut : std::cout;
    irOut << "// -----// IR Dump After " << name << " //----- //\n";
    ir::printModule(m, irOut);
  }
  if (opts_.verifyEach) {
    std::vector<Diagnostic> diags = ir::verifyModule(m);
    if (!diags.empty())
      return Error::make("IR invalid after pass '" + name + "': " + diags.front().message);
  }
  return changed;
}

void PassManager::printTiming(const std::map<const Pass *, double> &ms) const {
  std::ostream &os = opts_.timingOut ? *opts_.timingOut : std::cerr;
  size_t width = 5; // "Total"
  for (const Entry &e : entries_)
    for (const auto &p : e.passes) width = std::max(width, p->name().size());
  double total = 0;
  for (const auto &[p, t] : ms) total += t;

  auto row = [&](std::string_view name, double t, double pct) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%12.3f %7.1f%%", t, pct);
    os << "  " << name << std::string(width - name.size(), ' ') << buf << "\n";
  };
  os << "===-- Pass execution timing report --===\n";
  os << "  Pass" << std::string(width - 4, ' ') << "   Wall (ms)  % total\n";
  for (const Entry &e : entries_)
    for (const auto &p : e.passes) {
      double t = ms.count(p.get()) ? ms.at(p.get()) : 0.0;
      row(p->name(), t, total > 0 ? 100.0 * t / total : 0.0);
    }
  row("Total", total, 100.0);
}

} // namespace dtnn::passes
