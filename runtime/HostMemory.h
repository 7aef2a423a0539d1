// Host memory: zero-filled aligned allocations, how much memory the process
// may use, and byte counts as people read them.
#pragma once

#include "ir/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace dtnn::runtime {

// Zero-filled storage of at least `bytes` (one cache line when 0), aligned to
// 64 bytes; release it with std::free. Throws std::bad_alloc when the system
// refuses.
void *allocateHostZeroed(size_t bytes);

// The memory this process may use: the least of physical memory, the
// control group's limit, the address-space limit (ulimit -v) and the data
// limit (ulimit -d). Never 0.
uint64_t hostMemoryBytes();

// The address space this process maps now (VmSize): code, data, stacks,
// and reservations that hold no memory yet.
uint64_t mappedBytes();
// The part of it that the data limit (ulimit -d) counts (VmData): private
// writable mappings, such as the heap, thread stacks and generated code.
uint64_t dataBytes();

// The address space left under this process's limit (ulimit -v): the limit
// less what is mapped now (mappedBytes); UINT64_MAX when there is no limit.
uint64_t addressSpaceLeft();

// "512 B", "1.5 KiB", "97.6 MiB", "12.0 GiB".
std::string formatBytes(uint64_t bytes);

// Fails when `bytes` more than `capacity` (0: unknown, never fails); `what`
// says what needs them, `where` whose memory it is: "LeNet's parameters need
// 12.0 GiB, more than the 7.8 GiB of memory of the reference backend".
Error checkFits(uint64_t bytes, uint64_t capacity, const std::string &what,
                const std::string &where);

} // namespace dtnn::runtime
