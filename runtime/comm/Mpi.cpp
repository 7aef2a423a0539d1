#include "runtime/comm/Mpi.h"

#include "runtime/ResourceLimits.h"
#include "runtime/comm/Watchdog.h"

#include <mpi.h>
#include <sched.h>


#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <vector>
#include <cstdlib>
#include <iostream>

namespace dtnn::runtime {

bool launchedByMpi() {
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

namespace {

// Descriptors a rank needs besides those open at start: Open MPI 4.1 holds 12
// after MPI_Init on one node, whatever the rank count, and opens one more on
// the way; dtnn reads a data file or writes a checkpoint at a time; and a
// margin.
constexpr uint64_t kMpiFiles = 20;

// The address space MPI_Init maps under an address-space limit (so with one
// malloc arena): Open MPI 4.1 on one node took 75 MiB with 2 local ranks and
// 83 MiB with 4 (its plugins, progress threads, and a shared-memory segment
// per local rank), counted here as 72 MiB and 4 MiB a local rank.
SpaceNeed mpiSpaceNeed() {
  int64_t local = 1;
  if (const char *v = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) local = std::max(1LL, std::atoll(v));
  SpaceNeed need{"starting Open MPI", {}};
  need.add("its libraries, threads and the shared memory of " + std::to_string(local) +
               (local == 1 ? " local rank" : " local ranks"),
           (uint64_t(72) << 20) + uint64_t(local) * (uint64_t(4) << 20));
  return need;
}

// What every communicator of the job shares: MPI stays initialized, and the
// watchdog running, as long as one of them lives.
struct MpiWorld {
  int rank = 0, size = 1;
  std::unique_ptr<Watchdog> watchdog;
  ~MpiWorld() {
    watchdog.reset();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
};

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

Expected<MPI_Datatype> mpiType(ir::DType t) {
  switch (t) {
  case ir::DType::F32: return MPI_FLOAT;
  case ir::DType::F64: return MPI_DOUBLE;
  case ir::DType::I32: return MPI_INT32_T;
  case ir::DType::I64: return MPI_INT64_T;
  case ir::DType::U8: return MPI_UINT8_T;
  default: return Error::make("MPI cannot reduce " + std::string(ir::dtypeName(t)) + " data");
  }
}

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(std::shared_ptr<MpiWorld> world, MPI_Comm comm)
      : world_(std::move(world)), comm_(comm) {}
  ~MpiCommunicator() override { MPI_Comm_free(&comm_); }
  int rank() const override { return world_->rank; }
  int size() const override { return world_->size; }

  Error broadcast(void *data, size_t bytes, int root, const std::string &what) override {
    Watchdog::Scope scope(*world_->watchdog, what);
    auto *p = static_cast<char *>(data);
    for (size_t done = 0; done < bytes;) {
      int n = static_cast<int>(std::min<size_t>(bytes - done, INT_MAX));
      if (int rc = MPI_Bcast(p + done, n, MPI_BYTE, root, comm_); rc != MPI_SUCCESS)
        return fail(what, rc);
      done += static_cast<size_t>(n);
    }
    return Error::success();
  }

  Error allgather(const void *in, size_t bytes, void *out, const std::string &what) override {
    if (bytes > INT_MAX) return Error::make(what + ": " + std::to_string(bytes) + " bytes is too many to gather");
    Watchdog::Scope scope(*world_->watchdog, what);
    int rc = MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes),
                           MPI_BYTE, comm_);
    return rc == MPI_SUCCESS ? Error::success() : fail(what, rc);
  }

  Expected<std::unique_ptr<Communicator>> duplicate() override {
    MPI_Comm dup;
    Watchdog::Scope scope(*world_->watchdog, "creating a communication channel");
    if (int rc = MPI_Comm_dup(comm_, &dup); rc != MPI_SUCCESS) return fail("MPI_Comm_dup", rc);
    return std::unique_ptr<Communicator>(new MpiCommunicator(world_, dup));
  }

  void abortJob(int status) override {
    std::cout << std::flush;
    std::cerr << std::flush;
    MPI_Abort(MPI_COMM_WORLD, status);
  }

protected:
  Error reduce(void *data, size_t count, ir::DType dtype, ReduceOp op,
               const std::string &what) override {
    auto h = startReduce(data, count, dtype, op, what);
    if (!h) return h.takeError();
    return waitAllreduce(*h);
  }

  // MPI_Iallreduce, in pieces of at most INT_MAX elements.
  Expected<uint64_t> startReduce(void *data, size_t count, ir::DType dtype, ReduceOp op,
                                 const std::string &what) override {
    auto type = mpiType(dtype);
    if (!type) return type.takeError();
    MPI_Op mop = op == ReduceOp::Max ? MPI_MAX : MPI_SUM;
    Pending p;
    p.what = what;
    auto *bytes = static_cast<char *>(data);
    size_t elem = ir::dtypeSize(dtype);
    for (size_t done = 0; done < count;) {
      int n = static_cast<int>(std::min<size_t>(count - done, INT_MAX));
      MPI_Request req;
      if (int rc = MPI_Iallreduce(MPI_IN_PLACE, bytes + done * elem, n, *type, mop, comm_, &req);
          rc != MPI_SUCCESS)
        return fail(what, rc);
      p.requests.push_back(req);
      done += static_cast<size_t>(n);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t id = nextId_++;
    pending_[id] = std::move(p);
    world_->watchdog->inFlight(+1);
    return id;
  }

public:
  // Tests until done, yielding the core between tests: a rank often has one
  // core, which its other threads need while the other ranks catch up (a
  // blocking MPI_Wait would spin on it). Only the wait counts against the
  // timeout: the time between start and wait is the rank's own compute.
  Error waitAllreduce(uint64_t id) override {
    Pending p;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return Error::success();
      p = std::move(it->second);
      pending_.erase(it);
    }
    Error result;
    {
      Watchdog::Scope scope(*world_->watchdog, p.what);
      for (int flag = 0;;) {
        int rc = MPI_Testall(static_cast<int>(p.requests.size()), p.requests.data(), &flag,
                             MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
          result = fail(p.what, rc);
          break;
        }
        if (flag) break;
        sched_yield();
      }
    }
    world_->watchdog->inFlight(-1);
    return result;
  }

  // One test drives Open MPI's progress engine for every pending request.
  void progress() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pending_.empty()) return;
    Pending &p = pending_.begin()->second;
    int flag = 0;
    MPI_Testall(static_cast<int>(p.requests.size()), p.requests.data(), &flag,
                MPI_STATUSES_IGNORE);
  }

