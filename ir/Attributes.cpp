#include "ir/Attributes.h"

#include <cassert>
#include <charconv>
#include <cmath>

namespace dtnn::ir {

const char *attrKindName(AttrKind k) {
  switch (k) {
  case AttrKind::Int: return "int";
  case AttrKind::Float: return "float";
  case AttrKind::Bool: return "bool";
  case AttrKind::String: return "string";
  case AttrKind::Ints: return "int list";
  case AttrKind::Floats: return "float list";
  }
  return "?";
}

AttrKind attrKindOf(const AttrValue &v) { return static_cast<AttrKind>(v.index()); }

std::string formatDouble(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string attrValueStr(const AttrValue &v) {
  switch (attrKindOf(v)) {
  case AttrKind::Int: return std::to_string(std::get<int64_t>(v));
  case AttrKind::Float: return formatDouble(std::get<double>(v));
  case AttrKind::Bool: return std::get<bool>(v) ? "true" : "false";
  case AttrKind::String: {
    std::string out = "\"";
    for (char c : std::get<std::string>(v)) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  }
  case AttrKind::Ints: {
    std::string s = "[";
    const auto &xs = std::get<std::vector<int64_t>>(v);
    for (size_t i = 0; i < xs.size(); ++i) s += (i ? "," : "") + std::to_string(xs[i]);
    return s + "]";
  }
  case AttrKind::Floats: {
    std::string s = "[";
    const auto &xs = std::get<std::vector<double>>(v);
    for (size_t i = 0; i < xs.size(); ++i) s += (i ? "," : "") + formatDouble(xs[i]);
    return s + "]";
  }
  }
  return "";
}

std::optional<AttrValue> coerceAttr(const AttrValue &v, AttrKind k) {
  AttrKind have = attrKindOf(v);
  if (have == k) return v;
  if (have == AttrKind::Int && k == AttrKind::Float)
    return AttrValue(static_cast<double>(std::get<int64_t>(v)));
  if (have == AttrKind::Int && k == AttrKind::Ints)
    return AttrValue(std::vector<int64_t>{std::get<int64_t>(v)});
  if (have == AttrKind::Float && k == AttrKind::Floats)
    return AttrValue(std::vector<double>{std::get<double>(v)});
  if (have == AttrKind::Int && k == AttrKind::Floats)
    return AttrValue(std::vector<double>{static_cast<double>(std::get<int64_t>(v))});
  if (have == AttrKind::Ints && k == AttrKind::Floats) {
    std::vector<double> out;
    for (int64_t x : std::get<std::vector<int64_t>>(v)) out.push_back(static_cast<double>(x));
    return AttrValue(out);
  }
  // An empty list parses as ints; it is equally an empty float list.
  if (have == AttrKind::Floats && k == AttrKind::Ints && std::get<std::vector<double>>(v).empty())
    return AttrValue(std::vector<int64_t>{});
  return std::nullopt;
}

const AttrValue *AttrMap::find(const std::string &name) const {
  for (const auto &e : entries_)
    if (e.first == name) return &e.second;
  return nullptr;
}

void AttrMap::set(const std::string &name, AttrValue v) {
  for (auto &e : entries_)
    if (e.first == name) {
      e.second = std::move(v);
      return;
    }
  entries_.emplace_back(name, std::move(v));
}

bool AttrMap::erase(const std::string &name) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->first == name) {
      entries_.erase(it);
      return true;
    }
  return false;
}

template <typename T> static const T &getAs(const AttrMap &m, const std::string &name) {
  const AttrValue *v = m.find(name);
  assert(v && std::holds_alternative<T>(*v) && "attribute missing or of the wrong kind");
  return std::get<T>(*v);
}

int64_t AttrMap::getInt(const std::string &n) const { return getAs<int64_t>(*this, n); }
double AttrMap::getFloat(const std::string &n) const { return getAs<double>(*this, n); }
bool AttrMap::getBool(const std::string &n) const { return getAs<bool>(*this, n); }
const std::string &AttrMap::getString(const std::string &n) const {
  return getAs<std::string>(*this, n);
}
const std::vector<int64_t> &AttrMap::getInts(const std::string &n) const {
  return getAs<std::vector<int64_t>>(*this, n);
}
const std::vector<double> &AttrMap::getFloats(const std::string &n) const {
  return getAs<std::vector<double>>(*this, n);
}

} // namespace dtnn::ir
