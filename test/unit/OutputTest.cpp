// Tests of the one write path (ir/Output.h): atomic replacement, devices and FIFOs written
// through, outputs that would overwrite an input refused, the file-size limit, the test-only
// fault hook, and the growing output that never holds less than what was appended.
#include "ir/Files.h"
#include "ir/Output.h"
#include "TempDir.h"

#include <gtest/gtest.h>

#include <grp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>

using namespace dtnn;
using dtnn::testing::readFile;
using dtnn::testing::writeFile;

namespace {

using OutputTest = dtnn::testing::TempDirTest;

// Runs `check` in a child process and returns its exit status (or 256 + the signal that ended
// it): for settings that must not leak into other tests (limits, environment, users).
int inChild(const std::function<int()> &check) {
  pid_t child = ::fork();
  if (child < 0) return -1;
  if (child == 0) ::_exit(check());
  int status = 0;
  if (::waitpid(child, &status, 0) != child) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 256 + WTERMSIG(status);
}

TEST_F(OutputTest, WritesAndReplaces) {
  ASSERT_FALSE(writeOutput(path("f.txt"), std::string_view("first, longer content")));
  EXPECT_EQ(readFile(path("f.txt")), "first, longer content");
  ASSERT_FALSE(writeOutput(path("f.txt"), std::string_view("second")));
  EXPECT_EQ(readFile(path("f.txt")), "second");
  ASSERT_FALSE(writeOutput(path("empty"), std::string_view()));
  EXPECT_EQ(readFile(path("empty")), "");
  EXPECT_EQ(listDir(), (std::vector<std::string>{"empty", "f.txt"}));
}

TEST_F(OutputTest, KeepsPermissionsOfReplacedFile) {
  writeFile(path("f.txt"), "old");
  ASSERT_EQ(::chmod(path("f.txt").c_str(), 0640), 0);
  ASSERT_FALSE(writeOutput(path("f.txt"), std::string_view("new")));
  struct stat st;
  ASSERT_EQ(::stat(path("f.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST_F(OutputTest, FailedWriteLeavesFileAndNoTemporary) {
  writeFile(path("f.txt"), "old");
  Error e = writeOutput(path("f.txt"), [](std::FILE *file) {
    std::fputs("partial", file);
    return false;
  });
  ASSERT_TRUE(e);
  EXPECT_EQ(e.message(), "cannot write '" + path("f.txt") + "': Input/output error");
  EXPECT_EQ(readFile(path("f.txt")), "old");
  EXPECT_EQ(listDir(), std::vector<std::string>{"f.txt"});
}

TEST_F(OutputTest, ErrorsNameThePathAndTheReason) {
  Error e = writeOutput(path("missing/f.txt"), std::string_view("x"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e.message(), "cannot write '" + path("missing/f.txt") + "': the folder '" +
                             path("missing") + "' does not exist");
  std::filesystem::create_directory(path("d"));
  writeFile(path("d/inner"), "x");
  e = writeOutput(path("d"), std::string_view("x"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e.message(), "cannot write '" + path("d") + "': it is a directory");
  writeFile(path("plain"), "x");
  e = checkOutput(path("plain/f.txt"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e.message(), "cannot write '" + path("plain/f.txt") + "': '" + path("plain") +
                             "' is not a folder");
  EXPECT_EQ(listDir(), (std::vector<std::string>{"d", "plain"}));
}

// Regression: renaming over a device or a pipe replaced it with the file (as root, --save
// /dev/full replaced the device). A FIFO nobody reads is refused; a device is written through,
// so that /dev/null takes an output and /dev/full reports a full disk.
TEST_F(OutputTest, WritesThroughDevicesAndRefusesAFifoNobodyReads) {
  ASSERT_EQ(::mkfifo(path("pipe").c_str(), 0600), 0);
  Error e = writeOutput(path("pipe"), std::string_view("x"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e.message(), "cannot write '" + path("pipe") + "': it is a FIFO that no process reads");
  struct stat st;
  ASSERT_EQ(::stat(path("pipe").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(listDir(), std::vector<std::string>{"pipe"});
  EXPECT_FALSE(writeOutput("/dev/null", std::string_view("x")));
  EXPECT_FALSE(checkOutput("/dev/null"));
  e = writeOutput("/dev/full", std::string_view("x"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e.message(), "cannot write '/dev/full': No space left on device");
  ASSERT_EQ(::stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// An output that is a file the process read, by another path, a symbolic link or a hard link,
// is refused and the input stays as it was; before, only paths given on the command line were
// compared.
TEST_F(OutputTest, RefusesToOverwriteAnInput) {
  writeFile(path("data.bin"), "input");
  uint64_t size = 0;
  ASSERT_TRUE(openRegularFile(path("data.bin"), size, "data file"));
  ASSERT_EQ(::symlink(path("data.bin").c_str(), path("link").c_str()), 0);
  ASSERT_EQ(::link(path("data.bin").c_str(), path("hard").c_str()), 0);
  std::string want = "': it is the data file '" + path("data.bin") +
                     "', which this run reads; writing it would destroy an input";
  for (const std::string &name : {"data.bin", "link", "hard", "./data.bin"}) {
    Error e = writeOutput(path(name), std::string_view("output"));
    ASSERT_TRUE(e) << name;
    EXPECT_EQ(e.message(), "cannot write '" + path(name) + want);
    EXPECT_TRUE(checkOutput(path(name)));
  }
  EXPECT_EQ(readFile(path("data.bin")), "input");
  EXPECT_EQ(inputAt(path("link")), "the data file '" + path("data.bin") + "'");
  EXPECT_EQ(inputAt(path("other")), "");
}

// Under a file-size limit the write fails with the limit named, instead of SIGXFSZ killing the
// process, and the old file stays.
TEST_F(OutputTest, FileSizeLimitIsAnErrorNotASignal) {
  writeFile(path("f.txt"), "old");
  int status = inChild([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit rl{100, 100};
    if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) return 10;
    Error e = writeOutput(path("f.txt"), std::string(1000, 'x'));
    if (!e) return 11;
    if (e.message() != "cannot write '" + path("f.txt") + "': File too large (the file-size "
                       "limit, ulimit -f, is 100 bytes)")
      return 12;
    return 0;
  });
  EXPECT_EQ(status, 0);
  EXPECT_EQ(readFile(path("f.txt")), "old");
  EXPECT_EQ(listDir(), std::vector<std::string>{"f.txt"});
}

// The test-only fault hook fails every file once it passes the given size.
TEST_F(OutputTest, FaultHookFailsWritesPastItsSize) {
  writeFile(path("f.txt"), "old");
  int status = inChild([&] {
    ::setenv("DTNN_TEST_WRITE_FAULT", "ENOSPC@4", 1);
    if (writeOutput(path("small"), std::string_view("1234"))) return 10;
    Error e = writeOutput(path("f.txt"), std::string_view("12345"));
    if (!e || e.message() != "cannot write '" + path("f.txt") + "': No space left on device") return 11;
    return 0;
  });
  EXPECT_EQ(status, 0);
  EXPECT_EQ(readFile(path("f.txt")), "old");
  EXPECT_EQ(readFile(path("small")), "1234");
  EXPECT_EQ(listDir(), (std::vector<std::string>{"f.txt", "small"}));
}

// A growing output holds everything appended so far, keeps a resumed file's text, and a failed
// append leaves what the last good one wrote.
TEST_F(OutputTest, GrowingOutputNeverHoldsLessThanWasAppended) {
  writeFile(path("m.jsonl"), "{\"epoch\": 1}");
  GrowingOutput out;
  ASSERT_FALSE(out.open(path("m.jsonl"), true));
  ASSERT_FALSE(out.append("{\"epoch\": 2}\n"));
  EXPECT_EQ(readFile(path("m.jsonl")), "{\"epoch\": 1}\n{\"epoch\": 2}\n");
  GrowingOutput fresh;
  ASSERT_FALSE(fresh.open(path("m.jsonl"), false));
  EXPECT_EQ(readFile(path("m.jsonl")), "{\"epoch\": 1}\n{\"epoch\": 2}\n");
  ASSERT_FALSE(fresh.append("a\n"));
  EXPECT_EQ(readFile(path("m.jsonl")), "a\n");
  int status = inChild([&] {
    ::setenv("DTNN_TEST_WRITE_FAULT", "EIO@3", 1);
    Error e = fresh.append("b\n");
    return e && e.message() == "cannot write '" + path("m.jsonl") + "': Input/output error" ? 0 : 1;
  });
  EXPECT_EQ(status, 0);
  EXPECT_EQ(readFile(path("m.jsonl")), "a\n");
  EXPECT_EQ(listDir(), std::vector<std::string>{"m.jsonl"});
  GrowingOutput device;
  ASSERT_FALSE(device.open("/dev/null", true));
  EXPECT_FALSE(device.append("x\n"));
}

// A signal handler that ends the process removes the temporary of the write in progress.
TEST_F(OutputTest, AbandonedWriteLeavesNoTemporary) {
  writeFile(path("f.txt"), "old");
  int status = inChild([&] {
    Error e = writeOutput(path("f.txt"), [&](std::FILE *file) {
      std::fputs("partial", file);
      std::fflush(file);
      abandonOutputInProgress();
      ::_exit(0);
      return true;
    });
    return 1;
  });
  EXPECT_EQ(status, 0);
  EXPECT_EQ(readFile(path("f.txt")), "old");
  EXPECT_EQ(listDir(), std::vector<std::string>{"f.txt"});
}

// Permissions do not bind root, which CI runs as: there the check runs in a child process that
// has dropped to the unprivileged user nobody (setgroups, setgid, setuid, as setpriv does), on a
// folder that nobody owns.
TEST_F(OutputTest, UnwritableDirectoryFailsCleanly) {
  writeFile(path("f.txt"), "old");
  constexpr uid_t kNobody = 65534;
  bool asRoot = ::geteuid() == 0;
  if (asRoot) {
    ASSERT_EQ(::chown(dir_.c_str(), kNobody, kNobody), 0);
    ASSERT_EQ(::chown(path("f.txt").c_str(), kNobody, kNobody), 0);
  }
  // Runs in the child when root: 0 when every expectation holds, else which one failed.
  auto check = [&]() -> int {
    if (::chmod(dir_.c_str(), 0500) != 0) return 1;
    Error e = writeOutput(path("f.txt"), std::string_view("new"));
    ::chmod(dir_.c_str(), 0700);
    if (!e || e.message().find("Permission denied") == std::string::npos) return 2;
    if (readFile(path("f.txt")) != "old") return 3;
    if (listDir() != std::vector<std::string>{"f.txt"}) return 4;
    return 0;
  };
  if (!asRoot) {
    EXPECT_EQ(check(), 0);
    return;
  }
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0)
      ::_exit(250);
    ::_exit(check());
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "check " << WEXITSTATUS(status) << " failed as nobody";
}

} // namespace
