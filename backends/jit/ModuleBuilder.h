// Inside the code generator module: building a fused kernel's LLVM module
// (Codegen.cpp) for the compiler of the process (Compiler.cpp) and for
// `--emit=llvm`.
#pragma once

#include "backends/jit/CodegenApi.h"

#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>

namespace dtnn::jit {

// LLVM's message of `e`, consumed.
std::string llvmMessage(llvm::Error e);

// Registers the host target with LLVM (once).
void initialiseLlvm();

// A machine builder for `cpu` ("" or "native": the host, with its features
// as LLVM detects them), at LLVM's most aggressive code generation.
llvm::Expected<llvm::orc::JITTargetMachineBuilder> machineFor(const std::string &cpu);

// The kernel of `plan` over `body` as a module for target machine `tm`,
// optimised at O3: `name.body` with one noalias pointer per tensor, and
// `name`, which unpacks the pointer array and calls it.
Expected<std::unique_ptr<llvm::Module>> buildModule(llvm::LLVMContext &ctx, const ir::Graph &body,
                                                    const LoopPlan &plan, const std::string &name,
                                                    llvm::TargetMachine &tm);

} // namespace dtnn::jit
