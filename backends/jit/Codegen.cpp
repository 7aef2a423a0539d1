// The jit's code generator: a fused op's region and loop plan to an
// optimised LLVM module (see backends/jit/ModuleBuilder.h).
#include "backends/jit/ModuleBuilder.h"

#include "backends/jit/ScalarOps.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/OptimizationLevel.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

namespace dtnn::jit {

using llvm::IRBuilder;
using llvm::Type;
using llvm::Value;

std::string llvmMessage(llvm::Error e) {
  std::string out;
  llvm::handleAllErrors(std::move(e), [&](const llvm::ErrorInfoBase &info) {
    out += (out.empty() ? "" : "; ") + info.message();
  });
  return out;
}

void initialiseLlvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

// The LLVM CPU that stands for a oneDNN ISA name of DTNN_MAX_CPU_ISA (as ONEDNN_MAX_CPU_ISA
// spells them, any case), or "" for a name it does not know.
std::string cpuForIsa(std::string isa) {
  for (char &c : isa) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::map<std::string, std::string> cpus = {
      {"sse41", "nehalem"},          {"avx", "sandybridge"},
      {"avx2", "haswell"},           {"avx2_vnni", "alderlake"},
      {"avx512_core", "skylake-avx512"}, {"avx512_core_vnni", "cascadelake"},
      {"avx512_core_bf16", "cooperlake"}, {"avx512_core_amx", "sapphirerapids"}};
  auto it = cpus.find(isa);
  return it == cpus.end() ? "" : it->second;
}

// A machine builder for `cpu` ("" or "native": the host, with its features
// as LLVM detects them, unless DTNN_MAX_CPU_ISA caps them at an older ISA, as
// ONEDNN_MAX_CPU_ISA does oneDNN's).
llvm::Expected<llvm::orc::JITTargetMachineBuilder> machineFor(const std::string &cpu) {
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return jtmb.takeError();
  std::string chosen = cpu;
  if ((chosen.empty() || chosen == "native") && std::getenv("DTNN_MAX_CPU_ISA")) {
    chosen = cpuForIsa(std::getenv("DTNN_MAX_CPU_ISA"));
    if (chosen.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "DTNN_MAX_CPU_ISA: unknown ISA '%s' (sse41, avx, avx2, "
                                     "avx512_core, avx512_core_bf16, avx512_core_amx, ...)",
                                     std::getenv("DTNN_MAX_CPU_ISA"));
  }
  if (!chosen.empty() && chosen != "native") {
    jtmb->setCPU(chosen);
    jtmb->getFeatures() = llvm::SubtargetFeatures();
  }
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  return jtmb;
}

namespace {

// Builds the kernel of `plan` over `body` in module `m`: `name.body` with one
// noalias pointer per tensor, and `name`, which unpacks the pointer array and
// calls it.
class KernelBuilder {
public:
  KernelBuilder(llvm::Module &m, const ir::Graph &body, const LoopPlan &plan)
      : m_(m), ctx_(m.getContext()), body_(body), plan_(plan),
        t_(plan.dtype == ir::DType::F64 ? Type::getDoubleTy(ctx_) : Type::getFloatTy(ctx_)),
        i64_(Type::getInt64Ty(ctx_)), ptr_(llvm::PointerType::get(ctx_, 0)) {}

