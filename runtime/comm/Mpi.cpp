#include "runtime/comm/Mpi.h"

#include "runtime/ResourceLimits.h"
#include "runtime/comm/Watchdog.h"

#include <mpi.h>
#include <sched.h>


#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
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

// The pieces a hierarchical reduction is cut into, so that its stages
// overlap (a bucket of 1 MiB crosses the network in 8 messages a rank).
constexpr size_t kPieceBytes = size_t(128) << 10;

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

// Where the ranks of a communicator run: this rank, and per rank the name
// of its node (the name the machine gives itself); nodes are numbered in the
// order of their first ranks.
struct Topology {
  int rank = 0;
  std::vector<std::string> rankNodes;
  std::vector<int> nodeOf;
  std::vector<std::string> nodeNames;
  int size() const { return static_cast<int>(rankNodes.size()); }
  // Numbers the nodes of rankNodes.
  void number() {
    nodeOf.clear();
    nodeNames.clear();
    for (const std::string &n : rankNodes) {
      auto it = std::find(nodeNames.begin(), nodeNames.end(), n);
      nodeOf.push_back(static_cast<int>(it - nodeNames.begin()));
      if (it == nodeNames.end()) nodeNames.push_back(n);
    }
  }
  // Whether no lower rank shares this rank's node.
  bool firstOnNode() const {
    for (int r = 0; r < rank; ++r)
      if (nodeOf[static_cast<size_t>(r)] == nodeOf[static_cast<size_t>(rank)]) return false;
    return true;
  }
};

