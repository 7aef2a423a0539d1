#include "runtime/Arena.h"

namespace dtnn::runtime {

Arena::~Arena() {
  if (base_) backend_.release(base_);
}

void Arena::reserve(uint64_t bytes) {
  if (bytes <= bytes_ && base_) return;
  if (base_) backend_.release(base_);
  base_ = nullptr;
  bytes_ = 0;
  base_ = static_cast<char *>(backend_.allocate(bytes ? bytes : 64));
  bytes_ = bytes;
  ++generation_;
}

} // namespace dtnn::runtime