  void build(const std::string &name, llvm::TargetMachine &tm) {
    size_t n = body_.inputs().size() + body_.outputs().size();
    std::vector<Type *> params(n, ptr_);
    params.insert(params.end(), {ptr_, i64_, i64_, i64_, i64_});
    auto *fty = llvm::FunctionType::get(Type::getVoidTy(ctx_), params, false);
    llvm::Function *inner =
        llvm::Function::Create(fty, llvm::Function::InternalLinkage, name + ".body", m_);
    for (size_t i = 0; i < n; ++i) inner->addParamAttr(unsigned(i), llvm::Attribute::NoAlias);
    inner->addFnAttr(llvm::Attribute::NoInline);
    emitBody(*inner);
    auto *ety = llvm::FunctionType::get(Type::getVoidTy(ctx_), {ptr_, ptr_, i64_, i64_, i64_, i64_},
                                        false);
    llvm::Function *entry =
        llvm::Function::Create(ety, llvm::Function::ExternalLinkage, name, m_);
    IRBuilder<> b(llvm::BasicBlock::Create(ctx_, "entry", entry));
    std::vector<Value *> args;
    for (size_t i = 0; i < n; ++i)
      args.push_back(b.CreateLoad(ptr_, b.CreateConstGEP1_64(ptr_, entry->getArg(0), i)));
    for (unsigned i = 1; i < 6; ++i) args.push_back(entry->getArg(i));
    b.CreateCall(inner, args);
    b.CreateRetVoid();
    for (llvm::Function *f : {inner, entry}) {
      f->addFnAttr("target-cpu", tm.getTargetCPU());
      f->addFnAttr("target-features", tm.getTargetFeatureString());
    }
  }

private:
  // rows: for r in [rb, re): each tensor's base offset at r, then the inner
  // loop for j in [jb, je) over the region's ops.
  void emitBody(llvm::Function &f) {
    size_t nArgs = body_.inputs().size(), n = nArgs + body_.outputs().size();
    size_t q = plan_.sizes.size();
    llvm::BasicBlock *entry = llvm::BasicBlock::Create(ctx_, "entry", &f);
    IRBuilder<> b(entry);
    Value *sizesPtr = f.getArg(unsigned(n));
    Value *rb = f.getArg(unsigned(n + 1)), *re = f.getArg(unsigned(n + 2));
    Value *jb = f.getArg(unsigned(n + 3)), *je = f.getArg(unsigned(n + 4));
    std::vector<Value *> e;
    for (size_t k = 0; k < q; ++k)
      e.push_back(k + 1 == q && plan_.fixedInner > 0
                      ? static_cast<Value *>(b.getInt64(plan_.fixedInner))
                      : b.CreateLoad(i64_, b.CreateConstGEP1_64(i64_, sizesPtr, k),
                                     "e" + std::to_string(k)));
    // Row strides of each tensor, in elements: the product of the sizes it
    // spans after dimension k; 0 where it does not span k.
    std::vector<std::vector<Value *>> stride(n, std::vector<Value *>(q, b.getInt64(0)));
    for (size_t t = 0; t < n; ++t)
      for (size_t k = 0; k + 1 < q; ++k) {
        if (!plan_.spans[t][k]) continue;
        Value *s = b.getInt64(1);
        for (size_t j = k + 1; j < q; ++j)
          if (plan_.spans[t][j]) s = b.CreateMul(s, e[j]);
        stride[t][k] = s;
      }
    // The rows as two loops, so that a row costs no division: the prefix
    // (the row dimensions before the last, one coordinate division per
    // prefix) and the last row dimension (`mid`, its offsets stepped).
    Value *em = q >= 2 ? e[q - 2] : b.getInt64(1);
    Value *p0 = b.CreateUDiv(rb, em, "p0"), *m0 = b.CreateURem(rb, em, "m0");
    llvm::BasicBlock *prefixHead = llvm::BasicBlock::Create(ctx_, "prefix", &f);
    llvm::BasicBlock *prefixBody = llvm::BasicBlock::Create(ctx_, "prefix.body", &f);
    llvm::BasicBlock *midHead = llvm::BasicBlock::Create(ctx_, "row", &f);
    llvm::BasicBlock *rowBody = llvm::BasicBlock::Create(ctx_, "row.body", &f);
    llvm::BasicBlock *midExit = llvm::BasicBlock::Create(ctx_, "row.exit", &f);
    llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, "exit", &f);
    b.CreateBr(prefixHead);

