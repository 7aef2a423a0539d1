// Tests of the image folder index: class and file order, what is left out and why, every error,
// list files, the cache (reuse, each change that must invalidate it, damaged caches, where it is
// kept) and the memory an index takes.
#include "runtime/train/data/ImageFolder.h"

#include "test/unit/TempDir.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>

using namespace dtnn;
using dtnn::testing::readFile;
using dtnn::testing::writeFile;
namespace fs = std::filesystem;

namespace {

class ImageFolderTest : public dtnn::testing::TempDirTest {
protected:
  // An empty file at `rel` under the temporary folder, its folders made.
  void touch(const std::string &rel) {
    fs::create_directories(fs::path(path(rel)).parent_path());
    writeFile(path(rel), "");
  }
  void touchAll(const std::vector<std::string> &rels) {
    for (const std::string &rel : rels) touch(rel);
  }
  // Sets the mtime of everything under the temporary folder an hour back, so that the cache
  // trusts it (a folder changed in the last seconds is not trusted).
  void backdate() {
    auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
    std::error_code ec;
    for (const auto &e : fs::recursive_directory_iterator(dir_))
      if (!e.is_symlink()) fs::last_write_time(e.path(), old, ec);
    fs::last_write_time(dir_, old, ec);
  }
  // The index of `root` under the temporary folder; fails the test on an error.
  ImageFolderIndex index(const std::string &root, const ImageFolderOptions &opts = {}) {
    Expected<ImageFolderIndex> got = indexImageFolder(path(root), opts);
    EXPECT_TRUE(bool(got)) << (got ? "" : got.error().message());
    return got ? std::move(*got) : ImageFolderIndex{};
  }
  // The error indexing `root` gives, with the temporary folder's path written "T".
  std::string error(const std::string &root, const ImageFolderOptions &opts = {}) {
    Expected<ImageFolderIndex> got = indexImageFolder(path(root), opts);
    if (got) return "no error";
    std::string message = got.error().message();
    for (size_t at; (at = message.find(dir_.string())) != std::string::npos;)
      message.replace(at, dir_.string().size(), "T");
    return message;
  }
};

// Options with a list file (or ""), class names, the cache on or off, a cache folder (or "").
ImageFolderOptions options(const std::string &list, std::vector<std::string> classes = {},
                           bool useCache = true, const std::string &cacheDir = "") {
  ImageFolderOptions opts;
  opts.listFile = list;
  opts.classes = std::move(classes);
  opts.useCache = useCache;
  opts.cacheDir = cacheDir;
  return opts;
}

// The relative paths of an index.
std::vector<std::string> relatives(const ImageFolderIndex &index) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < index.count(); ++i) out.push_back(index.relative(i));
  return out;
}

// Whether two indexes hold the same files, classes, labels and notes.
void expectSame(const ImageFolderIndex &a, const ImageFolderIndex &b) {
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.classes, b.classes);
  EXPECT_EQ(a.names, b.names);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.skippedFiles, b.skippedFiles);
  EXPECT_EQ(a.notes, b.notes);
}

TEST(ImageFolderNames, ImageExtensionsInAnyCase) {
  for (const char *name : {"a.jpg", "a.JPG", "b.jpeg", "b.JpEg", "c.png", "c.PNG", "x.y.jpg"})
    EXPECT_TRUE(isImageFileName(name)) << name;
  for (const char *name : {"README.txt", "a.gif", "jpg", "a.jpg.txt", "a.pn", "a.jpgx", ""})
    EXPECT_FALSE(isImageFileName(name)) << name;
}

