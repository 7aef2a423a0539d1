// The resource limits a run checks before it meets them, so that it ends
// with a message naming the limit instead of dying inside a library.
//
// The address space (ulimit -v, and ulimit -d, which counts the private
// writable part of it): what runs out first is not always an allocation that
// reports it. libgomp exits the process when it cannot start
// a thread, and oneDNN's code generator writes through the null pointer of a
// code buffer it could not map (SIGSEGV). So each part that would meet those
// (the thread pool, the binding of a plan's kernels) is estimated and checked
// against what the limit leaves before it starts.
//
// Threads (ulimit -u) and open files (ulimit -n): libgomp exits, and Open
// MPI's MPI_Init exits or crashes, when the system refuses a thread or a
// descriptor; their needs are checked before they start.
#pragma once

#include "ir/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn::runtime {

// Room every check leaves free on top of its estimate: for what libraries
// allocate on their own (oneDNN's primitive descriptors and code of kernels
// that a plan does not count, Open MPI's buffers), for threads that allocate
// while a plan is bound (the data loader), and for an estimate that comes out
// low. It is twice the most code one oneDNN primitive was measured to map.
inline constexpr uint64_t kAddressSpaceMargin = uint64_t(24) << 20;

// Makes malloc keep to its main arena when the process has an address-space
// limit. glibc reserves 64 MiB of address space for each further arena, which
// it makes for threads that allocate at the same time (up to 8 per CPU); how
// many depends on timing, so the same run fitted one limit and crashed under a
// larger one. One arena costs little here: the hot loops allocate nothing.
// Call it first in main, before any thread starts.
void keepMallocInOneArena();

// The address-space limit (ulimit -v), or UINT64_MAX when there is none.
uint64_t addressSpaceLimit();

// A limit on what the process maps, and the room it leaves now.
struct MappingLimit {
  std::string name;            // "the address-space limit (ulimit -v)"
  uint64_t limit = UINT64_MAX; // UINT64_MAX: none
  uint64_t left = UINT64_MAX;
};
// The tighter of the address-space limit (ulimit -v, which counts every
// mapping) and the data limit (ulimit -d, which counts private writable
// ones: the heap, thread stacks, generated code; dataBytes); the one that
// leaves less. Its limit is UINT64_MAX when neither is set.
MappingLimit mappingLimit();

// The stack a thread started now gets: pthread's default, which the stack
// limit (ulimit -s) sets.
uint64_t threadStackBytes();
// The stack of an OpenMP thread: OMP_STACKSIZE or GOMP_STACKSIZE when set
// (a size with an optional B, K, M or G suffix, K by default), else
// threadStackBytes().
uint64_t openmpStackBytes();
// Parses an OMP_STACKSIZE value; 0 when malformed.
uint64_t parseOpenmpStackSize(const std::string &text);

// One part of what something needs: what it is and its bytes.
struct SpacePart {
  std::string what;
  uint64_t bytes = 0;
};

// What something needs, by part: "the eval step of LeNet at batch 64" needs
// its kernels' generated code, its values and its inputs.
struct SpaceNeed {
  std::string who;
  std::vector<SpacePart> parts;
  // What is in use already that the reader may not expect, said
  // after what the limit leaves: "52.4 MiB of it for the data set".
  std::string note;

  // Adds a part; one of 0 bytes is left out.
  void add(std::string what, uint64_t bytes);
  uint64_t total() const;
  // "15.5 MiB of oneDNN's generated code, 4.0 MiB of values"; "" when empty.
  std::string str() const;
};

// Fails when `need` and `margin` take more than the room `limit` leaves
// (never without a limit). `advice` follows "raise the limit" in the
// message, e.g. "or use a smaller batch".
Error checkAddressSpace(const SpaceNeed &need, const MappingLimit &limit,
                        const std::string &advice, uint64_t margin = kAddressSpaceMargin);
// The same against what the process's limits leave now (mappingLimit).
Error checkAddressSpace(const SpaceNeed &need, const std::string &advice,
                        uint64_t margin = kAddressSpaceMargin);

// The threads the limit of processes (ulimit -u) leaves this process's user:
// the limit less the threads of all the user's processes, which the kernel
// counts together. UINT64_MAX without a limit, and for root, whom the kernel
// does not hold to it.
uint64_t threadsLeft();

// Fails, before the thread pool starts, when the limit of processes leaves
// fewer threads, or the address-space limit too little room for the stacks,
// than the pool's threads besides the calling one and the `otherThreads`
// the run starts later (data loaders, queues) need. libgomp starts its
// threads at the first parallel region and exits the process when it cannot.
Error checkThreadRoom(int poolThreads, int otherThreads);

// The descriptors the open-file limit (ulimit -n) leaves: the limit less
// those open now. UINT64_MAX without a limit.
uint64_t openFilesLeft();

// Fails when the open-file limit leaves fewer than `files` descriptors for
// `who` ("starting Open MPI").
Error checkOpenFiles(uint64_t files, const std::string &who);

} // namespace dtnn::runtime