// The world's topology, from the names the ranks give their machines
// (MPI_Get_processor_name: the host name).
Expected<Topology> findNodes(int rank, int size) {
  char mine[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(mine, &len);
  std::vector<char> all(static_cast<size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  if (int rc = MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(),
                             MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
      rc != MPI_SUCCESS)
    return Error::make("finding the ranks' nodes failed: " + mpiError(rc));
  Topology t;
  t.rank = rank;
  for (int r = 0; r < size; ++r) {
    const char *name = all.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    t.rankNodes.emplace_back(name, strnlen(name, MPI_MAX_PROCESSOR_NAME));
  }
  t.number();
  return t;
}

// One channel: its communicator, and for hierarchical reductions on several
// nodes, its ranks of this node and (on a node's first rank) the first
// ranks of all nodes.
struct Channel {
  MPI_Comm all = MPI_COMM_NULL, node = MPI_COMM_NULL, leaders = MPI_COMM_NULL,
           nodeBcast = MPI_COMM_NULL;
};

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(std::shared_ptr<MpiWorld> world, Topology topo, Channel channel)
      : world_(std::move(world)), topo_(std::move(topo)), ch_(channel) {
    // Hierarchical reductions move on between kernels, in waits, and on the
    // watchdog's ticks.
    if (ch_.node != MPI_COMM_NULL) world_->watchdog->onTick(this, [this] { progress(); });
  }
  ~MpiCommunicator() override {
    if (ch_.node != MPI_COMM_NULL) world_->watchdog->onTick(this, {});
    for (MPI_Comm *c : {&ch_.nodeBcast, &ch_.leaders, &ch_.node, &ch_.all})
      if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
  }
  int rank() const override { return topo_.rank; }
  int size() const override { return topo_.size(); }
  int nodeCount() const override { return static_cast<int>(topo_.nodeNames.size()); }
  int nodeOf(int rank) const override { return topo_.nodeOf.at(static_cast<size_t>(rank)); }
  std::string nodeName(int rank) const override {
    return topo_.rankNodes.at(static_cast<size_t>(rank));
  }

  // A channel over the ranks of `base`, whose topology is `t` (a collective
  // call on every rank of base).
  static Expected<Channel> makeChannel(const Topology &t, MPI_Comm base) {
    Channel c;
    if (int rc = MPI_Comm_dup(base, &c.all); rc != MPI_SUCCESS)
      return Error::make("MPI_Comm_dup failed: " + mpiError(rc));
    if (t.nodeNames.size() == 1) return c;
    if (int rc = MPI_Comm_split(c.all, t.nodeOf[static_cast<size_t>(t.rank)], t.rank, &c.node);
        rc != MPI_SUCCESS)
      return Error::make("MPI_Comm_split failed: " + mpiError(rc));
    if (int rc = MPI_Comm_dup(c.node, &c.nodeBcast); rc != MPI_SUCCESS)
      return Error::make("MPI_Comm_dup failed: " + mpiError(rc));
    if (int rc = MPI_Comm_split(c.all, t.firstOnNode() ? 0 : MPI_UNDEFINED, t.rank, &c.leaders);
        rc != MPI_SUCCESS)
      return Error::make("MPI_Comm_split failed: " + mpiError(rc));
    return c;
  }

  Expected<std::unique_ptr<Communicator>> split(int color, const std::string &what) override {
    Watchdog::Scope scope(*world_->watchdog, what);
    MPI_Comm sub;
    if (int rc = MPI_Comm_split(ch_.all, color < 0 ? MPI_UNDEFINED : color, topo_.rank, &sub);
        rc != MPI_SUCCESS)
      return fail(what, rc);
    if (sub == MPI_COMM_NULL) return std::unique_ptr<Communicator>();
    // The new communicator's ranks, as ranks of this one, give its topology.
    int n = 0, me = 0;
    MPI_Comm_size(sub, &n);
    MPI_Comm_rank(sub, &me);
    std::vector<int> mine(static_cast<size_t>(n)), ours(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) mine[static_cast<size_t>(i)] = i;
    MPI_Group g, gs;
    MPI_Comm_group(ch_.all, &g);
    MPI_Comm_group(sub, &gs);
    MPI_Group_translate_ranks(gs, n, mine.data(), g, ours.data());
    MPI_Group_free(&gs);
    MPI_Group_free(&g);
    Topology t;
    t.rank = me;
    for (int r : ours) t.rankNodes.push_back(topo_.rankNodes.at(static_cast<size_t>(r)));
    t.number();
    auto c = makeChannel(t, sub);
    MPI_Comm_free(&sub);
    if (!c) return c.takeError();
    return std::unique_ptr<Communicator>(new MpiCommunicator(world_, std::move(t), *c));
  }

  Error broadcast(void *data, size_t bytes, int root, const std::string &what) override {
    Watchdog::Scope scope(*world_->watchdog, what);
    auto *p = static_cast<char *>(data);
    for (size_t done = 0; done < bytes;) {
      int n = static_cast<int>(std::min<size_t>(bytes - done, INT_MAX));
      if (int rc = MPI_Bcast(p + done, n, MPI_BYTE, root, ch_.all); rc != MPI_SUCCESS)
        return fail(what, rc);
      done += static_cast<size_t>(n);
    }
    return Error::success();
  }

  Error allgather(const void *in, size_t bytes, void *out, const std::string &what) override {
    if (bytes > INT_MAX) return Error::make(what + ": " + std::to_string(bytes) + " bytes is too many to gather");
    Watchdog::Scope scope(*world_->watchdog, what);
    int rc = MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes),
                           MPI_BYTE, ch_.all);
    return rc == MPI_SUCCESS ? Error::success() : fail(what, rc);
  }

  Expected<std::unique_ptr<Communicator>> duplicate() override {
    Watchdog::Scope scope(*world_->watchdog, "creating a communication channel");
    auto c = makeChannel(topo_, ch_.all);
    if (!c) return c.takeError();
    return std::unique_ptr<Communicator>(new MpiCommunicator(world_, topo_, *c));
  }

  void abortJob(int status) override {
    std::cout << std::flush;
    std::cerr << std::flush;
    MPI_Abort(MPI_COMM_WORLD, status);
  }

