// Differential cases of the Shape family: flatten, reshape, reshape_like,
// transpose, slice, slice_backward, and concat where DiffBinary.cpp's cases
// leave a layout out. Every result element is an operand element moved (or
// a zero of slice_backward), so every output must match exactly. The shapes
// reach each path of a backend that moves bytes by shape: reshapes in place
// or copied, transposes that move the innermost dimension (tiles, with
// partial tiles at the edges) or keep it (rows gathered), permutations with
// dimensions of size 1 and dimensions that stay together, and slices and
// concats along the first, a middle and the last axis.
#include "DiffCases.h"

#include "runtime/BFloat16.h"

namespace dtnn::test::diff {

namespace {

// The dimensions of x transposed by perm: result dimension i is x's perm[i].
std::vector<int64_t> permuted(const std::vector<int64_t> &x, const std::vector<int64_t> &perm) {
  std::vector<int64_t> out;
  for (int64_t p : perm) out.push_back(x[p]);
  return out;
}

// The dimensions of x with [begin, end) kept along axis.
std::vector<int64_t> sliced(std::vector<int64_t> x, int64_t axis, int64_t begin, int64_t end) {
  int64_t r = static_cast<int64_t>(x.size());
  x[axis < 0 ? axis + r : axis] = end - begin;
  return x;
}

std::string sliceAttrs(int64_t axis, int64_t begin, int64_t end) {
  return "{axis=" + std::to_string(axis) + ", begin=" + std::to_string(begin) +
         ", end=" + std::to_string(end) + "}";
}

void reshapeCases(std::vector<Case> &cases, Rng &rng) {
  struct Flatten {
    std::vector<int64_t> x;
    int64_t axis, end;
    std::vector<int64_t> out;
  };
  const std::vector<Flatten> flattens = {
      {{2, 3, 4, 5}, 1, -1, {2, 60}},
      {{2, 3, 4, 5}, 0, 1, {6, 4, 5}},
      {{2, 3, 4, 5}, 2, 3, {2, 3, 20}},
      {{7}, 0, -1, {7}},
      {{4, 16, 1, 1}, 1, -1, {4, 16}},
  };
  for (const Flatten &f : flattens) {
    std::string attrs = "{axis=" + std::to_string(f.axis) + ", end_axis=" + std::to_string(f.end) + "}";
    Case c = oneOp("flatten", "x=" + dimsText(f.x) + " " + attrs,
                   {input("x", f.x, rng.values(numel(f.x), -2, 2))}, "flatten %x " + attrs, {f.out});
    c.tolerance = exactly();
    cases.push_back(c);
  }
  struct Reshape {
    std::vector<int64_t> x, shape, out;
  };
  const std::vector<Reshape> reshapes = {
      {{2, 3, 4, 5}, {6, -1}, {6, 20}},
      {{12, 5}, {3, 4, 5}, {3, 4, 5}},
      {{24}, {2, -1, 4}, {2, 3, 4}},
      {{8, 16, 12}, {8, 16, 3, 4}, {8, 16, 3, 4}},
  };
  for (const Reshape &r : reshapes) {
    std::string attrs = "{shape=" + intsText(r.shape) + "}";
    Case c = oneOp("reshape", "x=" + dimsText(r.x) + " " + attrs,
                   {input("x", r.x, rng.values(numel(r.x), -2, 2))}, "reshape %x " + attrs, {r.out});
    c.tolerance = exactly();
    cases.push_back(c);
  }
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> likes = {
      {{6, 4}, {2, 3, 4}}, {{2, 3, 4}, {24}}, {{4, 60}, {4, 3, 4, 5}}};
  for (const auto &[x, like] : likes) {
    Case c = oneOp("reshape_like", "x=" + dimsText(x) + " like=" + dimsText(like),
                   {input("x", x, rng.values(numel(x), -2, 2)),
                    input("like", like, rng.values(numel(like), -2, 2))},
                   "reshape_like %x, %like", {like});
    c.tolerance = exactly();
    cases.push_back(c);
  }
}

void transposeCases(std::vector<Case> &cases, Rng &rng) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{7, 13}, {1, 0}},                   // one partial tile
      {{40, 70}, {1, 0}},                  // several tiles, partial at both edges
      {{4, 33, 40}, {0, 2, 1}},            // batched last-two swap
      {{2, 3, 5, 7}, {0, 1, 3, 2}},        // the leading dimensions merge
      {{2, 8, 6, 4}, {0, 2, 1, 3}},        // attention heads: rows of 4 gathered
      {{2, 6, 8, 5}, {0, 2, 1, 3}},        // rows of 5 (odd width)
      {{2, 3, 5, 7}, {3, 2, 1, 0}},        // reversed
      {{3, 4, 5}, {1, 2, 0}},              // merges into one swap
      {{2, 1, 5, 7}, {1, 0, 3, 2}},        // a dimension of size 1
      {{1, 9}, {1, 0}},                    // only a size 1 moves: a copy
      {{3, 4}, {0, 1}},                    // the identity
      {{2, 3, 4, 5, 6}, {4, 0, 3, 1, 2}},  // rank 5, innermost moves
      {{3, 2, 4, 5, 6}, {2, 0, 3, 1, 4}},  // rank 5, innermost stays
  };
  for (const auto &[x, perm] : shapes) {
    std::string attrs = "{perm=" + intsText(perm) + "}";
    Case c = oneOp("transpose", "x=" + dimsText(x) + " " + attrs,
                   {input("x", x, rng.values(numel(x), -2, 2))}, "transpose %x " + attrs,
                   {permuted(x, perm)});
    c.tolerance = exactly();
    cases.push_back(c);
  }
}

