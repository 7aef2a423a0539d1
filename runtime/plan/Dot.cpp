// Plans drawn for Graphviz (`dtnnc compile --emit=dot`): one cluster per graph, one node per op
// step (layout conversions are left out: an edge goes from the op that made a value to the op
// that reads it, through any conversions), coloured by the backend that runs it. A fused op is
// drawn as a 3-d box listing the ops of its region; the start and wait of each allreduce bucket
// share a colour of their own and say the bucket's bytes; graph inputs are drawn as houses.
// Parameters are left out (a layer's name says what it reads). The output is deterministic:
// nodes and edges in plan order.
#include "runtime/plan/Plan.h"

#include <cstdio>
#include <set>
#include <sstream>

namespace dtnn::runtime {

namespace {

// Graphviz's double-quoted string: quotes and backslashes escaped, line breaks as \n.
std::string quoted(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

const char *backendColour(const std::string &backend) {
  if (backend == "onednn") return "#c6dbef";
  if (backend == "jit") return "#c7e9c0";
  if (backend == "reference") return "#e0e0e0";
  return "#fdd0a2";
}

// A colour for bucket b: hues around the wheel, light enough for text.
std::string bucketColour(int64_t b) {
  double hue = double((b * 37) % 360) / 360.0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f 0.45 1.0", hue);
  return buf;
}

std::string bytesText(uint64_t b) {
  char buf[32];
  if (b >= (1u << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / double(1u << 20));
  else if (b >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", double(b) / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

// The step (an op, not a conversion) whose result value `id` is, through conversions and
// aliases; -1 for a graph input or a parameter.
int producer(const Plan &p, int id) {
  while (true) {
    const PlanValue &v = p.values[size_t(id)];
    if (v.def < 0) return -1;
    const PlanStep &s = p.steps[size_t(v.def)];
    if (s.op) return v.def;
    id = s.in[0];
  }
}

// The graph input value `id` reads, through conversions, or -1.
int inputOf(const Plan &p, int id) {
  while (true) {
    const PlanValue &v = p.values[size_t(id)];
    if (v.storage == PlanValue::Storage::Input) return id;
    if (v.def < 0 || p.steps[size_t(v.def)].op) return -1;
    id = p.steps[size_t(v.def)].in[0];
  }
}

} // namespace

std::string planDot(const Plan &p, const std::string &prefix) {
  const std::string graph = p.graph ? p.graph->name() : "graph";
  auto node = [&](const std::string &what) { return quoted(prefix + graph + "/" + what); };
  std::ostringstream os;
  os << "  subgraph " << quoted("cluster_" + prefix + graph) << " {\n"
     << "    label=" << quoted("@" + graph + " (batch " + std::to_string(p.batch) + ")") << ";\n";
  for (int id : p.inputs)
    os << "    " << node(p.values[size_t(id)].name) << " [shape=invhouse, label="
       << quoted(p.values[size_t(id)].name + "\n" + p.values[size_t(id)].desc.type.str()) << "];\n";
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const PlanStep &s = p.steps[i];
    if (!s.op) continue;
    std::string label = stepLayerName(p, s);
    for (int id : s.out) label += "\n" + p.values[size_t(id)].desc.type.str();
    label += "\n[" + s.backend + "]";
    std::string attrs = "shape=box, style=\"rounded,filled\", fillcolor=\"" +
                        std::string(backendColour(s.backend)) + "\"";
    if (s.op->body()) {
      std::string ops;
      for (const auto &inner : s.op->body()->ops()) ops += (ops.empty() ? "" : ", ") + inner->name();
      label += "\nfused: " + ops;
      attrs = "shape=box3d, style=filled, fillcolor=\"" + std::string(backendColour(s.backend)) +
              "\", penwidth=2";
    }
    if (s.op->name() == "allreduce_start" || s.op->name() == "allreduce_wait") {
      int64_t bucket = s.op->attrs().getInt("bucket");
      uint64_t bytes = operandBytes(p, s);
      if (bytes) label += "\nbucket " + std::to_string(bucket) + ", " + bytesText(bytes);
      attrs = "shape=hexagon, style=filled, fillcolor=\"" + bucketColour(bucket) + "\"";
    }
    os << "    " << node("s" + std::to_string(i)) << " [" << attrs << ", label=" << quoted(label)
       << "];\n";
  }
  // Edges, each once: from the op (or input) a step's operand comes from.
  std::set<std::pair<std::string, std::string>> drawn;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const PlanStep &s = p.steps[i];
    if (!s.op) continue;
    for (int id : s.in) {
      int from = producer(p, id);
      std::string src;
      if (from >= 0)
        src = node("s" + std::to_string(from));
      else if (int in = inputOf(p, id); in >= 0)
        src = node(p.values[size_t(in)].name);
      else
        continue; // a parameter
      std::string dst = node("s" + std::to_string(i));
      if (drawn.insert({src, dst}).second) os << "    " << src << " -> " << dst << ";\n";
    }
  }
  os << "  }\n";
  return os.str();
}

} // namespace dtnn::runtime