protected:
  Error reduce(void *data, size_t count, ir::DType dtype, ReduceOp op, const std::string &what,
               Algorithm algorithm) override {
    auto h = startReduce(data, count, dtype, op, what, algorithm);
    if (!h) return h.takeError();
    return waitAllreduce(*h);
  }

  // Posts the first stage at once: MPI_Iallreduce (flat), or MPI_Ireduce
  // within the node (hierarchical, on several nodes).
  Expected<uint64_t> startReduce(void *data, size_t count, ir::DType dtype, ReduceOp op,
                                 const std::string &what, Algorithm algorithm) override {
    auto type = mpiType(dtype);
    if (!type) return type.takeError();
    bool hierarchical = algorithm == Algorithm::Hierarchical && ch_.node != MPI_COMM_NULL;
    size_t elem = ir::dtypeSize(dtype);
    // A hierarchical reduction goes in pieces, so that its stages overlap:
    // one piece crosses the network while the next is reduced within the node.
    size_t piece = hierarchical ? std::max<size_t>(1, kPieceBytes / elem) : count;
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t group = nextId_;
    size_t pieces = count == 0 ? 1 : (count + piece - 1) / piece;
    for (size_t k = 0, at = 0; k < pieces; ++k, at += piece) {
      Pending p;
      p.what = what;
      p.group = group;
      p.data = static_cast<char *>(data) + at * elem;
      p.count = std::min(piece, count - at);
      p.elem = elem;
      p.type = *type;
      p.op = op == ReduceOp::Max ? MPI_MAX : MPI_SUM;
      p.hierarchical = hierarchical;
      p.stages = hierarchical ? std::vector<Stage>{Stage::NodeReduce, Stage::LeadersAllreduce,
                                                   Stage::NodeBroadcast}
                              : std::vector<Stage>{Stage::Allreduce};
      pending_[nextId_++] = std::move(p);
    }
    world_->watchdog->inFlight(+1);
    advanceAll();
    Error first;
    for (auto it = pending_.find(group); it != pending_.end() && it->second.group == group; ++it)
      if (it->second.error && !first) first = std::move(it->second.error);
    if (first) {
      eraseGroup(group);
      world_->watchdog->inFlight(-1);
      return first;
    }
    return group;
  }

public:
  // Advances every reduction until this one is done, yielding the core
  // between tests: a rank often has one core, which its other threads need
  // while the other ranks catch up (a blocking MPI_Wait would spin on it).
  // Only the wait counts against the timeout: the time between start and
  // wait is the rank's own compute.
  Error waitAllreduce(uint64_t id) override {
    Error result;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return Error::success();
      Watchdog::Scope scope(*world_->watchdog, it->second.what);
      for (;;) {
        advanceAll();
        bool done = true;
        for (it = pending_.find(id); it != pending_.end() && it->second.group == id; ++it) {
          if (it->second.error && !result) result = std::move(it->second.error);
          done = done && it->second.next == it->second.stages.size();
        }
        if (done || result) break;
        lock.unlock();
        sched_yield();
        lock.lock();
      }
      eraseGroup(id);
    }
    world_->watchdog->inFlight(-1);
    return result;
  }

  // One test drives Open MPI's progress engine for every pending request,
  // and moves hierarchical reductions on to their next stages.
  void progress() override {
    std::lock_guard<std::mutex> lock(mutex_);
    advanceAll();
  }

