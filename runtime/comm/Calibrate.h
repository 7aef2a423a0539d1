// Measures how long allreduces of growing sizes take on the ranks of a
// communicator (`dtnn-run --calibrate`), for fitting the α-β network model
// that bucket-allreduce uses.
#pragma once

#include "runtime/Communicator.h"

#include <vector>

namespace dtnn::runtime {

struct AllreduceTiming {
  double bytes = 0;
  double seconds = 0; // the fastest of the repetitions
};

// Times f32 sum allreduces from 4 KiB to `maxBytes`, each size repeated
// `repeats` times after two warm-up runs; every rank takes part and gets
// rank 0's figures.
Expected<std::vector<AllreduceTiming>> timeAllreduces(Communicator &comm, double maxBytes,
                                                      int repeats);

// The share of a reduction's time that the ranks' cores spend moving it (NetModel::hostShare):
// every rank runs the same work on its core alone, then with a reduction of about half that
// time in flight (moved on by the communicator's own thread, as in training); the work's
// slowdown over the reduction's time alone, 0 to 1, the largest of the ranks'.
// `secondsPerByte`: a large reduction's time per byte, which sizes it.
Expected<double> timeHostShare(Communicator &comm, double secondsPerByte);

} // namespace dtnn::runtime
