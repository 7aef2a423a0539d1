#include "passes/CostModel.h"

#include "ir/Printer.h"
#include "ir/SourceFile.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

namespace dtnn::passes {

namespace {

constexpr double kFlops = 50e9;     // the estimate's arithmetic rate
constexpr double kBandwidth = 10e9; // the estimate's memory rate

std::string fmt(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

double bytesAt(const ir::TensorType &t, int64_t batch) {
  if (t.isToken()) return 0;
  double n = 1;
  for (int64_t d : t.dims) n *= static_cast<double>(ir::bindDim(d, batch));
  return n * ir::dtypeSize(t.dtype);
}

// The lines of a text file the run reads (the network model, an op profile).
Expected<std::vector<std::string>> readLines(const std::string &path, const std::string &kind) {
  auto text = readSourceFile(path, kind);
  if (!text) return text.takeError();
  std::vector<std::string> lines;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Reads "KEY = NUMBER" (spaces around '=' optional, nothing after the
// number but spaces): false when the line is anything else.
bool readSetting(const std::string &line, std::string &key, double &value) {
  size_t eq = line.find('=');
  if (eq == std::string::npos) return false;
  auto trim = [](std::string s) {
    size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  key = trim(line.substr(0, eq));
  std::string number = trim(line.substr(eq + 1));
  if (key.empty() || key.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") != std::string::npos ||
      number.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  value = std::strtod(number.c_str(), &end);
  return *end == '\0' && errno != ERANGE;
}

} // namespace

namespace {

double ring(double bytes, int ranks, double alpha, double beta) {
  if (ranks <= 1) return 0;
  double p = ranks;
  return 2 * (p - 1) * alpha + 2 * (p - 1) / p * bytes * beta;
}

} // namespace

double NetModel::allreduceSeconds(double bytes, int ranks, int nodes) const {
  if (nodes <= 1 && hasNodeLink) return ring(bytes, ranks, nodeAlpha, nodeBeta);
  return ring(bytes, ranks, alpha, beta);
}

double NetModel::hierarchicalSeconds(double bytes, int ranks, int nodes) const {
  if (nodes <= 1) return allreduceSeconds(bytes, ranks, nodes);
  int local = (ranks + nodes - 1) / nodes;
  double depth = std::ceil(std::log2(static_cast<double>(local)));
  return 2 * depth * (nodeAlpha + bytes * nodeBeta) + ring(bytes, nodes, alpha, beta);
}

AllreduceChoice chooseAllreduce(const NetModel &net, double bytes, int ranks, int nodes) {
  double flat = net.allreduceSeconds(bytes, ranks, nodes);
  double hier = net.hierarchicalSeconds(bytes, ranks, nodes);
  // Faster by more than a nanosecond.
  if (nodes > 1 && hier < flat - 1e-9) return {true, hier};
  return {false, flat};
}

std::string checkNodes(int64_t ranks, int64_t nodes) {
  if (nodes < 1 || nodes > ranks)
    return "the node count must be from 1 to the rank count (" + std::to_string(ranks) + ")";
  return "";
}

Expected<NetModel> readNetModel(const std::string &path) {
  auto lines = readLines(path, "network model file");
  if (!lines) return lines.takeError();
  NetModel net;
  std::map<std::string, size_t> seen; // key -> its line
  for (size_t i = 0; i < lines->size(); ++i) {
    std::string line = (*lines)[i].substr(0, (*lines)[i].find('#'));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = path + ":" + std::to_string(i + 1) + ": ";
    std::string key;
    double v = 0;
    if (!readSetting(line, key, v) || !std::isfinite(v) || v < 0)
      return Error::make(where + "expected 'alpha_s = X' or 'beta_s_per_byte = Y' with X, Y "
                                 "finite numbers >= 0, got '" + (*lines)[i] + "'");
    if (key != "alpha_s" && key != "beta_s_per_byte" && key != "node_alpha_s" &&
        key != "node_beta_s_per_byte" && key != "host_share" && key != "ranks")
      return Error::make(where + "unknown key '" + key + "'");
    if (auto [it, fresh] = seen.emplace(key, i + 1); !fresh)
      return Error::make(where + "'" + key + "' is given twice (first on line " +
                         std::to_string(it->second) + ")");
    if (key == "alpha_s") net.alpha = v;
    if (key == "beta_s_per_byte") net.beta = v;
    if (key == "node_alpha_s") net.nodeAlpha = v;
    if (key == "node_beta_s_per_byte") net.nodeBeta = v;
    if (key == "host_share") {
      if (v > 1)
        return Error::make(where + "host_share is a share of the reduction's time, 0 to 1, got " +
                           fmt(v));
      net.hostShare = v;
    }
  }
  if (!seen.count("alpha_s") || !seen.count("beta_s_per_byte"))
    return Error::make(path + ": needs both alpha_s and beta_s_per_byte");
  if (seen.count("node_alpha_s") != seen.count("node_beta_s_per_byte"))
    return Error::make(path + ": node_alpha_s and node_beta_s_per_byte go together (the link "
                              "within a node); give both or neither");
  net.hasNodeLink = seen.count("node_alpha_s") != 0;
  net.source = path;
  return net;
}

std::string formatNetModel(const NetModel &net, const std::string &comment) {
  std::string s = "# dtnn network model: a ring allreduce of n bytes on P ranks takes\n"
                  "# 2(P-1)*alpha_s + 2(P-1)/P*n*beta_s_per_byte seconds.\n";
  if (!comment.empty()) s += "# " + comment + "\n";
  s += "alpha_s = " + fmt(net.alpha) + "\n";
  s += "beta_s_per_byte = " + fmt(net.beta) + "\n";
  if (net.hasNodeLink) {
    s += "# Within a node (shared memory):\n";
    s += "node_alpha_s = " + fmt(net.nodeAlpha) + "\n";
    s += "node_beta_s_per_byte = " + fmt(net.nodeBeta) + "\n";
  }
  if (net.hostShare > 0) {
    s += "# The share of a reduction's time its ranks' cores spend moving it:\n";
    s += "host_share = " + fmt(net.hostShare) + "\n";
  }
  return s;
}

Expected<NetModel> fitNetModel(const std::vector<double> &bytes,
                               const std::vector<double> &seconds, int ranks) {
  if (ranks < 2) return Error::make("calibrating the network needs at least two ranks");
  size_t n = bytes.size();
  if (n < 2 || seconds.size() != n) return Error::make("calibration needs two or more sizes");
  // Least squares on relative errors (weights 1/T²), so that the small sizes,
  // which fix the latency, count as much as the large ones.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!(seconds[i] > 0)) return Error::make("calibration measured a time of zero");
    double w = 1 / (seconds[i] * seconds[i]);
    sw += w;
    sx += w * bytes[i];
    sy += w * seconds[i];
    sxx += w * bytes[i] * bytes[i];
    sxy += w * bytes[i] * seconds[i];
  }
  double den = sw * sxx - sx * sx;
  if (den <= 0) return Error::make("calibration sizes must differ");
  double b = (sw * sxy - sx * sy) / den;
  double a = (sy - b * sx) / sw;
  double p = ranks;
  NetModel net;
  net.alpha = std::max(a, 0.0) / (2 * (p - 1));
  net.beta = std::max(b, 0.0) * p / (2 * (p - 1));
  net.source = "calibrated on " + std::to_string(ranks) + " ranks";
  return net;
}

std::vector<double> estimateOpTimes(const ir::Graph &g, int64_t batch) {
  std::vector<double> times;
  for (const auto &op : g.ops()) {
    if (op->def().collective) {
      times.push_back(0);
      continue;
    }
    std::vector<ir::TensorType> in, out;
    double bytes = 0;
    for (const ir::Value *v : op->operands()) {
      in.push_back(v->type());
      bytes += bytesAt(v->type(), batch);
    }
    for (const ir::Value *v : op->results()) {
      out.push_back(v->type());
      bytes += bytesAt(v->type(), batch);
    }
    double macs = op->def().macs ? double(op->def().macs(in, out, op->attrs())) * batch : 0;
    times.push_back(std::max(2 * macs / kFlops, bytes / kBandwidth));
  }
  return times;
}

std::string opKey(const ir::Op &op) {
  std::string types;
  for (const ir::Value *r : op.results()) types += (types.empty() ? "" : ";") + r->type().str();
  std::string where = ir::locationStr(op.loc());
  return op.name() + " " + (types.empty() ? "-" : types) + " " + (where.empty() ? "-" : where);
}

std::string formatOpProfile(const OpProfile &p) {
  std::string s = "# dtnn op profile: mean seconds of each op of a step, by op, result types "
                  "and location\ngraph " + p.graph + " batch " + std::to_string(p.batch) + "\n";
  if (p.overhead > 0) s += "overhead " + fmt(p.overhead) + "\n";
  for (const auto &[key, sec] : p.seconds) s += fmt(sec) + " " + key + "\n";
  return s;
}

Expected<OpProfile> readOpProfile(const std::string &path) {
  auto lines = readLines(path, "op profile");
  if (!lines) return lines.takeError();
  OpProfile p;
  bool header = false;
  for (size_t i = 0; i < lines->size(); ++i) {
    const std::string &line = (*lines)[i];
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    auto bad = [&](const std::string &what) {
      return Error::make(path + ":" + std::to_string(i + 1) + ": " + what);
    };
    if (!header) {
      std::string kw, kb;
      if (!(ss >> kw >> p.graph >> kb >> p.batch) || kw != "graph" || kb != "batch")
        return bad("expected 'graph NAME batch B'");
      header = true;
      continue;
    }
    if (line.rfind("overhead ", 0) == 0) {
      ss.ignore(9);
      if (!(ss >> p.overhead) || !std::isfinite(p.overhead) || p.overhead < 0)
        return bad("expected 'overhead SECONDS' with a finite number >= 0");
      continue;
    }
    double sec = 0;
    std::string key;
    if (!(ss >> sec) || !std::isfinite(sec) || sec < 0 || !std::getline(ss >> std::ws, key) ||
        key.empty())
      return bad("expected 'SECONDS OP TYPES LOCATION'");
    if (!p.seconds.emplace(key, sec).second) return bad("'" + key + "' is given twice");
  }
  if (!header) return Error::make(path + ": not an op profile (no 'graph' line)");
  return p;
}

namespace {

// The elements of a type as opKey writes it ("f32[16,3,3,3]": 432; "f32[]": 1).
double typeElements(const std::string &type) {
  size_t open = type.find('['), close = type.find(']');
  if (open == std::string::npos || close == std::string::npos) return 1;
  double n = 1;
  std::istringstream dims(type.substr(open + 1, close - open - 1));
  for (std::string d; std::getline(dims, d, ',');) n *= d.empty() || d == "?" ? 1 : std::atof(d.c_str());
  return n;
}

std::vector<std::string> splitTypes(const std::string &types) {
  std::vector<std::string> out;
  std::istringstream in(types);
  for (std::string t; std::getline(in, t, ';');) out.push_back(t);
  return out;
}

// Seconds an element of an optimizer update's results takes, from the profile's updates (the
// `fused_update` ops of fuse-updates, which runs after the passes that read the profile, so
// that their updates and its groups differ from the profiled run's); -1 if it has none.
// Updates stream their operands once: their time goes with their elements.
double updateSecondsPerElement(const OpProfile &p) {
  double seconds = 0, elements = 0;
  for (const auto &[key, sec] : p.seconds) {
    size_t space = key.find(' ');
    if (space == std::string::npos || !std::string_view(key).substr(0, space).ends_with("_update"))
      continue;
    size_t end = key.find(' ', space + 1);
    for (const std::string &t : splitTypes(key.substr(space + 1, end - space - 1)))
      elements += typeElements(t);
    seconds += sec;
  }
  return elements > 0 ? seconds / elements : -1;
}

} // namespace

Expected<std::vector<double>> opTimesFromProfile(const OpProfile &p, const ir::Graph &g,
                                                 const std::string &path) {
  std::vector<double> times;
  double perElement = updateSecondsPerElement(p);
  for (const auto &op : g.ops()) {
    if (op->def().collective) {
      times.push_back(0);
      continue;
    }
    auto it = p.seconds.find(opKey(*op));
    if (it == p.seconds.end() && op->name().ends_with("_update") && perElement >= 0) {
      double elements = 0;
      for (const ir::Value *r : op->results()) elements += typeElements(r->type().str());
      times.push_back(perElement * elements);
      continue;
    }
    if (it == p.seconds.end())
      return Error::make(path + ": the profile has no time for '" + opKey(*op) + "' of @" +
                         g.name() + " (profile the same model and settings)");
    times.push_back(it->second);
  }
  return times;
}

} // namespace dtnn::passes
