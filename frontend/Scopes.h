// Which block a name means in each file of a program. Each file sees its own
// blocks and the blocks that the files it imports see, so that files in an
// import cycle see each other's; its own shadow imported ones. The scopes are
// never built as one table per file (a chain of N files would see N^2
// entries): a name defined in one file is visible wherever that file is
// reachable by imports, and only names defined in several files are
// propagated, one name at a time.
#pragma once

#include "frontend/AST.h"
#include "ir/Diagnostics.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dtnn::frontend {

// The blocks a file defines itself, by name.
using OwnBlocks = std::map<std::string, const BlockDecl *>;

class BlockScopes {
public:
  // One loaded file: its path (FileAst::path), its own blocks, and the files
  // it imports as indices into the list given to build(), in source order,
  // with where each import is written.
  struct File {
    std::string path;
    OwnBlocks own;
    std::vector<std::pair<size_t, SourceLoc>> imports;
  };

  // Computes what each file sees. Reports a warning where a file's own block
  // shadows an imported one of its name, and an error where two imports of a
  // file bring different blocks of one name, at the import that brings the
  // second (the one farther from a definition, or later in the file).
  void build(std::vector<File> files, DiagnosticEngine &diags);

  // The block `name` means in the file of that path, or null.
  const BlockDecl *find(const std::string &file, const std::string &name) const;

  // Every block name the file of that path sees, in order (for hints).
  std::vector<std::string> names(const std::string &file) const;

private:
  // A set of files, one bit each.
  using FileSet = std::vector<uint64_t>;

  // One diagnostic of build(), with the key that orders it: the file, the
  // import, then the name.
  struct Pending {
    size_t file, import;
    std::string name;
    Diagnostic diag;
  };

  // Fills sccOf_ and reach_: the strongly connected components of the
  // import graph and, for each, the files reachable from it.
  void computeReach();
  // Whether file `to` is reachable from file `from` by imports (or is it).
  bool reaches(size_t from, size_t to) const;
  // Propagates a name that several files define: each file that reaches a
  // definition through files that do not define it takes the nearest one.
  void propagate(const std::string &name, const std::vector<size_t> &owners,
                 std::vector<Pending> &pending);
  // The diagnostic of file `f` for `name`, if one of its imports brings a
  // block other than the one it sees.
  void checkImports(size_t f, const std::string &name, std::vector<Pending> &pending) const;

  std::vector<File> files_;
  std::map<std::string, size_t> indexOf_; // path -> index into files_
  // The files that define each name, in load order.
  std::map<std::string, std::vector<size_t>> owners_;
  std::vector<size_t> sccOf_;  // file -> its component
  std::vector<FileSet> reach_; // component -> the files it reaches
  std::vector<std::vector<size_t>> importers_; // file -> the files that import it
  // For a name defined in several files: the block each other file that sees
  // it sees, sorted by file.
  std::map<std::string, std::vector<std::pair<size_t, const BlockDecl *>>> seenMulti_;
  // Scratch of propagate(), per file: distance to the nearest definition
  // (-1 when none) and the block seen; reset after each name.
  std::vector<int64_t> dist_;
  std::vector<const BlockDecl *> seen_;
};

} // namespace dtnn::frontend
