// The code of one element of each op the jit knows, emitted with LLVM's
// IRBuilder into the inner loop of a fused kernel. Each follows the
// reference kernel's formula (backends/reference/Activation.cpp,
// Elementwise.cpp), so that the two agree to the rounding of their
// operations.
#pragma once

#include "ir/IR.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <vector>

namespace dtnn::jit {

// The value of `op` at one element, from its operands' values there; for
// sum_like, the value it adds up (its input). `t` is the element type, or a
// vector of it: the same code then computes every lane.
llvm::Value *emitScalarOp(llvm::IRBuilder<> &b, llvm::Module &m, const ir::Op &op,
                          const std::vector<llvm::Value *> &in, llvm::Type *t);

} // namespace dtnn::jit
