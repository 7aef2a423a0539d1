// Folding repeated structure: consecutive runs of lines that compute the same thing on the
// previous run's result (a ViT's encoder layers, a ResNet stage's bottlenecks after the first)
// become a block, defined once, called in a loop. A run qualifies when it reads one value from
// before it and only its last value is read after it, when its instances are the same lines up
// to the names of their values and layers, and when each instance's layers are named as one
// prefix (the instance's name) and a suffix that is the same in every instance: the layer
// "encoder_layer_3_ln_1" of instance "encoder_layer_3" is "ln_1" inside the block, and its
// weights keep their meaning as "encoder_layer_3.ln_1.gamma".
#pragma once

#include "frontend/onnx/ImportContext.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace dtnn::onnximport {

struct BlockDef {
  std::string name;
  std::string param;        // the block's one input
  std::vector<Line> lines;  // instance 0's lines, its names made relative
  std::string result;       // the var it returns
  std::string from;         // the ONNX node path of instance 0 ("/encoder/layers/encoder_layer_0"),
                            // else its first and last nodes ("/Mul ... /Tanh")
};

// `var output = input` then `output = output |> block(name=...)` once per instance.
struct RepeatCall {
  size_t block = 0;                  // index into Folded::blocks
  std::string input, output;
  std::vector<std::string> names;    // the instances' names, in order
  std::vector<std::string> from;     // their ONNX node paths (else the first's first node and
                                     // the others' last)
};

// A line of the model's body, or a loop of block calls.
struct BodyItem {
  bool isRepeat = false;
  Line line;
  RepeatCall repeat;
};

struct Folded {
  std::vector<BlockDef> blocks;
  std::vector<BodyItem> body;
  // Old layer or param name -> new, for the weights ("a_3_ln_1" -> "a_3.ln_1").
  std::map<std::string, std::string> renamed;
};

// Folds the repeats of `lines`; `results` are the vars the model returns. `reserved` are names
// a block may not take.
Folded foldRepeats(const std::vector<Line> &lines, const std::set<std::string> &results,
                   const std::set<std::string> &reserved);

} // namespace dtnn::onnximport