    b.SetInsertPoint(prefixHead);
    llvm::PHINode *pi = b.CreatePHI(i64_, 2, "p");
    llvm::PHINode *mFirst = b.CreatePHI(i64_, 2, "m.first");
    pi->addIncoming(p0, entry);
    mFirst->addIncoming(m0, entry);
    Value *rowsBefore = b.CreateMul(pi, em);
    b.CreateCondBr(b.CreateICmpSLT(b.CreateAdd(rowsBefore, mFirst), re), prefixBody, exit);

    b.SetInsertPoint(prefixBody);
    std::vector<Value *> coord(q, nullptr);
    Value *rem = pi;
    for (size_t k = q >= 2 ? q - 2 : 0; k-- > 0;) {
      coord[k] = k == 0 ? rem : b.CreateURem(rem, e[k]);
      if (k > 0) rem = b.CreateUDiv(rem, e[k]);
    }
    std::vector<Value *> prefixBase(n);
    for (size_t t = 0; t < n; ++t) {
      Value *o = b.getInt64(0);
      for (size_t k = 0; k + 2 < q; ++k)
        if (plan_.spans[t][k]) o = b.CreateAdd(o, b.CreateMul(coord[k], stride[t][k]));
      prefixBase[t] = o;
    }
    Value *left = b.CreateSub(re, rowsBefore);
    Value *mEnd = b.CreateSelect(b.CreateICmpSLT(left, em), left, em, "m.end");
    b.CreateBr(midHead);

    b.SetInsertPoint(midHead);
    llvm::PHINode *m = b.CreatePHI(i64_, 2, "m");
    m->addIncoming(mFirst, prefixBody);
    b.CreateCondBr(b.CreateICmpSLT(m, mEnd), rowBody, midExit);

    b.SetInsertPoint(rowBody);
    std::vector<Value *> base(n);
    for (size_t t = 0; t < n; ++t)
      base[t] = q >= 2 && plan_.spans[t][q - 2]
                    ? b.CreateAdd(prefixBase[t], b.CreateMul(m, stride[t][q - 2]))
                    : prefixBase[t];
    if (plan_.fixedInner > 0)
      emitLanes(b, f, base, prefixBase, prefixBody, midHead, midExit, m);
    else
      emitInnerLoop(b, f, base, jb, je, midHead, m);

    b.SetInsertPoint(midExit);
    pi->addIncoming(b.CreateAdd(pi, b.getInt64(1)), midExit);
    mFirst->addIncoming(b.getInt64(0), midExit);
    b.CreateBr(prefixHead);

    b.SetInsertPoint(exit);
    b.CreateRetVoid();
  }

