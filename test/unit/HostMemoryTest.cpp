#include "runtime/HostMemory.h"

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>

using namespace dtnn::runtime;

TEST(HostMemoryTest, FormatBytes) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(1024), "1.0 KiB");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes(uint64_t(97.6 * 1024 * 1024)), "97.6 MiB");
  EXPECT_EQ(formatBytes(uint64_t(12) << 30), "12.0 GiB");
  EXPECT_EQ(formatBytes(uint64_t(3) << 40), "3.0 TiB");
  EXPECT_EQ(formatBytes(UINT64_MAX), "16.0 EiB");
}

TEST(HostMemoryTest, CheckFits) {
  EXPECT_FALSE(checkFits(100, 100, "it needs", "the test"));
  EXPECT_FALSE(checkFits(uint64_t(1) << 60, 0, "it needs", "the test")) << "0 is unknown";
  dtnn::Error e = checkFits(uint64_t(3) << 30, uint64_t(2) << 30, "model 'M' needs", "the test");
  ASSERT_TRUE(e);
  EXPECT_EQ(e.message(), "model 'M' needs 3.0 GiB, more than the 2.0 GiB of memory of the test");
}

TEST(HostMemoryTest, MemoryIsKnownAndBoundedByTheAddressSpaceLimit) {
  uint64_t total = hostMemoryBytes();
  EXPECT_GT(total, uint64_t(64) << 20) << "a machine that runs the tests has more than 64 MiB";
  rlimit rl{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &rl), 0);
  if (rl.rlim_cur != RLIM_INFINITY) {
    EXPECT_LE(total, uint64_t(rl.rlim_cur));
  }
}

TEST(HostMemoryTest, AllocationIsZeroedAndAligned) {
  for (size_t bytes : {size_t(0), size_t(1), size_t(63), size_t(64), size_t(1000)}) {
    auto *p = static_cast<unsigned char *>(allocateHostZeroed(bytes));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    for (size_t i = 0; i < (bytes + 63) / 64 * 64; ++i) ASSERT_EQ(p[i], 0) << bytes;
    std::free(p);
  }
  EXPECT_THROW(allocateHostZeroed(SIZE_MAX), std::bad_alloc);
  EXPECT_THROW(allocateHostZeroed(size_t(1) << 62), std::bad_alloc);
}
