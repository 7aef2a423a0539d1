#include "ir/Summary.h"

#include <algorithm>
#include <climits>
#include <set>

namespace dtnn::ir {

ModelSummary summarize(const Module &m, const Graph &g) {
  ModelSummary s;
  s.graph = g.name();
  std::set<const Param *> counted;
  for (const auto &op : g.ops()) {
    SummaryRow row;
    row.op = op->name();
    for (size_t i = 0; i < op->results().size(); ++i)
      row.shape += (i ? ", " : "") + dimsStr(op->result(i)->type().dims);
    std::vector<TensorType> in, out;
    for (const Value *v : op->operands()) {
      in.push_back(v->type());
      const Param *p = v->param();
      if (!p) continue;
      if (row.layer.empty()) {
        size_t dot = p->name.rfind('.');
        row.layer = dot == std::string::npos ? p->name : p->name.substr(0, dot);
      }
      if (!counted.insert(p).second) continue;
      int64_t n = p->type.staticElements();
      if (p->trainable)
        row.params = saturatingAdd(row.params, n);
    }
    for (const Value *v : op->results()) out.push_back(v->type());
    if (op->def().macs) row.macs = op->def().macs(in, out, op->attrs());
    if (row.layer.empty()) row.layer = "-";
    s.trainableParams = saturatingAdd(s.trainableParams, row.params);
    s.macs = saturatingAdd(s.macs, row.macs);
    s.rows.push_back(std::move(row));
  }
  for (const auto &p : m.params())
    if (!p->trainable) s.bufferElements = saturatingAdd(s.bufferElements, p->type.staticElements());
  return s;
}

namespace {

// A count as printed: its digits, or ">=9223372036854775807" when it saturated.
std::string countStr(int64_t n) { return (n == INT64_MAX ? ">=" : "") + std::to_string(n); }

} // namespace

void printSummary(const ModelSummary &s, std::ostream &os) {
  const char *headers[] = {"Layer", "Op", "Output shape", "Params", "MACs"};
  size_t w[5];
  for (int i = 0; i < 5; ++i) w[i] = std::string(headers[i]).size();
  for (const auto &r : s.rows) {
    w[0] = std::max(w[0], r.layer.size());
    w[1] = std::max(w[1], r.op.size());
    w[2] = std::max(w[2], r.shape.size());
    w[3] = std::max(w[3], countStr(r.params).size());
    w[4] = std::max(w[4], countStr(r.macs).size());
  }
  auto cell = [&](const std::string &text, size_t width, bool right) {
    std::string pad(width - std::min(width, text.size()), ' ');
    os << (right ? pad + text : text + pad);
  };
  auto rowOut = [&](const std::string &a, const std::string &b, const std::string &c,
                    const std::string &d, const std::string &e) {
    cell(a, w[0], false);
    os << "  ";
    cell(b, w[1], false);
    os << "  ";
    cell(c, w[2], false);
    os << "  ";
    cell(d, w[3], true);
    os << "  ";
    cell(e, w[4], true);
    os << '\n';
  };
  os << "Model: " << s.graph << '\n';
  rowOut(headers[0], headers[1], headers[2], headers[3], headers[4]);
  size_t total = w[0] + w[1] + w[2] + w[3] + w[4] + 8;
  os << std::string(total, '-') << '\n';
  for (const auto &r : s.rows)
    rowOut(r.layer, r.op, r.shape, countStr(r.params), countStr(r.macs));
  os << std::string(total, '-') << '\n';
  os << "Layers: " << s.rows.size() << '\n';
  os << "MACs per sample: " << countStr(s.macs) << '\n';
  os << "Buffers (not trained): " << countStr(s.bufferElements) << '\n';
  // Plain digits: within the IR's size limit no module has INT64_MAX parameters.
  os << "Total params: " << s.trainableParams << '\n';
}

} // namespace dtnn::ir
