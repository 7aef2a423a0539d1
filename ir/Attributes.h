// Typed op attributes: the value kinds an op table entry can declare, and an
// ordered attribute map whose order is the op's declaration order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace dtnn::ir {

enum class AttrKind { Int, Float, Bool, String, Ints, Floats };

using AttrValue =
    std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>>;

const char *attrKindName(AttrKind k);
AttrKind attrKindOf(const AttrValue &v);
// Text form as printed in IR: 3, 0.5, true, "tanh", [1,1], [0.5,0.25].
std::string attrValueStr(const AttrValue &v);
// Shortest text that reads back as the same double, always with a '.' or exponent.
std::string formatDouble(double v);
// Converts v to kind k where that is lossless (int -> float, int -> [int]);
// returns nullopt otherwise.
std::optional<AttrValue> coerceAttr(const AttrValue &v, AttrKind k);

// Attributes of one op, kept in the order the op table declares them.
class AttrMap {
public:
  using Entry = std::pair<std::string, AttrValue>;

  const AttrValue *find(const std::string &name) const;
  void set(const std::string &name, AttrValue v);
  bool erase(const std::string &name);
  const std::vector<Entry> &entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  bool operator==(const AttrMap &o) const { return entries_ == o.entries_; }

  // Typed accessors; the verifier guarantees kinds, so these assert on misuse.
  int64_t getInt(const std::string &name) const;
  double getFloat(const std::string &name) const;
  bool getBool(const std::string &name) const;
  const std::string &getString(const std::string &name) const;
  const std::vector<int64_t> &getInts(const std::string &name) const;
  const std::vector<double> &getFloats(const std::string &name) const;

private:
  std::vector<Entry> entries_;
};

} // namespace dtnn::ir