TEST_F(ImageFolderTest, ClassesInByteOrderFilesInTorchvisionOrder) {
  touchAll({"r/b/x.JpEg", "r/b/y.PNG", "r/C/img.jpg", "r/a/z.jpg", "r/a/README.txt",
            "r/a/sub/2.jpg", "r/a/sub-b/3.png", "r/a/sub/deeper/4.jpeg", "r/b/notes.md",
            "r/labels.txt", "r/a/.hidden.jpg", "r/a/.cache/5.jpg", "r/.git/x.jpg"});
  ImageFolderIndex idx = index("r", options("", {}, false));
  EXPECT_EQ(idx.classes, (std::vector<std::string>{"C", "a", "b"}));
  // The folders of a class in path order ("a/sub" < "a/sub-b" < "a/sub/deeper"), files by name.
  EXPECT_EQ(relatives(idx),
            (std::vector<std::string>{"C/img.jpg", "a/z.jpg", "a/sub/2.jpg", "a/sub-b/3.png",
                                      "a/sub/deeper/4.jpeg", "b/x.JpEg", "b/y.PNG"}));
  EXPECT_EQ(idx.labels, (std::vector<int32_t>{0, 1, 1, 1, 1, 2, 2}));
  EXPECT_EQ(idx.skippedFiles, 2); // README.txt, notes.md; not hidden files nor ROOT's own
  EXPECT_TRUE(idx.notes.empty());
  EXPECT_FALSE(idx.fromCache);
  EXPECT_EQ(idx.root, path("r"));
  EXPECT_EQ(idx.path(0), path("r") + "/C/img.jpg");
  // A root spelt with a trailing slash is the same root.
  Expected<ImageFolderIndex> slash = indexImageFolder(path("r") + "/", options("", {}, false));
  ASSERT_TRUE(bool(slash));
  EXPECT_EQ(slash->path(0), path("r") + "/C/img.jpg");
}

TEST_F(ImageFolderTest, Errors) {
  touchAll({"r/a/x.jpg", "r/b/README.txt", "r/b/.y.jpg"});
  fs::create_directories(path("r/c"));
  EXPECT_EQ(error("r"), "class folder T/r/b has no images");
  fs::remove_all(path("r/b"));
  EXPECT_EQ(error("r"), "class folder T/r/c has no images");
  EXPECT_EQ(error("missing"), "T/missing does not exist");
  touch("file");
  EXPECT_EQ(error("file"), "T/file is not a folder");
  EXPECT_EQ(error("file/below"), "T/file/below does not exist");
  touchAll({"none/x.jpg", "none/.hidden/y.jpg"});
  EXPECT_EQ(error("none"), "T/none has no class folders");
}