  // The inner loop of a row, for j in [jb, je): the region's ops on one
  // element at a time, which LLVM's vectorizer widens; a reduction over the
  // inner dimension sums in a register and is added to memory after it.
  void emitInnerLoop(IRBuilder<> &b, llvm::Function &f, const std::vector<Value *> &base,
                     Value *jb, Value *je, llvm::BasicBlock *midHead, llvm::PHINode *m) {
    size_t nArgs = body_.inputs().size(), q = plan_.sizes.size();
    llvm::BasicBlock *rowBody = b.GetInsertBlock();
    llvm::BasicBlock *innerHead = llvm::BasicBlock::Create(ctx_, "inner", &f);
    llvm::BasicBlock *innerBody = llvm::BasicBlock::Create(ctx_, "inner.body", &f);
    llvm::BasicBlock *innerExit = llvm::BasicBlock::Create(ctx_, "inner.exit", &f);
    b.CreateBr(innerHead);

    // Accumulators of the reductions over the inner dimension.
    b.SetInsertPoint(innerHead);
    llvm::PHINode *j = b.CreatePHI(i64_, 2, "j");
    j->addIncoming(jb, rowBody);
    std::map<size_t, llvm::PHINode *> acc;
    for (size_t y = 0; y < plan_.reduced.size(); ++y)
      if (plan_.reduced[y] && !plan_.spans[nArgs + y][q - 1]) {
        acc[y] = b.CreatePHI(t_, 2, "acc" + std::to_string(y));
        acc[y]->addIncoming(llvm::ConstantFP::get(t_, 0.0), rowBody);
      }
    b.CreateCondBr(b.CreateICmpSLT(j, je), innerBody, innerExit);

    b.SetInsertPoint(innerBody);
    auto index = [&](size_t t) {
      return plan_.spans[t][q - 1] ? b.CreateAdd(base[t], j) : base[t];
    };
    std::map<const ir::Value *, Value *> vals;
    for (size_t i = 0; i < nArgs; ++i)
      vals[body_.inputs()[i]] = load(b, i, elem(i), b.CreateGEP(elem(i), f.getArg(unsigned(i)), index(i)),
                                     llvm::Align(size(i)), body_.inputs()[i]->name());
    emitOps(b, vals, t_);
    llvm::FastMathFlags reassoc;
    reassoc.setAllowReassoc();
    reassoc.setNoSignedZeros();
    for (size_t y = 0; y < body_.outputs().size(); ++y) {
      size_t t = nArgs + y;
      Value *v = vals.at(body_.outputs()[y]);
      if (acc.count(y)) {
        Value *next = b.CreateFAdd(acc[y], v);
        llvm::cast<llvm::Instruction>(next)->setFastMathFlags(reassoc);
        acc[y]->addIncoming(next, innerBody);
        continue;
      }
      Value *p = b.CreateGEP(elem(t), f.getArg(unsigned(t)), index(t));
      if (plan_.reduced[y]) v = b.CreateFAdd(b.CreateLoad(t_, p), v);
      store(b, t, v, p, llvm::Align(size(t)));
    }
    Value *jNext = b.CreateAdd(j, b.getInt64(1));
    j->addIncoming(jNext, innerBody);
    // One vector iteration per step, not several interleaved: the loop is
    // bound by memory, and its body reads as one load per argument.
    llvm::Metadata *interleave[] = {
        llvm::MDString::get(ctx_, "llvm.loop.interleave.count"),
        llvm::ConstantAsMetadata::get(b.getInt32(1))};
    llvm::MDNode *loop = llvm::MDNode::getDistinct(
        ctx_, {nullptr, llvm::MDNode::get(ctx_, interleave)});
    loop->replaceOperandWith(0, loop);
    b.CreateBr(innerHead)->setMetadata(llvm::LLVMContext::MD_loop, loop);

    b.SetInsertPoint(innerExit);
    for (auto &[y, phi] : acc) {
      Value *p = b.CreateGEP(t_, f.getArg(unsigned(nArgs + y)), base[nArgs + y]);
      b.CreateStore(b.CreateFAdd(b.CreateLoad(t_, p), phi), p);
    }
    m->addIncoming(b.CreateAdd(m, b.getInt64(1)), innerExit);
    b.CreateBr(midHead);

  }

