// The value types of dtnn/Train.h: HostTensor, and ModelBuilder, which writes the model in the
// language a line per call (`let v3 = v2 |> conv2d(6, kernel=5)`).
#include "dtnn/Train.h"

#include "ir/Attributes.h"

#include <cstring>
#include <sstream>

namespace dtnn {

namespace {

// The language's literal of an argument: 3, 0.5 (always with a point), true, "text", [1, 2].
std::string literal(const ModelBuilder::Arg &a) {
  return std::visit(
      [](const auto &v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return ir::formatDouble(v);
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          std::string out = "\"";
          for (char c : v) {
            if (c == '"' || c == '\\') out += '\\';
            out += c;
          }
          return out + "\"";
        } else {
          std::string out = "[";
          for (size_t i = 0; i < v.size(); ++i) {
            if (i) out += ", ";
            if constexpr (std::is_same_v<T, std::vector<int64_t>>)
              out += std::to_string(v[i]);
            else
              out += ir::formatDouble(v[i]);
          }
          return out + "]";
        }
      },
      a);
}

} // namespace

HostTensor HostTensor::f32(std::vector<int64_t> shape, const std::vector<float> &values) {
  HostTensor t{"f32", std::move(shape), std::vector<uint8_t>(values.size() * sizeof(float))};
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

HostTensor HostTensor::u8(std::vector<int64_t> shape, std::vector<uint8_t> values) {
  return HostTensor{"u8", std::move(shape), std::move(values)};
}

HostTensor HostTensor::i32(std::vector<int64_t> shape, const std::vector<int32_t> &values) {
  HostTensor t{"i32", std::move(shape), std::vector<uint8_t>(values.size() * sizeof(int32_t))};
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<float> HostTensor::floats() const {
  if (dtype != "f32") return {};
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

ModelBuilder::ModelBuilder(std::string name, std::string input, std::string inputType,
                           std::string outputType)
    : name_(std::move(name)), input_(std::move(input)), inputType_(std::move(inputType)),
      outputType_(std::move(outputType)), result_(input_) {}

ModelBuilder::Value ModelBuilder::apply(const Value &x, const std::string &layer,
                                        const std::vector<Arg> &args, const Named &named) {
  std::string call = layer;
  if (!args.empty() || !named.empty()) {
    call += "(";
    bool first = true;
    for (const Arg &a : args) {
      call += (first ? "" : ", ") + literal(a);
      first = false;
    }
    for (const auto &[k, a] : named) {
      call += (first ? "" : ", ") + k + "=" + literal(a);
      first = false;
    }
    call += ")";
  }
  Value v{"v" + std::to_string(next_++)};
  lines_.push_back("  let " + v.name + " = " + x.name + " |> " + call);
  return v;
}

ModelBuilder::Value ModelBuilder::add(const Value &a, const Value &b) {
  Value v{"v" + std::to_string(next_++)};
  lines_.push_back("  let " + v.name + " = " + a.name + " + " + b.name);
  return v;
}

void ModelBuilder::output(const Value &v) { result_ = v.name; }

void ModelBuilder::setting(const std::string &key, const std::string &value) {
  settings_.push_back("  " + key + " = " + value);
}

std::string ModelBuilder::source() const {
  std::ostringstream os;
  os << "model " << name_ << "(" << input_ << ": " << inputType_ << ") -> " << outputType_
     << " {\n";
  for (const std::string &l : lines_) os << l << "\n";
  os << "  return " << result_ << "\n}\n";
  if (!settings_.empty()) {
    os << "\ntrain " << name_ << " {\n";
    for (const std::string &s : settings_) os << s << "\n";
    os << "}\n";
  }
  return os.str();
}

} // namespace dtnn