TEST_F(ImageFolderTest, SymbolicLinksFollowedLoopsAndDanglingLinksLeftOut) {
  touchAll({"r/a/x.jpg", "r/a/sub/y.jpg", "outside/o.jpg", "elsewhere/e.png"});
  fs::create_directory_symlink("..", path("r/a/sub/up"));        // back to r/a: a loop
  fs::create_directory_symlink(".", path("r/self"));             // r itself as a class
  fs::create_symlink("l2", path("r/a/l1"));                      // a loop of links
  fs::create_symlink("l1", path("r/a/l2"));
  fs::create_symlink("nowhere.jpg", path("r/a/broken.jpg"));     // dangling
  fs::create_directory_symlink(path("outside"), path("r/b"));    // a class folder elsewhere
  fs::create_directory_symlink("../../elsewhere", path("r/a/ext")); // a subfolder elsewhere
  fs::create_symlink("x.jpg", path("r/a/x2.jpg"));               // a link to an image
  ImageFolderIndex idx = index("r", options("", {}, false));
  EXPECT_EQ(idx.classes, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(relatives(idx), (std::vector<std::string>{"a/x.jpg", "a/x2.jpg", "a/ext/e.png",
                                                      "a/sub/y.jpg", "b/o.jpg"}));
  std::string r = path("r");
  EXPECT_EQ(idx.notes, (std::vector<std::string>{
                           r + "/self: a symbolic link loop, left out",
                           r + "/a/broken.jpg: a dangling symbolic link, left out",
                           r + "/a/l1: a symbolic link loop, left out",
                           r + "/a/l2: a symbolic link loop, left out",
                           r + "/a/sub/up: a symbolic link loop, left out"}));
}

TEST_F(ImageFolderTest, ListFile) {
  fs::create_directories(path("r"));
  writeFile(path("list.txt"), "# train list\n"
                              "a/1.jpg 0\n"
                              "\n"
                              "   \n"
                              "b/with space.jpg 2\r\n"
                              "c/3.png\t1\n"
                              "  d/4.jpg   0  \n");
  ImageFolderOptions opts = options(path("list.txt"), {}, false);
  ImageFolderIndex idx = index("r", opts);
  EXPECT_EQ(relatives(idx),
            (std::vector<std::string>{"a/1.jpg", "b/with space.jpg", "c/3.png", "d/4.jpg"}));
  EXPECT_EQ(idx.labels, (std::vector<int32_t>{0, 2, 1, 0}));
  EXPECT_EQ(idx.classes, (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(idx.path(1), path("r") + "/b/with space.jpg");

  // Class names: labels by name or by number, numbered as the names are.
  writeFile(path("names.txt"), "x.jpg n02\ny.jpg 0\nz z.jpg n01\n");
  opts.listFile = path("names.txt");
  opts.classes = {"n01", "n02", "n03"};
  idx = index("r", opts);
  EXPECT_EQ(idx.labels, (std::vector<int32_t>{1, 0, 0}));
  EXPECT_EQ(idx.classes, opts.classes);
  EXPECT_EQ(relatives(idx), (std::vector<std::string>{"x.jpg", "y.jpg", "z z.jpg"}));
}

TEST_F(ImageFolderTest, ListFileErrorsNameTheLine) {
  fs::create_directories(path("r"));
  auto listError = [&](const std::string &text, std::vector<std::string> classes = {}) {
    writeFile(path("l.txt"), text);
    return error("r", options(path("l.txt"), classes, false));
  };
  EXPECT_EQ(listError("# c\na.jpg 0\nb.jpg x\n"), "T/l.txt:3: bad label 'x': not a class number");
  EXPECT_EQ(listError("a.jpg -1\n"), "T/l.txt:1: bad label '-1': not a class number");
  EXPECT_EQ(listError("a.jpg n01\n\nb.jpg n09\n", {"n01", "n02"}),
            "T/l.txt:3: unknown class 'n09'");
  EXPECT_EQ(listError("a.jpg 0\nb.jpg 2\n", {"n01", "n02"}),
            "T/l.txt:2: label 2 is out of range: there are 2 classes");
  EXPECT_EQ(listError("a.jpg 99999999999999999999999\n"),
            "T/l.txt:1: label 99999999999999999999999 is too large: at most 1048576 classes "
            "without class names");
  EXPECT_EQ(listError("a.jpg 1\nb.jpg\n"), "T/l.txt:2: missing label after the path 'b.jpg'");
  EXPECT_EQ(listError("/abs/a.jpg 1\n"),
            "T/l.txt:1: the path /abs/a.jpg is absolute; paths are relative to T/r");
  EXPECT_EQ(listError(std::string("a\0b.jpg 1\n", 10)), "T/l.txt:1: the path holds a NUL byte");
  EXPECT_EQ(listError("# nothing\n\n"), "T/l.txt lists no files");
  EXPECT_EQ(listError("a.jpg 0\n", {"n01", "n01"}), "T/l.txt: class 'n01' is given twice");
  EXPECT_EQ(error("r", options(path("missing.txt"))),
            "T/missing.txt: cannot open: No such file or directory");
  EXPECT_EQ(error("r", options(path("r"))), "T/r: is a directory");
}

TEST_F(ImageFolderTest, CacheReusedWhileNothingChanges) {
  touchAll({"r/b/1.jpg", "r/a/2.jpg", "r/a/sub/3.png", "r/a/README.txt"});
  fs::create_symlink("gone", path("r/a/dangling"));
  backdate();
  ImageFolderIndex first = index("r");
  EXPECT_FALSE(first.fromCache);
  EXPECT_TRUE(fs::is_regular_file(path("r/.dtnn-index")));
  ImageFolderIndex second = index("r");
  EXPECT_TRUE(second.fromCache);
  expectSame(first, second);
  EXPECT_EQ(second.skippedFiles, 1);
  ASSERT_EQ(second.notes.size(), 1u);
  // No temporary file is left beside the cache.
  for (const auto &e : fs::directory_iterator(path("r")))
    EXPECT_EQ(e.path().filename().string().find(".dtnn-index."), std::string::npos);
}

TEST_F(ImageFolderTest, EachChangeInvalidatesTheCache) {
  touchAll({"r/b/1.jpg", "r/a/2.jpg", "r/a/sub/3.png", "r/a/sub/4.png", "outside/x.txt"});
  fs::create_symlink("../../outside/gone.jpg", path("r/a/dangling.jpg"));
  backdate();
  EXPECT_FALSE(index("r").fromCache);
  EXPECT_TRUE(index("r").fromCache);
  // Each change, and what the rebuilt index must then hold.
  struct Change {
    const char *what;
    std::function<void()> make;
    std::vector<std::string> files;
    bool stampedFolderChanged = true;
  };
  std::vector<Change> changes = {
      {"a file added", [&] { touch("r/a/sub/5.jpg"); },
       {"a/2.jpg", "a/sub/3.png", "a/sub/4.png", "a/sub/5.jpg", "b/1.jpg"}},
      {"a class added", [&] { touch("r/c/6.jpg"); },
       {"a/2.jpg", "a/sub/3.png", "a/sub/4.png", "a/sub/5.jpg", "b/1.jpg", "c/6.jpg"}},
      {"a file removed", [&] { fs::remove(path("r/a/sub/3.png")); },
       {"a/2.jpg", "a/sub/4.png", "a/sub/5.jpg", "b/1.jpg", "c/6.jpg"}},
      {"a file renamed", [&] { fs::rename(path("r/a/sub/4.png"), path("r/a/sub/7.png")); },
       {"a/2.jpg", "a/sub/5.jpg", "a/sub/7.png", "b/1.jpg", "c/6.jpg"}},
      {"a folder renamed", [&] { fs::rename(path("r/a/sub"), path("r/a/tub")); },
       {"a/2.jpg", "a/tub/5.jpg", "a/tub/7.png", "b/1.jpg", "c/6.jpg"}},
      // The renamed folder keeps its mtime; ROOT's listing tells.
      {"a class renamed", [&] { fs::rename(path("r/c"), path("r/d")); },
       {"a/2.jpg", "a/tub/5.jpg", "a/tub/7.png", "b/1.jpg", "d/6.jpg"},
       false},
      // No folder of the tree changes: the link's stamp tells.
      {"a dangling link mended", [&] { touch("outside/gone.jpg"); },
       {"a/2.jpg", "a/dangling.jpg", "a/tub/5.jpg", "a/tub/7.png", "b/1.jpg", "d/6.jpg"},
       false},
  };
  for (const Change &c : changes) {
    c.make();
    ImageFolderIndex idx = index("r");
    EXPECT_FALSE(idx.fromCache) << c.what;
    EXPECT_EQ(relatives(idx), c.files) << c.what;
    if (c.stampedFolderChanged) {
      // A folder changed just now is not trusted, so the index is not saved until it is older.
      EXPECT_FALSE(index("r").fromCache) << c.what;
      backdate();
      EXPECT_FALSE(index("r").fromCache) << c.what;
    }
    ImageFolderIndex cached = index("r");
    EXPECT_TRUE(cached.fromCache) << c.what;
    EXPECT_EQ(relatives(cached), c.files) << c.what;
  }
}

TEST_F(ImageFolderTest, DamagedCacheIsRebuilt) {
  touchAll({"r/a/1.jpg", "r/a/2.jpg", "r/b/3.jpg"});
  backdate();
  ImageFolderIndex good = index("r");
  std::string cache = path("r/.dtnn-index"), bytes = readFile(cache);
  ASSERT_GT(bytes.size(), 40u);
  std::string flipped = bytes;
  flipped[bytes.size() - 10] ^= 1;
  for (const std::string &damaged :
       {std::string(), bytes.substr(0, 20), bytes.substr(0, bytes.size() / 2),
        bytes.substr(0, bytes.size() - 1), bytes + "x", flipped, std::string(4096, '\xff'),
        std::string("not a cache at all")}) {
    writeFile(cache, damaged);
    ImageFolderIndex idx = index("r");
    EXPECT_FALSE(idx.fromCache) << damaged.size();
    expectSame(good, idx);
    EXPECT_EQ(readFile(cache), bytes); // rewritten whole
  }
  EXPECT_TRUE(index("r").fromCache);
}

TEST_F(ImageFolderTest, CacheInCacheDirWhenRootTakesNone) {
  touchAll({"r/a/1.jpg", "r/b/2.jpg"});
  fs::create_directories(path("r/.dtnn-index")); // hidden, so no class; no file can go there
  backdate();
  ImageFolderOptions opts = options("", {}, true, path("cache/dtnn"));
  EXPECT_FALSE(index("r", opts).fromCache);
  std::vector<std::string> files;
  for (const auto &e : fs::directory_iterator(path("cache/dtnn")))
    files.push_back(e.path().filename().string());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].size(), std::string("index-").size() + 16);
  EXPECT_EQ(files[0].rfind("index-", 0), 0u);
  EXPECT_TRUE(index("r", opts).fromCache);
  EXPECT_EQ(index("r", opts).classes, (std::vector<std::string>{"a", "b"}));
}

TEST_F(ImageFolderTest, CacheInXdgCacheHomeByDefault) {
  touchAll({"r/a/1.jpg"});
  fs::create_directories(path("r/.dtnn-index"));
  backdate();
  const char *old = std::getenv("XDG_CACHE_HOME");
  std::string saved = old ? old : "";
  ::setenv("XDG_CACHE_HOME", path("xdg").c_str(), 1);
  EXPECT_FALSE(index("r").fromCache);
  EXPECT_TRUE(index("r").fromCache);
  EXPECT_EQ(std::distance(fs::directory_iterator(path("xdg/dtnn")), fs::directory_iterator()), 1);
  if (old) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else ::unsetenv("XDG_CACHE_HOME");
}

TEST_F(ImageFolderTest, NoCacheWhenTurnedOff) {
  touchAll({"r/a/1.jpg"});
  backdate();
  EXPECT_FALSE(index("r", options("", {}, false)).fromCache);
  EXPECT_FALSE(index("r", options("", {}, false)).fromCache);
  EXPECT_FALSE(fs::exists(path("r/.dtnn-index")));
}

TEST_F(ImageFolderTest, ListFileCache) {
  fs::create_directories(path("r"));
  writeFile(path("l.txt"), "a.jpg 0\nb.jpg 1\n");
  backdate();
  ImageFolderOptions opts = options(path("l.txt"));
  ImageFolderIndex first = index("r", opts);
  EXPECT_FALSE(first.fromCache);
  ImageFolderIndex second = index("r", opts);
  EXPECT_TRUE(second.fromCache);
  expectSame(first, second);
  // Named by the list and the classes: other classes, another cache.
  opts.classes = {"x", "y"};
  EXPECT_FALSE(index("r", opts).fromCache);
  EXPECT_TRUE(index("r", opts).fromCache);
  EXPECT_EQ(index("r", opts).classes, opts.classes);
  // A changed list invalidates its cache.
  writeFile(path("l.txt"), "a.jpg 0\nb.jpg 1\nc.jpg 1\n");
  backdate();
  ImageFolderIndex changed = index("r", opts);
  EXPECT_FALSE(changed.fromCache);
  EXPECT_EQ(changed.count(), 3);
  EXPECT_TRUE(index("r", opts).fromCache);
  int caches = 0;
  for (const auto &e : fs::directory_iterator(path("r")))
    caches += e.path().filename().string().rfind(".dtnn-index-", 0) == 0;
  EXPECT_EQ(caches, 2);
}

TEST_F(ImageFolderTest, CompactForImageNetNames) {
  constexpr int kFiles = 20000;
  fs::create_directories(path("r/n01440764"));
  touch("empty");
  // Hard links to one empty file: ten times faster to make than as many files.
  for (int i = 0; i < kFiles; ++i) {
    std::string name = path("r/n01440764/n01440764_" + std::to_string(10000 + i) + ".JPEG");
    ASSERT_EQ(::link(path("empty").c_str(), name.c_str()), 0) << std::strerror(errno);
  }
  backdate();
  for (bool cached : {false, true}) {
    ImageFolderIndex idx = index("r");
    EXPECT_EQ(idx.fromCache, cached);
    ASSERT_EQ(idx.count(), kFiles);
    EXPECT_STREQ(idx.relative(0), "n01440764/n01440764_10000.JPEG");
    size_t bytes = idx.names.capacity() + idx.offsets.capacity() * sizeof(uint64_t) +
                   idx.labels.capacity() * sizeof(int32_t);
    EXPECT_LT(bytes, size_t(100) * kFiles);
  }
}

} // namespace
