#include "runtime/Communicator.h"

#include <cstring>
#include <unistd.h>

namespace dtnn::runtime {

Communicator::~Communicator() = default;

std::string Communicator::nodeName(int) const { return hostName(); }

Expected<std::unique_ptr<Communicator>> Communicator::split(int, const std::string &what) {
  return Error::make(what + ": this communicator cannot be split");
}

const char *algorithmName(Algorithm a) {
  return a == Algorithm::Hierarchical ? "hierarchical" : "flat";
}

Expected<Algorithm> parseAlgorithm(const std::string &name) {
  if (name == "flat") return Algorithm::Flat;
  if (name == "hierarchical") return Algorithm::Hierarchical;
  return Error::make("unknown allreduce algorithm '" + name + "' (flat or hierarchical)");
}

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || !name[0]) return "localhost";
  return name;
}

namespace {

template <typename T> void scale(void *data, size_t count, double by) {
  T *p = static_cast<T *>(data);
  T s = static_cast<T>(by);
  for (size_t i = 0; i < count; ++i) p[i] *= s;
}

class LocalCommunicator final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Error broadcast(void *, size_t, int, const std::string &) override { return Error::success(); }
  Expected<std::unique_ptr<Communicator>> duplicate() override {
    return std::unique_ptr<Communicator>(new LocalCommunicator);
  }
  Expected<std::unique_ptr<Communicator>> split(int color, const std::string &) override {
    if (color < 0) return std::unique_ptr<Communicator>();
    return duplicate();
  }
  Error allgather(const void *in, size_t bytes, void *out, const std::string &) override {
    if (bytes) std::memcpy(out, in, bytes);
    return Error::success();
  }

protected:
  Error reduce(void *, size_t, ir::DType, ReduceOp, const std::string &, Algorithm) override {
    return Error::success();
  }
};

class SkippingCommunicator final : public Communicator {
public:
  explicit SkippingCommunicator(Communicator &real) : real_(real) {}
  int rank() const override { return real_.rank(); }
  int size() const override { return real_.size(); }
  int nodeCount() const override { return real_.nodeCount(); }
  int nodeOf(int rank) const override { return real_.nodeOf(rank); }
  std::string nodeName(int rank) const override { return real_.nodeName(rank); }
  Error broadcast(void *, size_t, int, const std::string &) override { return Error::success(); }
  Error allgather(const void *in, size_t bytes, void *out, const std::string &what) override {
    return real_.allgather(in, bytes, out, what);
  }
  Expected<std::unique_ptr<Communicator>> duplicate() override {
    return std::unique_ptr<Communicator>(new SkippingCommunicator(real_));
  }
  void abortJob(int status) override { real_.abortJob(status); }

protected:
  Error reduce(void *, size_t, ir::DType, ReduceOp, const std::string &, Algorithm) override {
    return Error::success();
  }

private:
  Communicator &real_;
};

} // namespace

Error Communicator::allreduce(void *data, size_t count, ir::DType dtype, ReduceOp op,
                              const std::string &what, double factor, Algorithm algorithm) {
  if (Error e = scaleData(data, count, dtype, factor)) return e;
  return reduce(data, count, dtype, op, what, algorithm);
}

Error Communicator::scaleData(void *data, size_t count, ir::DType dtype, double factor) {
  if (factor == 1.0)
    ; // nothing to scale
  else if (dtype == ir::DType::F32)
    scale<float>(data, count, factor);
  else if (dtype == ir::DType::F64)
    scale<double>(data, count, factor);
  else
    return Error::make("only floating-point data is scaled, got " +
                       std::string(ir::dtypeName(dtype)));
  return Error::success();
}

Expected<uint64_t> Communicator::startAllreduce(void *data, size_t count, ir::DType dtype,
                                               ReduceOp op, const std::string &what,
                                               double factor, Algorithm algorithm) {
  if (Error e = scaleData(data, count, dtype, factor)) return e;
  return startReduce(data, count, dtype, op, what, algorithm);
}

Expected<uint64_t> Communicator::startReduce(void *data, size_t count, ir::DType dtype,
                                             ReduceOp op, const std::string &what,
                                             Algorithm algorithm) {
  if (Error e = reduce(data, count, dtype, op, what, algorithm)) return e;
  return uint64_t(0);
}

Error Communicator::waitAllreduce(uint64_t) { return Error::success(); }

Error sumOverRanks(Communicator &comm, std::vector<double> &values, const std::string &what) {
  if (comm.size() == 1 || values.empty()) return Error::success();
  return comm.allreduce(values.data(), values.size(), ir::DType::F64, ReduceOp::Sum, what);
}

std::unique_ptr<Communicator> makeLocalCommunicator() {
  return std::make_unique<LocalCommunicator>();
}

std::unique_ptr<Communicator> makeSkippingCommunicator(Communicator &real) {
  return std::make_unique<SkippingCommunicator>(real);
}

} // namespace dtnn::runtime
