#include "runtime/Arena.h"

namespace dtnn::runtime {

Arena::~Arena() {
  if (base_) release(base_);
}

void *Arena::allocate(uint64_t bytes) {
  return space_ == backend_.memorySpace() ? backend_.allocate(bytes) : backend_.allocateHost(bytes);
}

void Arena::release(void *p) {
  if (space_ == backend_.memorySpace())
    backend_.release(p);
  else
    backend_.releaseHost(p);
}

void Arena::reserve(uint64_t bytes) {
  if (bytes <= bytes_ && base_) return;
  if (base_) release(base_);
  base_ = nullptr;
  bytes_ = 0;
  base_ = static_cast<char *>(allocate(bytes ? bytes : 64));
  bytes_ = bytes;
  ++generation_;
}

} // namespace dtnn::runtime