private:
  Error fail(const std::string &what, int rc) const {
    return Error::make(what + " failed: " + mpiError(rc));
  }

  struct Pending {
    std::vector<MPI_Request> requests;
    std::string what;
  };
  std::shared_ptr<MpiWorld> world_;
  MPI_Comm comm_;
  std::mutex mutex_;
  std::map<uint64_t, Pending> pending_;
  uint64_t nextId_ = 1;
};

} // namespace

Expected<std::unique_ptr<Communicator>> makeMpiCommunicator(const MpiOptions &opts) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return Error::make("MPI is already initialized");
  // Open MPI's non-blocking collectives pick a binomial allreduce for few
  // ranks, which sends the whole buffer each way: the ring, which the cost
  // model assumes, moves half as much (8 MiB on two ranks: 6.5 ms against
  // 2.7 ms here). A setting in the environment wins.
  setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "ring", 0);
  // Open MPI exits (libevent, MPI_ERRORS_ARE_FATAL) or crashes (PMIx) in
  // MPI_Init when a descriptor or a mapping is refused.
  if (Error e = checkOpenFiles(kMpiFiles, "starting Open MPI (its pipes, sockets and event "
                                          "queues) and reading the data"))
    return e;
  if (Error e = checkAddressSpace(mpiSpaceNeed(), "")) return e;
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    return Error::make("MPI_Init_thread failed");
  auto world = std::make_shared<MpiWorld>();
  // Errors come back as return codes, and so as messages naming the collective.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &world->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world->size);
  if (provided < MPI_THREAD_MULTIPLE)
    return Error::make("this MPI library does not support MPI_THREAD_MULTIPLE, which dtnn needs "
                       "(reductions run on their own thread)");
  MPI_Comm control, data;
  MPI_Comm_dup(MPI_COMM_WORLD, &control);
  MPI_Comm_dup(MPI_COMM_WORLD, &data);
  world->watchdog = std::make_unique<Watchdog>(control, world->rank, world->size,
                                               opts.timeoutSeconds, opts.progressSeconds);
  return std::unique_ptr<Communicator>(new MpiCommunicator(world, data));
}

} // namespace dtnn::runtime
