// Algorithm:
//  1. Reachability: the strongly connected components of the import graph
//     (Tarjan's algorithm, iterative so that a long chain of imports needs no
//     deep stack), each with the set of files it reaches as a bit set, in the
//     order Tarjan completes them, so that every import's component is done
//     first. Time O(files + imports * files / 64).
//  2. A name that one file defines can mean only that block: a file sees it
//     when it reaches that file. Nothing to report.
//  3. A name that several files define: a breadth-first search from the
//     files that define it, backwards along imports, never through a file
//     that defines it. Each file reached sees the block of its import that is
//     nearest to a definition, the first such in the file on a tie. A file
//     one of whose imports sees another block is reported once for the name:
//     a warning at its own block when it defines the name, else an error at
//     that import. Time O(files and imports reached), per name.
//  4. The diagnostics are reported in the order of their file (as loaded),
//     import (as written) and name.
#include "frontend/Scopes.h"

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>

namespace dtnn::frontend {

void BlockScopes::build(std::vector<File> files, DiagnosticEngine &diags) {
  files_ = std::move(files);
  indexOf_.clear();
  owners_.clear();
  seenMulti_.clear();
  for (size_t f = 0; f < files_.size(); ++f) {
    indexOf_.emplace(files_[f].path, f);
    for (const auto &[name, block] : files_[f].own) owners_[name].push_back(f);
    // An import of the file itself adds nothing; a second import of one file neither.
    std::vector<std::pair<size_t, SourceLoc>> kept;
    std::set<size_t> targets;
    for (auto &imp : files_[f].imports)
      if (imp.first != f && targets.insert(imp.first).second) kept.push_back(std::move(imp));
    files_[f].imports = std::move(kept);
  }
  computeReach();
  importers_.assign(files_.size(), {});
  for (size_t f = 0; f < files_.size(); ++f)
    for (const auto &imp : files_[f].imports) importers_[imp.first].push_back(f);
  dist_.assign(files_.size(), -1);
  seen_.assign(files_.size(), nullptr);
  std::vector<Pending> pending;
  for (const auto &[name, owners] : owners_)
    if (owners.size() > 1) propagate(name, owners, pending);
  std::stable_sort(pending.begin(), pending.end(), [](const Pending &a, const Pending &b) {
    return std::tie(a.file, a.import, a.name) < std::tie(b.file, b.import, b.name);
  });
  for (const Pending &p : pending) diags.report(p.diag);
}

void BlockScopes::computeReach() {
  const size_t kNone = std::numeric_limits<size_t>::max();
  size_t n = files_.size(), words = (n + 63) / 64, counter = 0;
  std::vector<size_t> index(n, kNone), low(n, 0), stack;
  std::vector<bool> onStack(n, false);
  sccOf_.assign(n, kNone);
  reach_.clear();
  // The files being visited, each with the position of its next import.
  std::vector<std::pair<size_t, size_t>> visiting;
  auto enter = [&](size_t f) {
    index[f] = low[f] = counter++;
    stack.push_back(f);
    onStack[f] = true;
    visiting.push_back({f, 0});
  };
  for (size_t root = 0; root < n; ++root) {
    if (index[root] != kNone) continue;
    enter(root);
    while (!visiting.empty()) {
      size_t f = visiting.back().first;
      if (visiting.back().second < files_[f].imports.size()) {
        size_t t = files_[f].imports[visiting.back().second++].first;
        if (index[t] == kNone) enter(t);
        else if (onStack[t]) low[f] = std::min(low[f], index[t]);
        continue;
      }
      visiting.pop_back();
      if (!visiting.empty()) {
        size_t parent = visiting.back().first;
        low[parent] = std::min(low[parent], low[f]);
      }
      if (low[f] != index[f]) continue;
      // f is the root of a component: its members are on the stack above it.
      size_t component = reach_.size();
      FileSet set(words, 0);
      std::vector<size_t> members;
      for (size_t m = kNone; m != f;) {
        m = stack.back();
        stack.pop_back();
        onStack[m] = false;
        sccOf_[m] = component;
        set[m / 64] |= uint64_t(1) << (m % 64);
        members.push_back(m);
      }
      for (size_t m : members)
        for (const auto &imp : files_[m].imports)
          if (size_t c = sccOf_[imp.first]; c != component)
            for (size_t w = 0; w < words; ++w) set[w] |= reach_[c][w];
      reach_.push_back(std::move(set));
    }
  }
}

bool BlockScopes::reaches(size_t from, size_t to) const {
  return (reach_[sccOf_[from]][to / 64] >> (to % 64)) & 1;
}

void BlockScopes::propagate(const std::string &name, const std::vector<size_t> &owners,
                            std::vector<Pending> &pending) {
  std::vector<size_t> touched, frontier;
  for (size_t o : owners) {
    dist_[o] = 0;
    seen_[o] = files_[o].own.at(name);
    touched.push_back(o);
  }
  frontier = owners;
  for (int64_t d = 0; !frontier.empty(); ++d) {
    std::vector<size_t> next;
    for (size_t f : frontier)
      for (size_t g : importers_[f])
        if (dist_[g] < 0) {
          dist_[g] = d + 1;
          next.push_back(g);
        }
    for (size_t g : next)
      for (const auto &imp : files_[g].imports)
        if (dist_[imp.first] == d) {
          seen_[g] = seen_[imp.first];
          break;
        }
    touched.insert(touched.end(), next.begin(), next.end());
    frontier = std::move(next);
  }
  auto &visible = seenMulti_[name];
  for (size_t f : touched) {
    checkImports(f, name, pending);
    if (dist_[f] > 0) visible.push_back({f, seen_[f]});
  }
  std::sort(visible.begin(), visible.end());
  for (size_t f : touched) {
    dist_[f] = -1;
    seen_[f] = nullptr;
  }
}

void BlockScopes::checkImports(size_t f, const std::string &name,
                               std::vector<Pending> &pending) const {
  const BlockDecl *mine = seen_[f];
  bool shadows = dist_[f] == 0;
  const auto &imports = files_[f].imports;
  // The import nearest to another definition, the first such on a tie.
  size_t k = imports.size();
  for (size_t i = 0; i < imports.size(); ++i) {
    size_t t = imports[i].first;
    if (dist_[t] >= 0 && seen_[t] != mine &&
        (k == imports.size() || dist_[t] < dist_[imports[k].first]))
      k = i;
  }
  if (k == imports.size()) return;
  const auto &[t, loc] = imports[k];
  const BlockDecl *block = seen_[t];
  Diagnostic d{shadows ? Severity::Warning : Severity::Error, shadows ? mine->loc : loc,
               shadows ? "block '" + name + "' shadows the one imported from " +
                             block->loc.file + "; calls in this file use this one"
                       : "block '" + name + "' is defined both in " + mine->loc.file +
                             " and in " + block->loc.file +
                             ", which this file imports; define '" + name +
                             "' here to choose, or rename one",
               {}};
  d.note(block->loc, shadows ? "the imported block is here" : "one definition is here");
  if (!shadows) d.note(mine->loc, "the other is here");
  pending.push_back({f, k, name, std::move(d)});
}

const BlockDecl *BlockScopes::find(const std::string &file, const std::string &name) const {
  auto fileIt = indexOf_.find(file);
  if (fileIt == indexOf_.end()) return nullptr;
  size_t f = fileIt->second;
  if (auto it = files_[f].own.find(name); it != files_[f].own.end()) return it->second;
  auto ownersIt = owners_.find(name);
  if (ownersIt == owners_.end()) return nullptr;
  if (ownersIt->second.size() == 1) {
    size_t o = ownersIt->second.front();
    return reaches(f, o) ? files_[o].own.at(name) : nullptr;
  }
  auto seenIt = seenMulti_.find(name);
  if (seenIt == seenMulti_.end()) return nullptr;
  const auto &visible = seenIt->second;
  auto it = std::lower_bound(visible.begin(), visible.end(), f,
                             [](const auto &entry, size_t file) { return entry.first < file; });
  return it != visible.end() && it->first == f ? it->second : nullptr;
}

std::vector<std::string> BlockScopes::names(const std::string &file) const {
  std::vector<std::string> out;
  for (const auto &[name, owners] : owners_)
    if (find(file, name)) out.push_back(name);
  return out;
}

} // namespace dtnn::frontend
