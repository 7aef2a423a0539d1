// Differential cases of the Optimizer family: one update of each optimizer
// (sgd_update, adam_update, adamw_update, rmsprop_update, nadam_update)
// over its options, and the per-step scalars of the fused forms
// (sgd_coefficients, adam_coefficients, adamw_coefficients; fused_update
// itself is DiffMath.cpp's).
//
// An update writes the parameter and its state buffers in place and has no
// results of its own: a case declares them as a param and buffers, which
// the harness sets anew before each run and reads back after it, and its
// graph returns a doubled gradient (exact). The learning rate is a scalar
// input of the parameter's type or f64 (mixed); the step count an i64
// scalar input, at step 1 (SGD's momentum buffer starts at the gradient;
// the bias corrections are largest) and later. Shapes of one element up to
// more than one element per thread of a full grid.
//
// Bounds: running error analysis (Higham, section 3.3) of each formula in
// the reference's order of operations. Each float32 value is carried as its
// exact value (in double) and a bound on its error: operands are exact;
// attributes and per-step scalars (computed in double, then rounded) err by
// u relative; each operation propagates its operands' errors and adds its
// own rounding, u (|result| + error). Each side errs by at most that bound,
// so |a - b| is allowed twice it. A kernel that fuses a product into a sum
// rounds once where the bound counts two, and stays within it.
#include "DiffCases.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace dtnn::test::diff {
namespace {

// A float32 result: its exact value and a bound on its error.
struct Bounded {
  double v = 0, e = 0;
};

// One rounding to float32 of a value that errs by x.e before it: u
// relative, and half the smallest subnormal.
Bounded rounding(Bounded x) { return {x.v, x.e + kU * (std::abs(x.v) + x.e) + 0x1p-150}; }

Bounded exact(double v) { return {v, 0}; }

// What the double-precision scalars may err by, relative: a few roundings
// and pow's few ulps of double, amplified by 1 / (1 - beta^t) at step 1.
constexpr double kDoubleSlack = 0x1p-32;

// An attribute or a per-step scalar rounded to float32, from double.
Bounded scalar(double v) { return rounding({v, kDoubleSlack * std::abs(v)}); }

Bounded operator+(Bounded a, Bounded b) { return rounding({a.v + b.v, a.e + b.e}); }
Bounded operator-(Bounded a, Bounded b) { return rounding({a.v - b.v, a.e + b.e}); }
Bounded operator*(Bounded a, Bounded b) {
  return rounding({a.v * b.v, std::abs(a.v) * b.e + std::abs(b.v) * a.e + a.e * b.e});
}
// b must be bounded away from 0 (b.e < |b.v|).
Bounded operator/(Bounded a, Bounded b) {
  double q = a.v / b.v;
  return rounding({q, (a.e + std::abs(q) * b.e) / (std::abs(b.v) - b.e)});
}
// |sqrt(x') - sqrt(x)| <= |x' - x| / sqrt(x), and <= sqrt(|x' - x|).
Bounded sqrtOf(Bounded a) {
  double r = std::sqrt(std::max(a.v, 0.0));
  double e = r > 0 ? std::min(std::sqrt(a.e), a.e / r) : std::sqrt(a.e);
  return rounding({r, e});
}
// A selection: no rounding.
Bounded maxOf(Bounded a, Bounded b) { return {std::max(a.v, b.v), std::max(a.e, b.e)}; }

// The case's operands at element i (a scalar operand at its only element).
struct Elem {
  const Eval &e;
  size_t i;
  Bounded operator[](const std::string &name) const {
    const std::vector<double> &v = e.values(name);
    return exact(v[v.size() == 1 ? 0 : i]);
  }
  double value(const std::string &name) const { return e.values(name)[0]; }
};

// The new values of the written operands at one element (the parameter, then
// the state buffers in operand order; a scalar state's is read at element 0).
using Update = std::function<std::vector<Bounded>(const Elem &x)>;

// The bounds of an update case: the doubled gradient is exact, each read
// back operand within twice its bound.
Tolerance updateBounds(Update update) {
  return [update](const Eval &e) {
    Allowed a;
    for (const auto &out : e.exact) a.emplace_back(out.size(), 0.0);
    for (size_t i = 0; i < a[1].size(); ++i) {
      std::vector<Bounded> out = update(Elem{e, i});
      for (size_t k = 0; k < out.size(); ++k)
        if (i < a[k + 1].size()) a[k + 1][i] = 2 * out[k].e;
    }
    return a;
  };
}

// The bounds of a coefficients case: every result a scalar computed in
// double and rounded once.
Tolerance roundedOnce() {
  return [](const Eval &e) {
    Allowed a;
    for (const auto &out : e.exact) {
      a.emplace_back();
      for (double v : out) a.back().push_back(2 * scalar(v).e);
    }
    return a;
  };
}

// How an update case's data is made.
struct Data {
  std::vector<int64_t> dims;
  double lr;          // float32-representable, or any with lrF64
  bool lrF64 = false; // the learning rate is f64 whatever the parameter's type
  int64_t step = 0;   // 0: no step operand
};

// A state buffer of an update: its name and values.
struct State {
  std::string name;
  std::vector<double> values;
  bool scalar = false;
};

Operand stepInput(int64_t step) {
  Operand o = input("step", {}, {static_cast<double>(step)});
  o.dtype = "i64";
  return o;
}

// `op` %p, %g, %lr [, %step], @states.. {attrs} on a parameter p and a
// gradient g of rng's values.
Case updateCase(const std::string &op, const std::string &attrs, const Data &d,
                const std::vector<State> &states, Rng &rng, Update update) {
  int64_t n = numel(d.dims);
  Operand p = param("p", d.dims, rng.values(n, -2, 2));
  p.readBack = true;
  Operand lr = input("lr", {}, {d.lr});
  if (d.lrF64) lr.dtype = "f64";
  Case c;
  c.op = op;
  c.label = dimsText(d.dims) + (d.step ? " step=" + std::to_string(d.step) : "") +
            (d.lrF64 ? " lr:f64" : "") + " " + attrs;
  c.operands = {p, input("g", d.dims, rng.values(n, -1, 1)), lr};
  std::string line = op + " @p, %g, %lr", types = typeText(d.dims);
  if (d.step) {
    c.operands.push_back(stepInput(d.step));
    line += ", %step";
  }
  for (const State &s : states) {
    Operand o = param(s.name, s.scalar ? std::vector<int64_t>{} : d.dims, s.values);
    o.isBuffer = o.readBack = true;
    c.operands.push_back(o);
    line += ", @" + s.name;
    types += ", " + typeText(o.dims);
  }
  std::string lhs;
  for (size_t k = 0; k <= states.size(); ++k) lhs += (k ? ", %" : "%") + std::to_string(k);
  std::string doubled = "%" + std::to_string(states.size() + 1);
  c.body = {lhs + " = " + line + " " + attrs + " : " + types,
            doubled + " = add %g, %g : " + typeText(d.dims)};
  c.results = {doubled};
  c.resultDims = {d.dims};
  c.tolerance = updateBounds(std::move(update));
  return c;
}

std::string boolText(bool v) { return v ? "true" : "false"; }

// ---------------------------------------------------------------------------
// sgd_update: d = g + wd p; buf = d on step 1, else momentum buf +
// (1 - dampening) d; d = nesterov ? d + momentum buf : buf; p -= lr d.
// Without momentum (no step, no buffer): p -= lr (g + wd p).
struct Sgd {
  double momentum = 0, dampening = 0, weightDecay = 0;
  bool nesterov = false;
  std::string attrs() const {
    return "{momentum=" + floatText(momentum) + ", dampening=" + floatText(dampening) +
           ", nesterov=" + boolText(nesterov) + ", weight_decay=" + floatText(weightDecay) + "}";
  }
};

Case sgdCase(const Sgd &h, Data d, Rng &rng) {
  bool momentum = static_cast<float>(h.momentum) != 0;
  std::vector<State> states;
  if (h.momentum != 0) states.push_back({"buf", rng.values(numel(d.dims), -1, 1)});
  else d.step = 0;
  return updateCase("sgd_update", h.attrs(), d, states, rng, [h, d, momentum](const Elem &x) {
    Bounded p = x["p"], g = x["g"], lr = scalar(d.lr), wd = scalar(h.weightDecay);
    if (!momentum) return std::vector<Bounded>{p - lr * (g + wd * p)};
    Bounded mom = scalar(h.momentum);
    Bounded dir = h.weightDecay != 0 ? g + wd * p : g;
    Bounded buf = d.step <= 1 ? dir : mom * x["buf"] + scalar(1 - h.dampening) * dir;
    dir = h.nesterov ? dir + mom * buf : buf;
    return std::vector<Bounded>{p - lr * dir, buf};
  });
}

// ---------------------------------------------------------------------------
// adam_update and adamw_update: p *= 1 - lr wd first (AdamW), g += wd p
// (Adam); m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g g; with amsgrad
// max_v = max(max_v, v) replaces v below; p -= lr / (1 - b1^t) *
// (m / (sqrt(v) / sqrt(1 - b2^t) + eps)).
struct Adam {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0;
  bool amsgrad = false;
  std::string attrs() const {
    return "{beta1=" + floatText(beta1) + ", beta2=" + floatText(beta2) + ", eps=" +
           floatText(eps) + ", weight_decay=" + floatText(weightDecay) +
           ", amsgrad=" + boolText(amsgrad) + "}";
  }
};

Case adamCase(const Adam &h, bool decoupled, Data d, Rng &rng) {
  int64_t n = numel(d.dims);
  std::vector<State> states = {{"m", rng.values(n, -0.5, 0.5)}, {"v", rng.values(n, 0, 0.5)}};
  if (h.amsgrad) states.push_back({"max_v", rng.values(n, 0, 0.5)});
  std::string op = decoupled ? "adamw_update" : "adam_update";
  return updateCase(op, h.attrs(), d, states, rng, [h, d, decoupled](const Elem &x) {
    double t = static_cast<double>(d.step);
    Bounded p = x["p"], g = x["g"];
    double decay = 1 - d.lr * h.weightDecay;
    if (decoupled && static_cast<float>(decay) != 1) p = p * scalar(decay);
    if (!decoupled && static_cast<float>(h.weightDecay) != 0) g = g + scalar(h.weightDecay) * p;
    Bounded m = scalar(h.beta1) * x["m"] + scalar(1 - h.beta1) * g;
    Bounded v = scalar(h.beta2) * x["v"] + scalar(1 - h.beta2) * g * g;
    Bounded second = h.amsgrad ? maxOf(x["max_v"], v) : v;
    Bounded stepSize = scalar(d.lr / (1 - std::pow(h.beta1, t)));
    Bounded bc2Sqrt = scalar(std::sqrt(1 - std::pow(h.beta2, t)));
    p = p - stepSize * (m / (sqrtOf(second) / bc2Sqrt + scalar(h.eps)));
    std::vector<Bounded> out = {p, m, v};
    if (h.amsgrad) out.push_back(second);
    return out;
  });
}

// ---------------------------------------------------------------------------
// rmsprop_update: g += wd p; sq = alpha sq + (1 - alpha) g g; avg =
// sqrt(sq) + eps, or centered ga = ga alpha + (1 - alpha) g, avg =
// sqrt(sq - ga ga) + eps; with momentum buf = momentum buf + g / avg,
// p -= lr buf; else p -= lr (g / avg). States: square_avg, momentum_buf
// (momentum > 0), grad_avg (centered).
struct Rmsprop {
  double alpha = 0.99, eps = 1e-8, weightDecay = 0, momentum = 0;
  bool centered = false;
  std::string attrs() const {
    return "{alpha=" + floatText(alpha) + ", eps=" + floatText(eps) + ", weight_decay=" +
           floatText(weightDecay) + ", momentum=" + floatText(momentum) +
           ", centered=" + boolText(centered) + "}";
  }
};

Case rmspropCase(const Rmsprop &h, Data d, Rng &rng) {
  int64_t n = numel(d.dims);
  // Centered: sq in [1, 2) and |ga| <= 0.5 before the step leave sq >=
  // alpha and |ga| <= alpha / 2 + 1 - alpha after it, sq - ga^2 away from 0.
  std::vector<State> states = {{"sq", h.centered ? rng.values(n, 1, 2) : rng.values(n, 0, 1)}};
  if (h.momentum != 0) states.push_back({"buf", rng.values(n, -1, 1)});
  if (h.centered) states.push_back({"ga", rng.values(n, -0.5, 0.5)});
  d.step = 0;
  return updateCase("rmsprop_update", h.attrs(), d, states, rng, [h, d](const Elem &x) {
    Bounded p = x["p"], g = x["g"], keep = scalar(h.alpha), mix = scalar(1 - h.alpha);
    if (static_cast<float>(h.weightDecay) != 0) g = g + scalar(h.weightDecay) * p;
    Bounded sq = keep * x["sq"] + mix * g * g, ga;
    Bounded avg;
    if (h.centered) {
      ga = x["ga"] * keep + mix * g;
      avg = sqrtOf(sq - ga * ga) + scalar(h.eps);
    } else {
      avg = sqrtOf(sq) + scalar(h.eps);
    }
    std::vector<Bounded> out = {p, sq};
    if (h.momentum != 0) {
      Bounded buf = scalar(h.momentum) * x["buf"] + g / avg;
      out[0] = p - scalar(d.lr) * buf;
      out.push_back(buf);
    } else {
      out[0] = p - scalar(d.lr) * (g / avg);
    }
    if (h.centered) out.push_back(ga);
    return out;
  });
}

// ---------------------------------------------------------------------------
// nadam_update, with mu_t = b1 (1 - 0.5 * 0.96^(t md)): mu_product *=
// mu_t (rounded to the parameter's type; the step factors are computed in
// double from the rounded product); g += wd p; m, v as Adam; denom =
// sqrt(v / (1 - b2^t)) + eps; p += -lr (1 - mu_t) / (1 - mu_product)
// (g / denom); p += -lr mu_{t+1} / (1 - mu_product mu_{t+1}) (m / denom).
struct Nadam {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0, momentumDecay = 0.004;
  std::string attrs() const {
    return "{beta1=" + floatText(beta1) + ", beta2=" + floatText(beta2) + ", eps=" +
           floatText(eps) + ", weight_decay=" + floatText(weightDecay) +
           ", momentum_decay=" + floatText(momentumDecay) + "}";
  }
  double mu(double t) const { return beta1 * (1 - 0.5 * std::pow(0.96, t * momentumDecay)); }
};

Case nadamCase(const Nadam &h, Data d, Rng &rng) {
  int64_t n = numel(d.dims);
  // mu_product as the steps before this one left it.
  double product = 1;
  for (int64_t t = 1; t < d.step; ++t) product = static_cast<float>(product * h.mu(double(t)));
  std::vector<State> states = {{"m", rng.values(n, -0.5, 0.5)},
                               {"v", rng.values(n, 0, 0.5)},
                               {"mu_product", {product}, true}};
  return updateCase("nadam_update", h.attrs(), d, states, rng, [h, d](const Elem &x) {
    double t = static_cast<double>(d.step), mu = h.mu(t), muNext = h.mu(t + 1);
    Bounded prod = scalar(x.value("mu_product") * mu);
    // The step factors move with the rounded product: |f(p') - f(p)| <=
    // |f(p)| |p' - p| / (1 - p - |p' - p|) for f = c / (1 - p), and with
    // p mu_{t+1} in place of p for the momentum's.
    double gradStep = -d.lr * (1 - mu) / (1 - prod.v);
    double momentumStep = -d.lr * muNext / (1 - prod.v * muNext);
    Bounded gs = rounding({gradStep, kDoubleSlack * std::abs(gradStep) +
                                         std::abs(gradStep) * prod.e / (1 - prod.v - prod.e)});
    Bounded ms = rounding(
        {momentumStep, kDoubleSlack * std::abs(momentumStep) +
                           std::abs(momentumStep) * muNext * prod.e /
                               (1 - (prod.v + prod.e) * muNext)});
    Bounded p = x["p"], g = x["g"];
    if (static_cast<float>(h.weightDecay) != 0) g = g + scalar(h.weightDecay) * p;
    Bounded m = scalar(h.beta1) * x["m"] + scalar(1 - h.beta1) * g;
    Bounded v = scalar(h.beta2) * x["v"] + scalar(1 - h.beta2) * g * g;
    Bounded denom = sqrtOf(v / scalar(1 - std::pow(h.beta2, t))) + scalar(h.eps);
    p = p + gs * (g / denom);
    p = p + ms * (m / denom);
    return std::vector<Bounded>{p, m, v, prod};
  });
}

// ---------------------------------------------------------------------------
// The coefficients ops: `<opt>_coefficients %lr, %step` yields scalars of
// lr's type, each computed in double and rounded once (roundedOnce).
Case coefficientsCase(const std::string &opt, const std::string &attrs, double lr, int64_t step,
                      size_t results) {
  std::vector<std::vector<int64_t>> dims(results, std::vector<int64_t>{});
  Case c = oneOp(opt + "_coefficients", "step=" + std::to_string(step) + " " + attrs,
                 {input("lr", {}, {lr}), stepInput(step)},
                 opt + "_coefficients %lr, %step " + attrs, dims);
  c.tolerance = roundedOnce();
  return c;
}

} // namespace

