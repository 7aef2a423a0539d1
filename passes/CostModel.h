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
// bytes in 2(P-1) messages). α and β are of the links between nodes (on one
// node, of whatever joins its ranks); nodeAlpha and nodeBeta of the memory a
// node's ranks share.
//
// On N > 1 nodes of L ranks, a flat ring over all P = N·L ranks goes at the
// pace of its edges between nodes: the formula above with α, β. A
// hierarchical reduction reduces within each node and broadcasts back
// (binomial trees: 2⌈log2 L⌉(α_node + n·β_node)) around a ring over the N
// nodes' first ranks (2(N-1)·α + 2(N-1)/N·n·β): each node's link carries n
// bytes each way instead of 2(P-1)/P·n.
struct NetModel {
  double alpha = 5e-6;        // seconds per message
  double beta = 1 / 12.5e9;   // seconds per byte (12.5 GB/s: 100 Gb/s)
  double nodeAlpha = 1e-6;    // within a node: seconds per message
  double nodeBeta = 1 / 10e9; // within a node: seconds per byte (10 GB/s)
  bool hasNodeLink = false;   // whether nodeAlpha and nodeBeta were given or measured
  // The share of a reduction's time that the ranks' own cores spend moving it (TCP through
  // the kernel, shared-memory copies): compute it overlaps is slowed by that much, which no
  // overlap hides when every core computes. 0 for a network card that moves the data itself.
  double hostShare = 0;
  std::string source = "default: alpha 5 us, 12.5 GB/s per link";
  // A flat ring over `ranks` ranks on `nodes` nodes.
  double allreduceSeconds(double bytes, int ranks, int nodes = 1) const;
  // The hierarchical reduction (the flat ring on one node).
  double hierarchicalSeconds(double bytes, int ranks, int nodes) const;
};

// The faster way to reduce `bytes` over `ranks` ranks on `nodes` nodes
// (ties: flat).
struct AllreduceChoice {
  bool hierarchical = false;
  double seconds = 0;
};
AllreduceChoice chooseAllreduce(const NetModel &net, double bytes, int ranks, int nodes);

// Reads a network file (`dtnn-run --calibrate` writes them): lines
// `alpha_s = X` and `beta_s_per_byte = Y`, optionally `node_alpha_s = X` and
// `node_beta_s_per_byte = Y` (within a node; both or neither), optionally
// `host_share = S` (0 to 1, see NetModel::hostShare), `#` comments.
Expected<NetModel> readNetModel(const std::string &path);
// The text of a network file.
std::string formatNetModel(const NetModel &net, const std::string &comment);
// Fits T(n) = a + b·n to allreduce times measured on `ranks` ranks (least
// squares on relative errors) and turns a and b into α and β of the ring
// formula.
Expected<NetModel> fitNetModel(const std::vector<double> &bytes,
                               const std::vector<double> &seconds, int ranks);
// The node count of a data-parallel run must be from 1 to its rank count
// (the cost model takes ⌈ranks/nodes⌉ ranks a node): "" when it is, else
// what is wrong.
std::string checkNodes(int64_t ranks, int64_t nodes);

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
  // The step's time outside its ops (staging the batch, launching, reading the loss back):
  // the trainer's step time less the ops' (line `overhead SECONDS`; 0 if not given).
  double overhead = 0;
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