void sliceCases(std::vector<Case> &cases, Rng &rng) {
  struct Slice {
    std::vector<int64_t> x;
    int64_t axis, begin, end;
  };
  const std::vector<Slice> slices = {
      {{2, 9, 5}, 1, 2, 7},     // a middle axis
      {{2, 9, 5}, -1, 1, 4},    // the last axis, negative
      {{3, 4}, 0, 1, 2},        // the first axis: one contiguous block
      {{8, 12}, 1, 0, 4},       // from the start of each row
      {{8, 12}, 1, 8, 12},      // to the end of each row
      {{2, 3, 4, 5}, 2, 3, 4},  // one step of a middle axis
      {{4, 6, 7}, 1, 0, 6},     // the whole axis
      {{6, 24}, 1, 6, 15},      // odd widths
  };
  for (const Slice &s : slices) {
    std::string attrs = sliceAttrs(s.axis, s.begin, s.end);
    std::vector<int64_t> part = sliced(s.x, s.axis, s.begin, s.end);
    Case c = oneOp("slice", "x=" + dimsText(s.x) + " " + attrs,
                   {input("x", s.x, rng.values(numel(s.x), -2, 2))}, "slice %x " + attrs, {part});
    c.tolerance = exactly();
    cases.push_back(c);
    Case b = oneOp("slice_backward", "x=" + dimsText(s.x) + " " + attrs,
                   {input("dy", part, rng.values(numel(part), -2, 2)),
                    input("x", s.x, rng.values(numel(s.x), -2, 2))},
                   "slice_backward %dy, %x " + attrs, {s.x});
    b.tolerance = exactly();
    cases.push_back(b);
  }
}

// concat layouts beside DiffBinary.cpp's: many inputs one element wide along the last axis, a
// single input, and rank 1.
void moreConcatCases(std::vector<Case> &cases, Rng &rng) {
  struct Concat {
    std::vector<std::vector<int64_t>> in;
    int64_t axis;
  };
  const std::vector<Concat> concats = {
      {{{5, 3, 1}, {5, 3, 1}, {5, 3, 2}, {5, 3, 1}}, 2},
      {{{4, 6}}, 1},
      {{{5}, {3}, {8}}, 0},
      {{{2, 3, 4}, {2, 5, 4}}, -2},
  };
  for (const Concat &s : concats) {
    int64_t r = static_cast<int64_t>(s.in[0].size());
    int64_t axis = s.axis < 0 ? s.axis + r : s.axis;
    std::vector<int64_t> out = s.in[0];
    out[axis] = 0;
    std::vector<Operand> ops;
    std::string line = "concat", label;
    for (size_t i = 0; i < s.in.size(); ++i) {
      out[axis] += s.in[i][axis];
      std::string name = std::string(1, static_cast<char>('a' + i));
      ops.push_back(input(name, s.in[i], rng.values(numel(s.in[i]), -2, 2)));
      line += (i ? ", %" : " %") + name;
      label += (i ? " + " : "") + dimsText(s.in[i]);
    }
    line += " {axis=" + std::to_string(s.axis) + "}";
    Case c = oneOp("concat", label + " axis=" + std::to_string(s.axis), ops, line, {out});
    c.tolerance = exactly();
    cases.push_back(c);
  }
}

} // namespace

// cast from the case's type to bf16 and back, and from bf16 to the case's type: narrowing rounds
// to nearest even on both sides and widening is exact, so the results match bit for bit.
std::vector<Case> castCases() {
  std::vector<Case> cases;
  Rng rng{0xca57};
  for (const std::vector<int64_t> &d : {std::vector<int64_t>{7}, {3, 5, 17}, {2, 16, 9, 9}}) {
    std::vector<double> v = rng.values(numel(d), -3, 3);
    v[0] = 1.0 + 0x1p-8;  // a tie: rounds to the even 1.0
    v[1] = 1.0 + 0x3p-8;  // a tie: rounds to the even 1 + 2^-6
    Case narrow;
    narrow.op = "cast";
    narrow.label = "to bf16 and back " + dimsText(d);
    narrow.operands = {input("x", d, v)};
    narrow.body = {"%n = cast %x {to=\"bf16\"} : bf16" + dimsText(d),
                   "%0 = cast %n {to=\"$T\"} : " + typeText(d)};
    narrow.results = {"%0"};
    narrow.resultDims = {d};
    narrow.tolerance = exactly();
    cases.push_back(narrow);
    for (double &x : v) x = runtime::roundToBf16(static_cast<float>(x));
    Operand x = input("x", d, v);
    x.dtype = "bf16";
    Case widen = oneOp("cast", "from bf16 " + dimsText(d), {x}, "cast %x {to=\"$T\"}", {d});
    widen.tolerance = exactly();
    cases.push_back(widen);
  }
  return cases;
}

std::vector<Case> shapeCases() {
  std::vector<Case> cases;
  Rng rng{0x5a9e};
  reshapeCases(cases, rng);
  transposeCases(cases, rng);
  sliceCases(cases, rng);
  moreConcatCases(cases, rng);
  return cases;
}

} // namespace dtnn::test::diff