std::vector<Case> optimizerCases() {
  std::vector<Case> cases;
  Rng rng{0x0971312e};
  const double lr = 0x1.99999ap-5; // 0.05 in float32
  const double lrF64 = 0.03;       // not a float32: its rounding to the parameter's type counts

  // SGD: plain (with and without decay, an f64 lr); momentum on the first
  // step (the buffer takes the gradient) and later, with dampening, and
  // Nesterov's; a parameter larger than a full grid.
  cases.push_back(sgdCase({}, {{5, 7}, lr}, rng));
  cases.push_back(sgdCase({.weightDecay = 0.01}, {{3, 4, 5}, lrF64, true}, rng));
  cases.push_back(sgdCase({.momentum = 0.9, .dampening = 0.1, .weightDecay = 1e-3},
                          {{6, 11}, lr, false, 1}, rng));
  cases.push_back(sgdCase({.momentum = 0.9, .dampening = 0.1}, {{1000}, lr, false, 4}, rng));
  cases.push_back(sgdCase({.momentum = 0.9, .weightDecay = 5e-4, .nesterov = true},
                          {{4, 9}, lrF64, true, 3}, rng));
  cases.push_back(sgdCase({.momentum = 0.5}, {{530000}, lr, false, 2}, rng));

  // Adam and AdamW: the first step and later ones, L2 and decoupled decay,
  // amsgrad (beta2 = 0.5 lets v fall below max_v), an f64 lr.
  cases.push_back(adamCase({}, false, {{5, 7}, lr, false, 1}, rng));
  cases.push_back(adamCase({.beta2 = 0.5, .weightDecay = 0.01, .amsgrad = true}, false,
                           {{3, 17}, lr, false, 10}, rng));
  cases.push_back(adamCase({.weightDecay = 0.01}, true, {{2, 3, 5}, lrF64, true, 3}, rng));
  cases.push_back(adamCase({.beta1 = 0.8, .beta2 = 0.5, .eps = 1e-6, .weightDecay = 0.1,
                            .amsgrad = true},
                           true, {{64}, lr, false, 7}, rng));
  cases.push_back(adamCase({.weightDecay = 0}, true, {{530000}, lr, false, 2}, rng));

  // RMSprop: plain, with momentum and decay, centered with and without
  // momentum, alpha = 1 (square_avg kept), an f64 lr.
  cases.push_back(rmspropCase({}, {{5, 7}, lr}, rng));
  cases.push_back(rmspropCase({.weightDecay = 0.01, .momentum = 0.9}, {{40}, lr}, rng));
  cases.push_back(rmspropCase({.momentum = 0.5, .centered = true}, {{3, 13}, lr}, rng));
  cases.push_back(rmspropCase({.alpha = 0.9, .eps = 1e-4, .centered = true},
                              {{2, 2, 3}, lrF64, true}, rng));
  cases.push_back(rmspropCase({.alpha = 1}, {{9}, lr}, rng));

  // NAdam: the first step (mu_product 1), a later one with decay and an f64
  // lr, one element.
  cases.push_back(nadamCase({}, {{5, 7}, lr, false, 1}, rng));
  cases.push_back(nadamCase({.weightDecay = 0.01, .momentumDecay = 0.04}, {{3, 11}, lrF64, true, 5},
                            rng));
  cases.push_back(nadamCase({.beta1 = 0.8, .beta2 = 0.9}, {{1}, lr, false, 2}, rng));

  // The coefficients, on the first step and a later one.
  std::string sgd = Sgd{.momentum = 0.9, .dampening = 0.1, .weightDecay = 1e-4}.attrs();
  cases.push_back(coefficientsCase("sgd", sgd, lr, 1, 5));
  cases.push_back(coefficientsCase("sgd", sgd, lr, 6, 5));
  std::string adam = Adam{.weightDecay = 0.01}.attrs();
  cases.push_back(coefficientsCase("adam", adam, lr, 1, 9));
  cases.push_back(coefficientsCase("adam", Adam{.beta1 = 0.8, .beta2 = 0.99}.attrs(), lr, 12, 9));
  cases.push_back(coefficientsCase("adamw", adam, lr, 1, 9));
  cases.push_back(coefficientsCase("adamw", adam, lr, 30, 9));
  return cases;
}

} // namespace dtnn::test::diff
