// The cost model of data-parallel communication: how long an allreduce of n
// bytes takes on P ranks (latency α and bandwidth term β of a ring
// allreduce), and how long each op of a step computes (measured by
// `dtnn-run --profile-file`, else estimated from its multiply-accumulates and
// the bytes it touches). bucket-allreduce and the scaling simulator use it.
#pragma once

#include "ir/Error.h"
#include "ir/IR.h"

#include <map>
#include <string>
#include <vector>

namespace dtnn::passes {

// A network, α-β: a ring allreduce of n bytes over P ranks takes
// 2(P-1)·α + 2(P-1)/P·n·β seconds (each rank sends and receives 2(P-1)/P·n
// bytes in 2(P-1) messages).
struct NetModel {
  double alpha = 5e-6;        // seconds per message
  double beta = 1 / 12.5e9;   // seconds per byte (12.5 GB/s: 100 Gb/s)
  std::string source = "default: alpha 5 us, 12.5 GB/s per link";
  double allreduceSeconds(double bytes, int ranks) const;
};

// Reads a network file (`dtnn-run --calibrate` writes them): lines
// `alpha_s = X` and `beta_s_per_byte = Y`, `#` comments.
Expected<NetModel> readNetModel(const std::string &path);
// The text of a network file.
std::string formatNetModel(const NetModel &net, const std::string &comment);
// Fits T(n) = a + b·n to allreduce times measured on `ranks` ranks (least
// squares on relative errors) and turns a and b into α and β of the ring
// formula.
Expected<NetModel> fitNetModel(const std::vector<double> &bytes,
                               const std::vector<double> &seconds, int ranks);

// Seconds each op of `g` computes at `batch` samples, in op order;
// collectives take no compute time. The estimate takes the larger of
// 2·MACs / 50 GFLOP/s and bytes touched / 10 GB/s.
std::vector<double> estimateOpTimes(const ir::Graph &g, int64_t batch);

// An op profile (`dtnn-run --op-profile FILE`): the mean seconds of each
// kind of op of a train step, keyed by opKey (op, result types, location),
// so that it applies whatever order passes put the ops in; ops that share a
// key (a block called several times) share their mean.
struct OpProfile {
  std::string graph;
  int64_t batch = 0;
  std::map<std::string, double> seconds;
};
// "op result-types location" of an op, the key of its profile line.
std::string opKey(const ir::Op &op);
std::string formatOpProfile(const OpProfile &p);
Expected<OpProfile> readOpProfile(const std::string &path);
// The profile's times laid over the ops of `g` (collectives 0), or an error
// naming the first op the profile lacks.
Expected<std::vector<double>> opTimesFromProfile(const OpProfile &p, const ir::Graph &g,
                                                 const std::string &path);

} // namespace dtnn::passes
