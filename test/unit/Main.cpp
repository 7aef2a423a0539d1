// The unit tests' main: registers dtnn's built-in entries, as the drivers do,
// before GoogleTest runs the tests.
#include "dtnn/Registry.h"

#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (dtnn::Error e = dtnn::registerBuiltins()) {
    std::fprintf(stderr, "error: %s\n", e.message().c_str());
    return 1;
  }
  return RUN_ALL_TESTS();
}
