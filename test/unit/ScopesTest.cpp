// Tests of BlockScopes, which tells the block each name means in each file
// of a program: visibility along chains of imports and in cycles, files that
// do not reach a definition, shadowing, conflicts between two imports, and a
// chain long enough that per-file tables would be slow.
#include "frontend/Scopes.h"

#include <gtest/gtest.h>

#include <memory>
#include <sstream>

using namespace dtnn;
using namespace dtnn::frontend;

namespace {

// A program under construction: files f0, f1, ... with blocks and imports.
class TestProgram {
public:
  explicit TestProgram(size_t files) {
    for (size_t f = 0; f < files; ++f) files_.push_back({path(f), {}, {}});
  }
  static std::string path(size_t f) { return "f" + std::to_string(f) + ".dtnn"; }
  // Defines block `name` in file f, at line `line`.
  const BlockDecl *define(size_t f, const std::string &name, uint32_t line = 1) {
    auto b = std::make_unique<BlockDecl>();
    b->name = name;
    b->loc = {path(f), line, 7};
    files_[f].own[name] = b.get();
    blocks_.push_back(std::move(b));
    return blocks_.back().get();
  }
  // Makes file f import file t at line `line`.
  void import(size_t f, size_t t, uint32_t line = 1) {
    files_[f].imports.push_back({t, SourceLoc{path(f), line, 1}});
  }
  // Builds the scopes; returns the diagnostics printed.
  std::string build() {
    SourceManager sm;
    std::ostringstream os;
    DiagnosticEngine diags(sm, os);
    scopes_.build(files_, diags);
    return os.str();
  }
  const BlockDecl *find(size_t f, const std::string &name) const {
    return scopes_.find(path(f), name);
  }
  std::vector<std::string> names(size_t f) const { return scopes_.names(path(f)); }

private:
  std::vector<BlockScopes::File> files_;
  std::vector<std::unique_ptr<BlockDecl>> blocks_;
  BlockScopes scopes_;
};

} // namespace

TEST(Scopes, ChainSeesEverythingDownstream) {
  TestProgram p(3);
  p.import(0, 1);
  p.import(1, 2);
  const BlockDecl *a = p.define(1, "a"), *b = p.define(2, "b");
  EXPECT_EQ(p.build(), "");
  EXPECT_EQ(p.find(0, "a"), a);
  EXPECT_EQ(p.find(0, "b"), b);
  EXPECT_EQ(p.find(2, "a"), nullptr); // f2 does not import f1
  EXPECT_EQ(p.find(0, "c"), nullptr);
  EXPECT_EQ(p.find(7, "a"), nullptr); // not a file of the program
  EXPECT_EQ(p.names(0), std::vector<std::string>({"a", "b"}));
  EXPECT_EQ(p.names(2), std::vector<std::string>({"b"}));
}

TEST(Scopes, CycleSeesEachOther) {
  TestProgram p(3);
  p.import(0, 1);
  p.import(1, 2);
  p.import(2, 1);
  p.import(2, 2); // an import of the file itself changes nothing
  const BlockDecl *a = p.define(1, "a"), *b = p.define(2, "b");
  EXPECT_EQ(p.build(), "");
  EXPECT_EQ(p.find(2, "a"), a);
  EXPECT_EQ(p.find(1, "b"), b);
  EXPECT_EQ(p.find(0, "b"), b);
}

TEST(Scopes, OwnBlockShadowsImportedOneWithWarning) {
  TestProgram p(3);
  p.import(0, 1);
  p.import(1, 2);
  const BlockDecl *mine = p.define(0, "conv_bn", 5), *lib = p.define(2, "conv_bn", 3);
  EXPECT_EQ(p.build(), "f0.dtnn:5:7: warning: block 'conv_bn' shadows the one imported from "
                       "f2.dtnn; calls in this file use this one\n"
                       "f2.dtnn:3:7: note: the imported block is here\n");
  EXPECT_EQ(p.find(0, "conv_bn"), mine);
  EXPECT_EQ(p.find(1, "conv_bn"), lib); // the library keeps its own
}

TEST(Scopes, TwoImportsOfDifferentBlocksAreAnError) {
  TestProgram p(3);
  p.import(0, 1, 2);
  p.import(0, 2, 3);
  p.define(1, "stem");
  p.define(2, "stem");
  EXPECT_EQ(p.build(), "f0.dtnn:3:1: error: block 'stem' is defined both in f1.dtnn and in "
                       "f2.dtnn, which this file imports; define 'stem' here to choose, or "
                       "rename one\n"
                       "f2.dtnn:1:7: note: one definition is here\n"
                       "f1.dtnn:1:7: note: the other is here\n");
}

TEST(Scopes, NearestDefinitionIsTheOneSeenAndTheFartherIsReported) {
  // f0 imports f1 (which imports f3, defining x) first and f2 (defining x) second.
  TestProgram p(4);
  p.import(0, 1, 1);
  p.import(0, 2, 2);
  p.import(1, 3);
  p.define(2, "x");
  p.define(3, "x");
  std::string out = p.build();
  EXPECT_NE(out.find("f0.dtnn:1:1: error: block 'x' is defined both in f2.dtnn and in f3.dtnn"),
            std::string::npos)
      << out;
}

TEST(Scopes, OneBlockReachedTwiceIsNoConflict) {
  // A diamond: f0 imports f1 and f2, which both import f3.
  TestProgram p(4);
  p.import(0, 1);
  p.import(0, 2);
  p.import(1, 3);
  p.import(2, 3);
  const BlockDecl *x = p.define(3, "x");
  p.define(1, "y");
  p.define(2, "y");
  EXPECT_EQ(p.find(0, "x"), nullptr); // before build
  std::string out = p.build();
  EXPECT_NE(out.find("error: block 'y' is defined both in f1.dtnn and in f2.dtnn"),
            std::string::npos);
  EXPECT_EQ(p.find(0, "x"), x);
}

TEST(Scopes, LongChainIsFast) {
  // 10,000 files (the most a compilation loads), each defining one block and
  // importing the next: per-file tables would hold 50 million entries.
  const size_t n = 10'000;
  TestProgram p(n);
  for (size_t f = 0; f + 1 < n; ++f) p.import(f, f + 1);
  for (size_t f = 0; f < n; ++f) p.define(f, "b" + std::to_string(f));
  EXPECT_EQ(p.build(), "");
  EXPECT_NE(p.find(0, "b9999"), nullptr);
  EXPECT_EQ(p.find(9999, "b0"), nullptr);
  EXPECT_EQ(p.names(n - 2).size(), 2u);
}