  // A row of a fixed number of lanes (a layout's block) as straight vector
  // code: one vector load per argument that spans the lanes (a splat of one
  // element for the others), the ops on vectors, one vector store per
  // yield. A reduction over the last row dimension (a per-channel sum over
  // the plane) stays in a vector register over the row loop and is added to
  // memory once per prefix; one over the lanes is summed across them.
  void emitLanes(IRBuilder<> &b, llvm::Function &f, const std::vector<Value *> &base,
                 const std::vector<Value *> &prefixBase, llvm::BasicBlock *prefixBody,
                 llvm::BasicBlock *midHead, llvm::BasicBlock *midExit, llvm::PHINode *m) {
    size_t nArgs = body_.inputs().size(), q = plan_.sizes.size();
    unsigned lanes = unsigned(plan_.fixedInner);
    Type *vt = llvm::FixedVectorType::get(t_, lanes);
    llvm::Align align(t_->getPrimitiveSizeInBits() / 8);
    auto vecOf = [&](size_t t) { return llvm::FixedVectorType::get(elem(t), lanes); };
    auto spansLanes = [&](size_t t) { return bool(plan_.spans[t][q - 1]); };
    auto spansMid = [&](size_t t) { return bool(plan_.spans[t][q - 2]); };
    llvm::FastMathFlags reassoc;
    reassoc.setAllowReassoc();
    reassoc.setNoSignedZeros();
    // The row loop's accumulators: reductions that do not span it.
    llvm::BasicBlock *row = b.GetInsertBlock();
    std::map<size_t, llvm::PHINode *> acc;
    b.SetInsertPoint(midHead, midHead->getFirstInsertionPt());
    for (size_t y = 0; y < plan_.reduced.size(); ++y)
      if (plan_.reduced[y] && !spansMid(nArgs + y)) {
        Type *at = spansLanes(nArgs + y) ? vt : t_;
        acc[y] = b.CreatePHI(at, 2, "acc" + std::to_string(y));
        acc[y]->addIncoming(llvm::Constant::getNullValue(at), prefixBody);
      }
    b.SetInsertPoint(row);
    std::map<const ir::Value *, Value *> vals;
    for (size_t i = 0; i < nArgs; ++i) {
      Value *p = b.CreateGEP(elem(i), f.getArg(unsigned(i)), base[i]);
      const std::string name = body_.inputs()[i]->name();
      llvm::Align a(size(i));
      vals[body_.inputs()[i]] = spansLanes(i)
                                    ? load(b, i, vecOf(i), p, a, name)
                                    : b.CreateVectorSplat(lanes, load(b, i, elem(i), p, a, name));
    }
    emitOps(b, vals, vt);
    auto addTo = [&](Value *a, Value *v) {
      Value *sum = b.CreateFAdd(a, v);
      llvm::cast<llvm::Instruction>(sum)->setFastMathFlags(reassoc);
      return sum;
    };
    for (size_t y = 0; y < body_.outputs().size(); ++y) {
      size_t t = nArgs + y;
      Value *v = vals.at(body_.outputs()[y]);
      if (plan_.reduced[y] && !spansLanes(t)) {
        v = b.CreateFAddReduce(llvm::ConstantFP::get(t_, 0.0), v);
        llvm::cast<llvm::Instruction>(v)->setFastMathFlags(reassoc);
      }
      if (acc.count(y)) {
        acc[y]->addIncoming(addTo(acc[y], v), row);
        continue;
      }
      Type *st = spansLanes(t) ? vt : t_;
      Value *p = b.CreateGEP(elem(t), f.getArg(unsigned(t)), base[t]);
      if (plan_.reduced[y]) v = addTo(b.CreateAlignedLoad(st, p, align), v);
      store(b, t, v, p, llvm::Align(size(t)));
    }
    m->addIncoming(b.CreateAdd(m, b.getInt64(1)), row);
    b.CreateBr(midHead);

    // Once per prefix: the row loop's sums into memory.
    b.SetInsertPoint(midExit, midExit->getFirstInsertionPt());
    for (auto &[y, phi] : acc) {
      Type *st = phi->getType();
      Value *p = b.CreateGEP(t_, f.getArg(unsigned(nArgs + y)), prefixBase[nArgs + y]);
      b.CreateAlignedStore(addTo(b.CreateAlignedLoad(st, p, align), phi), p, align);
    }
  }

  // The region's ops on the loaded values, in `type` (a scalar or a vector of
  // the compute type); a bf16 result is rounded to bf16 in registers.
  void emitOps(IRBuilder<> &b, std::map<const ir::Value *, Value *> &vals, Type *type) {
    size_t k = 0;
    for (const auto &op : body_.ops()) {
      std::vector<Value *> in;
      for (const ir::Value *v : op->operands()) in.push_back(vals.at(v));
      Value *r = emitScalarOp(b, m_, *op, in, type);
      vals[op->result(0)] = plan_.roundsToBf16[k++] ? widen(b, narrow(b, r)) : r;
    }
  }

