// dtnn::Error and Expected<T>: an unchecked failure aborts when checks are on; a checked one, and
// success, do not. Also the location, notes and diagnostic-style text of an Error.
#include "dtnn/Error.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

using dtnn::consumeError;
using dtnn::Error;
using dtnn::Expected;
using dtnn::SourceLoc;

namespace {

static_assert(DTNN_ERROR_CHECKS, "this test needs the checks on");

constexpr const char *kUnchecked = "an Error was destroyed without being checked: boom";

Error fail() { return Error::make("boom"); }
Error succeed() { return Error::success(); }
Expected<int> failValue() { return Error::make("boom"); }

// Tests a failure and passes it on: the caller must check it again.
Error forward() {
  Error e = fail();
  if (e) return e;
  return Error::success();
}

TEST(ErrorDeathTest, UncheckedFailureAborts) {
  EXPECT_DEATH({ Error e = fail(); }, kUnchecked);
  EXPECT_DEATH((void)fail(), kUnchecked);
}

TEST(ErrorDeathTest, AssigningOverAnUncheckedFailureAborts) {
  EXPECT_DEATH(
      {
        Error e = fail();
        e = succeed();
      },
      kUnchecked);
}

TEST(ErrorDeathTest, MovedFailureMustBeCheckedAgain) {
  EXPECT_DEATH({ Error e = forward(); }, kUnchecked);
  EXPECT_TRUE(bool(forward()));
}

TEST(ErrorDeathTest, UncheckedExpectedFailureAborts) {
  EXPECT_DEATH({ Expected<int> v = failValue(); }, kUnchecked);
  EXPECT_DEATH(
      {
        Expected<int> v = failValue();
        Error taken = v.takeError();
      },
      kUnchecked);
}

TEST(Error, CheckedFailureDoesNotAbort) {
  Error e = fail();
  EXPECT_TRUE(bool(e));
  Error m = fail();
  EXPECT_EQ(m.message(), "boom");
  consumeError(fail());
  Error assigned = fail();
  ASSERT_TRUE(bool(assigned));
  assigned = succeed();
  EXPECT_FALSE(bool(assigned));
}

TEST(Error, SuccessNeedsNoCheck) {
  { Error e; }
  { Error e = succeed(); }
  { Expected<int> v = 3; }
  Expected<std::unique_ptr<int>> p = std::make_unique<int>(4);
  EXPECT_EQ(**p, 4);
  EXPECT_FALSE(bool(p.takeError()));
}

TEST(Error, CheckedExpectedFailureDoesNotAbort) {
  Expected<int> v = failValue();
  EXPECT_FALSE(bool(v));
  Expected<int> w = failValue();
  EXPECT_EQ(w.error().message(), "boom");
  Expected<int> x = failValue();
  Error taken = x.takeError();
  EXPECT_EQ(taken.message(), "boom");
}

TEST(Error, LocationNotesAndText) {
  Error e = Error::make(SourceLoc{"m.dtnn", 14, 9}, "shapes differ")
                .withNote("the left operand comes from here", SourceLoc{"m.dtnn", 12, 3})
                .withNote("try a 1x1 convolution");
  EXPECT_EQ(e.loc(), (SourceLoc{"m.dtnn", 14, 9}));
  ASSERT_EQ(e.notes().size(), 2u);
  EXPECT_EQ(e.notes()[1].message, "try a 1x1 convolution");
  EXPECT_EQ(e.format(), "m.dtnn:14:9: error: shapes differ\n"
                        "m.dtnn:12:3: note: the left operand comes from here\n"
                        "note: try a 1x1 convolution\n");
  EXPECT_EQ(Error::make("plain").format(), "error: plain\n");
  EXPECT_EQ(Error::success().format(), "");
}

} // namespace
