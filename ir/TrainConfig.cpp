#include "ir/TrainConfig.h"

#include <algorithm>
#include <sstream>

namespace dtnn::ir {

std::vector<std::string> trainMetrics(const AttrMap &trainConfig) {
  std::vector<std::string> out = {"accuracy"};
  const AttrValue *v = trainConfig.find("metrics");
  if (!v || !std::holds_alternative<std::string>(*v)) return out;
  std::stringstream ss(std::get<std::string>(*v));
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty() && std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
  return out;
}

} // namespace dtnn::ir