  bool isBf16(size_t t) const { return plan_.stored[t] == ir::DType::BF16; }
  // The element type of tensor t in memory, and its size in bytes.
  Type *elem(size_t t) const { return isBf16(t) ? Type::getInt16Ty(ctx_) : t_; }
  uint64_t size(size_t t) const { return isBf16(t) ? 2 : t_->getPrimitiveSizeInBits() / 8; }

  // Tensor t's element(s) of type `type` (i16 or a vector of them for bf16) at p, in the compute type.
  Value *load(IRBuilder<> &b, size_t t, Type *type, Value *p, llvm::Align a,
              const std::string &name) {
    Value *v = b.CreateAlignedLoad(type, p, a, name);
    return isBf16(t) ? widen(b, v) : v;
  }
  void store(IRBuilder<> &b, size_t t, Value *v, Value *p, llvm::Align a) {
    b.CreateAlignedStore(isBf16(t) ? narrow(b, v) : v, p, a);
  }

  // bf16 bits (i16, or a vector) to f32: the bits shifted up (exact).
  Value *widen(IRBuilder<> &b, Value *bits) {
    Type *i32 = Type::getInt32Ty(ctx_), *f32 = Type::getFloatTy(ctx_);
    if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(bits->getType())) {
      i32 = llvm::FixedVectorType::get(i32, vt->getNumElements());
      f32 = llvm::FixedVectorType::get(f32, vt->getNumElements());
    }
    return b.CreateBitCast(b.CreateShl(b.CreateZExt(bits, i32), 16), f32);
  }
  // f32 (or a vector) to bf16 bits, rounded to nearest even, a NaN kept quiet: as
  // runtime::narrowToBf16.
  Value *narrow(IRBuilder<> &b, Value *x) {
    Type *i32 = Type::getInt32Ty(ctx_), *i16 = Type::getInt16Ty(ctx_);
    if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(x->getType())) {
      i32 = llvm::FixedVectorType::get(i32, vt->getNumElements());
      i16 = llvm::FixedVectorType::get(i16, vt->getNumElements());
    }
    auto k = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
    Value *bits = b.CreateBitCast(x, i32);
    Value *lsb = b.CreateAnd(b.CreateLShr(bits, k(16)), k(1));
    Value *rounded = b.CreateLShr(b.CreateAdd(b.CreateAdd(bits, k(0x7fff)), lsb), k(16));
    Value *nan = b.CreateICmpUGT(b.CreateAnd(bits, k(0x7fffffff)), k(0x7f800000));
    Value *quiet = b.CreateOr(b.CreateLShr(bits, k(16)), k(0x40));
    return b.CreateTrunc(b.CreateSelect(nan, quiet, rounded), i16);
  }

  llvm::Module &m_;
  llvm::LLVMContext &ctx_;
  const ir::Graph &body_;
  const LoopPlan &plan_;
  Type *t_;
  Type *i64_;
  Type *ptr_;
};

} // namespace

Expected<std::unique_ptr<llvm::Module>> buildModule(llvm::LLVMContext &ctx, const ir::Graph &body,
                                                    const LoopPlan &plan, const std::string &name,
                                                    llvm::TargetMachine &tm) {
  auto m = std::make_unique<llvm::Module>("dtnn.fused", ctx);
  m->setDataLayout(tm.createDataLayout());
  m->setTargetTriple(tm.getTargetTriple().str());
  KernelBuilder(*m, body, plan).build(name, tm);
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*m, &os)) return Error::make("the jit made invalid LLVM IR: " + problems);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(*m, mam);
  return m;
}

} // namespace dtnn::jit