private:
  Error fail(const std::string &what, int rc) const {
    return Error::make(what + " failed: " + mpiError(rc));
  }

  // Each stage of a hierarchical reduction has a communicator of its own
  // (node, leaders, nodeBcast), on which every rank posts the stage of each
  // reduction in the order the reductions started, as MPI requires of
  // collectives on one communicator.
  enum class Stage { Allreduce, NodeReduce, LeadersAllreduce, NodeBroadcast };
  struct Pending {
    std::string what;
    uint64_t group = 0; // the id of the reduction's first piece
    char *data = nullptr;
    size_t count = 0, elem = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_SUM;
    bool hierarchical = false;
    std::vector<Stage> stages;
    size_t next = 0;     // the stage in progress (stages.size(): done)
    bool posted = false; // whether its requests are posted
    std::vector<MPI_Request> requests;
    Error error;         // what failed, for the wait
    // Stages posted or done.
    size_t front() const { return next + (posted ? 1 : 0); }
  };

  // Forgets the pieces of reduction `group` (a piece whose requests are
  // still posted, after an error, is left to MPI to end with the job).
  void eraseGroup(uint64_t group) {
    auto it = pending_.find(group);
    while (it != pending_.end() && it->second.group == group) it = pending_.erase(it);
  }

  // Moves every reduction on, in the order they started: tests the posted
  // stages, and posts a reduction's next stage once every reduction started
  // before it (of its kind) has posted that stage.
  void advanceAll() {
    size_t limit[2] = {SIZE_MAX, SIZE_MAX}; // flat, hierarchical: the stages all earlier posted
    for (auto &[id, p] : pending_) {
      size_t &lim = limit[p.hierarchical ? 1 : 0];
      while (!p.error && p.next < p.stages.size()) {
        if (!p.posted) {
          if (p.next >= lim) break;
          p.error = postStage(p);
          p.posted = true;
          continue;
        }
        int flag = 0;
        if (int rc = MPI_Testall(static_cast<int>(p.requests.size()), p.requests.data(), &flag,
                                 MPI_STATUSES_IGNORE);
            rc != MPI_SUCCESS)
          p.error = fail(p.what, rc);
        if (!flag) break;
        p.requests.clear();
        p.posted = false;
        ++p.next;
      }
      lim = std::min(lim, p.error ? p.stages.size() : p.front());
    }
  }

  // Posts the requests of p's current stage, in pieces of at most INT_MAX
  // elements (none where this rank takes no part: a node's other ranks in
  // LeadersAllreduce).
  Error postStage(Pending &p) {
    Stage stage = p.stages[p.next];
    if (stage == Stage::LeadersAllreduce && ch_.leaders == MPI_COMM_NULL) return Error::success();
    int nodeRank = 0;
    if (stage == Stage::NodeReduce) MPI_Comm_rank(ch_.node, &nodeRank);
    bool root = nodeRank == 0;
    for (size_t done = 0; done < p.count;) {
      int n = static_cast<int>(std::min<size_t>(p.count - done, INT_MAX));
      char *at = p.data + done * p.elem;
      MPI_Request req;
      int rc = MPI_SUCCESS;
      switch (stage) {
      case Stage::Allreduce:
        rc = MPI_Iallreduce(MPI_IN_PLACE, at, n, p.type, p.op, ch_.all, &req);
        break;
      case Stage::NodeReduce:
        rc = MPI_Ireduce(root ? MPI_IN_PLACE : at, root ? at : nullptr, n, p.type, p.op, 0,
                         ch_.node, &req);
        break;
      case Stage::LeadersAllreduce:
        rc = MPI_Iallreduce(MPI_IN_PLACE, at, n, p.type, p.op, ch_.leaders, &req);
        break;
      case Stage::NodeBroadcast:
        rc = MPI_Ibcast(at, n, p.type, 0, ch_.nodeBcast, &req);
        break;
      }
      if (rc != MPI_SUCCESS) return fail(p.what, rc);
      p.requests.push_back(req);
      done += static_cast<size_t>(n);
    }
    return Error::success();
  }

  std::shared_ptr<MpiWorld> world_;
  Topology topo_;
  Channel ch_;
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
  auto topo = findNodes(world->rank, world->size);
  if (!topo) return topo.takeError();
  MPI_Comm control;
  MPI_Comm_dup(MPI_COMM_WORLD, &control);
  auto data = MpiCommunicator::makeChannel(*topo, MPI_COMM_WORLD);
  if (!data) return data.takeError();
  world->watchdog = std::make_unique<Watchdog>(
      control, world->rank, world->size,
      topo->nodeNames.size() > 1 ? topo->rankNodes : std::vector<std::string>(),
      opts.timeoutSeconds, opts.progressSeconds, opts.slowdownFactor);
  return std::unique_ptr<Communicator>(new MpiCommunicator(world, std::move(*topo), *data));
}

} // namespace dtnn::runtime
