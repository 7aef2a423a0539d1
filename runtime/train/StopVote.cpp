#include "runtime/train/StopVote.h"

#include "runtime/train/Interrupt.h"

namespace dtnn::runtime {

namespace {
constexpr int64_t kLowMask = 0x7fffffff;
} // namespace

std::string StopRequest::ranks() const {
  if (firstRank == lastRank) return "rank " + std::to_string(firstRank);
  return "ranks " + std::to_string(firstRank) + (lastRank == firstRank + 1 ? " and " : " to ") +
         std::to_string(lastRank);
}

StopVote::StopVote(std::unique_ptr<Communicator> channel) : channel_(std::move(channel)) {}

StopVote::~StopVote() { (void)settle(); }

Expected<StopRequest> StopVote::finish() {
  if (!inFlight_) return StopRequest{};
  inFlight_ = false;
  if (Error e = channel_->waitAllreduce(handle_)) return e;
  StopRequest r;
  r.signal = int(ballot_[0] >> 32);
  r.lastRank = int(ballot_[0] & kLowMask);
  r.firstRank = int(kLowMask - (ballot_[1] & kLowMask));
  return r;
}

Expected<StopRequest> StopVote::beforeStep() {
  int sig = StopBetweenSteps::caught();
  if (!channel_ || channel_->size() == 1) return StopRequest{sig, 0, 0};
  auto agreed = finish();
  if (!agreed || agreed->signal) return agreed;
  int64_t rank = channel_->rank();
  ballot_[0] = sig ? int64_t(sig) << 32 | rank : 0;
  ballot_[1] = sig ? int64_t(sig) << 32 | (kLowMask - rank) : 0;
  auto handle = channel_->startAllreduce(ballot_, 2, ir::DType::I64, ReduceOp::Max,
                                         "agreeing whether to stop (signals)");
  if (!handle) return handle.takeError();
  handle_ = *handle;
  inFlight_ = true;
  return StopRequest{};
}

Expected<StopRequest> StopVote::settle() {
  if (!channel_ || channel_->size() == 1) return StopRequest{StopBetweenSteps::caught(), 0, 0};
  return finish();
}

} // namespace dtnn::runtime
