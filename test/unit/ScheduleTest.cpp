// Tests of the learning-rate schedules and early stopping: each schedule
// against hand-computed values, warm-up ramps and hand-off, the plateau
// schedule's reductions and checkpoint state, and every error message.
#include "runtime/train/Schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

using namespace dtnn;
using namespace dtnn::runtime;
using ir::AttrMap;
using ir::AttrValue;

namespace {

AttrMap args(std::initializer_list<std::pair<std::string, AttrValue>> entries) {
  AttrMap m;
  for (const auto &[k, v] : entries) m.set(k, v);
  return m;
}

std::unique_ptr<LrSchedule> make(const std::string &name, AttrMap a, double base = 1.0,
                                 int64_t epochs = 100) {
  auto s = makeSchedule({name, std::move(a)}, base, epochs);
  EXPECT_TRUE(s) << s.error().message();
  return s ? std::move(*s) : nullptr;
}

std::string errorOf(const std::string &name, AttrMap a, double base = 1.0) {
  auto s = makeSchedule({name, std::move(a)}, base, 100);
  return s ? "<no error>" : s.error().message();
}

// The rate at the first step of `epoch`.
double at(const LrSchedule &s, int64_t epoch) { return s.lr(epoch, 0, 10); }

} // namespace

TEST(Schedule, Names) {
  EXPECT_EQ(scheduleNames(),
            std::vector<std::string>({"constant", "cosine", "exponential", "multistep",
                                      "reduce_on_plateau", "step", "warmup"}));
}

TEST(Schedule, Constant) {
  auto s = make("", {}, 0.05);
  EXPECT_EQ(at(*s, 0), 0.05);
  EXPECT_EQ(s->lr(99, 7, 10), 0.05);
  EXPECT_EQ(at(*make("constant", {}, 0.05), 42), 0.05);
}

TEST(Schedule, Step) {
  auto s = make("step", args({{"step_size", int64_t(30)}}), 0.1);
  EXPECT_DOUBLE_EQ(at(*s, 0), 0.1);
  EXPECT_DOUBLE_EQ(at(*s, 29), 0.1);
  EXPECT_DOUBLE_EQ(s->lr(29, 9, 10), 0.1);
  EXPECT_DOUBLE_EQ(at(*s, 30), 0.01);
  EXPECT_DOUBLE_EQ(at(*s, 59), 0.01);
  EXPECT_DOUBLE_EQ(at(*s, 60), 0.001);
  auto half = make("step", args({{"step_size", int64_t(2)}, {"gamma", 0.5}}));
  EXPECT_EQ(at(*half, 1), 1.0);
  EXPECT_EQ(at(*half, 2), 0.5);
  EXPECT_EQ(at(*half, 5), 0.25);
}

TEST(Schedule, Multistep) {
  auto s = make("multistep", args({{"milestones", std::vector<int64_t>{2, 5}}, {"gamma", 0.5}}));
  EXPECT_EQ(at(*s, 0), 1.0);
  EXPECT_EQ(at(*s, 1), 1.0);
  EXPECT_EQ(at(*s, 2), 0.5);
  EXPECT_EQ(at(*s, 4), 0.5);
  EXPECT_EQ(at(*s, 5), 0.25);
  EXPECT_EQ(at(*s, 50), 0.25);
  // A single integer is a one-element list; gamma defaults to 0.1.
  auto one = make("multistep", args({{"milestones", int64_t(3)}}), 2.0);
  EXPECT_DOUBLE_EQ(at(*one, 3), 0.2);
}

TEST(Schedule, Exponential) {
  auto s = make("exponential", args({{"gamma", 0.9}}));
  EXPECT_EQ(at(*s, 0), 1.0);
  EXPECT_DOUBLE_EQ(at(*s, 1), 0.9);
  EXPECT_DOUBLE_EQ(at(*s, 3), 0.729);
}

TEST(Schedule, Cosine) {
  auto s = make("cosine", args({{"t_max", int64_t(10)}, {"eta_min", 0.01}}), 0.11);
  EXPECT_DOUBLE_EQ(at(*s, 0), 0.11);
  EXPECT_DOUBLE_EQ(at(*s, 5), 0.06);
  EXPECT_DOUBLE_EQ(at(*s, 10), 0.01);
  // t_max defaults to the run's epochs; eta_min to 0.
  auto d = make("cosine", {}, 1.0, 20);
  EXPECT_DOUBLE_EQ(at(*d, 10), 0.5);
  EXPECT_NEAR(at(*d, 20), 0.0, 1e-15);
  // An integer eta_min reads as a number.
  EXPECT_DOUBLE_EQ(at(*make("cosine", args({{"eta_min", int64_t(0)}}), 1.0, 4), 2), 0.5);
}

TEST(Schedule, CosinePerStep) {
  // per_step: epoch e's step s of n is at e + s / n, so the rate falls within an epoch.
  auto s = make("cosine", args({{"t_max", int64_t(2)}, {"per_step", true}}), 1.0);
  EXPECT_EQ(s->lr(0, 0, 4), 1.0);
  EXPECT_DOUBLE_EQ(s->lr(0, 2, 4), (1 + std::cos(std::numbers::pi / 4)) / 2);
  EXPECT_DOUBLE_EQ(s->lr(1, 0, 4), 0.5);
  EXPECT_DOUBLE_EQ(s->lr(1, 3, 4), (1 + std::cos(std::numbers::pi * 1.75 / 2)) / 2);
  // Without it the rate holds for a whole epoch.
  auto e = make("cosine", args({{"t_max", int64_t(2)}, {"per_step", false}}), 1.0);
  EXPECT_EQ(e->lr(0, 2, 4), 1.0);
  // After a warm-up, step by step from the warm-up's end.
  auto w = make("cosine", args({{"warmup", int64_t(1)}, {"per_step", true}}), 1.0, 3);
  EXPECT_EQ(w->lr(1, 0, 4), 1.0);
  EXPECT_DOUBLE_EQ(w->lr(1, 2, 4), (1 + std::cos(std::numbers::pi * 0.5 / 2)) / 2);
  EXPECT_EQ(errorOf("cosine", args({{"per_step", int64_t(1)}})),
            "schedule 'cosine' argument 'per_step' must be true or false, got 1");
}

TEST(Schedule, WarmupRampsPerStep) {
  // 2 epochs of 4 steps: lr = 0.1 + 0.9 * step / 8.
  auto s = make("constant", args({{"warmup", int64_t(2)}}));
  EXPECT_DOUBLE_EQ(s->lr(0, 0, 4), 0.1);
  EXPECT_DOUBLE_EQ(s->lr(0, 1, 4), 0.2125);
  EXPECT_DOUBLE_EQ(s->lr(1, 0, 4), 0.55);
  EXPECT_DOUBLE_EQ(s->lr(1, 3, 4), 0.8875);
  EXPECT_EQ(s->lr(2, 0, 4), 1.0);
  EXPECT_EQ(s->lr(50, 3, 4), 1.0);
}

TEST(Schedule, WarmupStandalone) {
  auto s = make("warmup", args({{"epochs", int64_t(1)}, {"start_factor", 0.5}}));
  EXPECT_DOUBLE_EQ(s->lr(0, 0, 2), 0.5);
  EXPECT_DOUBLE_EQ(s->lr(0, 1, 2), 0.75);
  EXPECT_EQ(s->lr(1, 0, 2), 1.0);
  // Defaults: 5 epochs from 0.1.
  auto d = make("warmup", {});
  EXPECT_DOUBLE_EQ(d->lr(0, 0, 10), 0.1);
  EXPECT_DOUBLE_EQ(d->lr(4, 9, 10), 0.1 + 0.9 * 49.0 / 50.0);
  EXPECT_EQ(d->lr(5, 0, 10), 1.0);
}

TEST(Schedule, WarmupHandsOffToTheSchedule) {
  // The wrapped schedule counts its epochs from the end of the warm-up.
  auto s =
      make("step",
           args({{"step_size", int64_t(3)}, {"warmup", int64_t(2)}, {"warmup_start_factor", 0.5}}));
  EXPECT_DOUBLE_EQ(s->lr(0, 0, 10), 0.5);
  EXPECT_EQ(s->lr(2, 0, 10), 1.0);
  EXPECT_EQ(s->lr(4, 9, 10), 1.0);
  EXPECT_DOUBLE_EQ(s->lr(5, 0, 10), 0.1);
  // cosine's default t_max is the epochs left after warm-up.
  auto c = make("cosine", args({{"warmup", int64_t(2)}}), 1.0, 12);
  EXPECT_EQ(at(*c, 2), 1.0);
  EXPECT_DOUBLE_EQ(at(*c, 7), 0.5);
  EXPECT_NEAR(at(*c, 12), 0.0, 1e-15);
}

TEST(Schedule, PlateauReducesAfterPatiencePlusOneBadEpochs) {
  auto s = make("reduce_on_plateau", args({{"factor", 0.5}, {"patience", int64_t(2)}}));
  s->endEpoch(0, 1.0); // The first loss is the best so far.
  s->endEpoch(1, 1.0);
  s->endEpoch(2, 1.0);
  EXPECT_EQ(at(*s, 3), 1.0);
  s->endEpoch(3, 1.0);
  EXPECT_EQ(at(*s, 4), 0.5);
  // An improvement resets the count; one within the relative threshold does not.
  s->endEpoch(4, 0.5);
  s->endEpoch(5, 0.49996);
  s->endEpoch(6, 0.49996);
  EXPECT_EQ(at(*s, 7), 0.5);
  s->endEpoch(7, 0.49996);
  EXPECT_EQ(at(*s, 8), 0.25);
}

TEST(Schedule, PlateauMinLrFloor) {
  auto s =
      make("reduce_on_plateau", args({{"factor", 0.5}, {"patience", int64_t(0)}, {"min_lr", 0.3}}));
  s->endEpoch(0, 1.0);
  s->endEpoch(1, 2.0);
  EXPECT_EQ(at(*s, 2), 0.5);
  s->endEpoch(2, 2.0);
  EXPECT_EQ(at(*s, 3), 0.3);
  s->endEpoch(3, 2.0);
  EXPECT_EQ(at(*s, 4), 0.3);
}

TEST(Schedule, PlateauStateRoundTrip) {
  AttrMap a = args({{"factor", 0.3}, {"patience", int64_t(1)}});
  auto s = make("reduce_on_plateau", a, 0.1);
  std::vector<double> losses = {2.0, 1.5, 1.6, 1.7, 1.4, 1.45, 1.5, 1.46, 1.5, 1.5};
  for (size_t e = 0; e < 5; ++e) s->endEpoch(int64_t(e), losses[e]);
  auto state = s->state();
  EXPECT_EQ(state.size(), 3u);
  auto r = make("reduce_on_plateau", a, 0.1);
  ASSERT_FALSE(r->restore(state));
  EXPECT_EQ(r->state(), state);
  for (size_t e = 5; e < losses.size(); ++e) {
    EXPECT_EQ(at(*r, int64_t(e)), at(*s, int64_t(e)));
    s->endEpoch(int64_t(e), losses[e]);
    r->endEpoch(int64_t(e), losses[e]);
  }
  EXPECT_EQ(at(*r, 10), at(*s, 10));
  EXPECT_LT(at(*r, 10), 0.1);
  // A fresh schedule's best loss is infinite, which also round-trips.
  auto f = make("reduce_on_plateau", a);
  EXPECT_EQ(f->state().at("best"), "inf");
  EXPECT_FALSE(f->restore(f->state()));
}

TEST(Schedule, PlateauRestoreErrors) {
  auto s = make("reduce_on_plateau", {});
  EXPECT_EQ(s->restore({{"lr", "0.1"}, {"best", "1.0"}}).message(),
            "reduce_on_plateau state: missing key 'bad'");
  EXPECT_EQ(s->restore({{"lr", "0.1x"}, {"best", "1.0"}, {"bad", "0"}}).message(),
            "reduce_on_plateau state: bad value '0.1x' for key 'lr'");
  EXPECT_EQ(at(*s, 0), 1.0);
  // Epoch-only schedules have no state.
  EXPECT_TRUE(make("step", args({{"step_size", int64_t(1)}}))->state().empty());
}

TEST(Schedule, PlateauWithWarmupIgnoresWarmupEpochs) {
  auto s = make("reduce_on_plateau", args({{"patience", int64_t(0)}, {"warmup", int64_t(1)}}));
  s->endEpoch(0, 1.0);
  s->endEpoch(1, 1.0); // The plateau schedule's first epoch: best so far.
  EXPECT_EQ(at(*s, 2), 1.0);
  s->endEpoch(2, 1.0);
  EXPECT_DOUBLE_EQ(at(*s, 3), 0.1);
  auto r = make("reduce_on_plateau", args({{"patience", int64_t(0)}, {"warmup", int64_t(1)}}));
  ASSERT_FALSE(r->restore(s->state()));
  EXPECT_EQ(at(*r, 3), at(*s, 3));
}

TEST(Schedule, ErrorMessages) {
  EXPECT_EQ(errorOf("cosin", {}),
            "unknown schedule 'cosin'; did you mean 'cosine'? (known schedules: constant, cosine, "
            "exponential, multistep, reduce_on_plateau, step, warmup)");
  EXPECT_EQ(errorOf("zigzag", {}),
            "unknown schedule 'zigzag' (known schedules: constant, cosine, exponential, multistep, "
            "reduce_on_plateau, step, warmup)");
  EXPECT_EQ(errorOf("step", args({{"step_size", int64_t(3)}, {"gama", 0.5}})),
            "schedule 'step' has no argument 'gama'; did you mean 'gamma'? (arguments: "
            "step_size, gamma, warmup, warmup_start_factor)");
  EXPECT_EQ(errorOf("warmup", args({{"warmup", int64_t(3)}})),
            "schedule 'warmup' has no argument 'warmup' (arguments: epochs, start_factor)");
  EXPECT_EQ(errorOf("step", {}), "schedule 'step': missing required argument 'step_size'");
  EXPECT_EQ(errorOf("step", args({{"step_size", int64_t(0)}})),
            "schedule 'step': step_size must be at least 1, got 0");
  EXPECT_EQ(errorOf("step", args({{"step_size", 2.5}})),
            "schedule 'step' argument 'step_size' must be an integer, got 2.5");
  EXPECT_EQ(errorOf("step", args({{"step_size", int64_t(1)}, {"gamma", 0.0}})),
            "schedule 'step': gamma must be > 0, got 0.0");
  EXPECT_EQ(errorOf("exponential", {}),
            "schedule 'exponential': missing required argument 'gamma'");
  EXPECT_EQ(errorOf("exponential", args({{"gamma", -0.5}})),
            "schedule 'exponential': gamma must be > 0, got -0.5");
  EXPECT_EQ(errorOf("exponential", args({{"gamma", std::string("x")}})),
            "schedule 'exponential' argument 'gamma' must be a number, got \"x\"");
  EXPECT_EQ(errorOf("multistep", args({{"milestones", std::vector<int64_t>{5, 3}}})),
            "schedule 'multistep': milestones must be strictly increasing");
  EXPECT_EQ(errorOf("multistep", args({{"milestones", std::vector<int64_t>{0}}})),
            "schedule 'multistep': milestones must be at least 1, got 0");
  EXPECT_EQ(errorOf("cosine", args({{"t_max", int64_t(0)}})),
            "schedule 'cosine': t_max must be at least 1, got 0");
  EXPECT_EQ(errorOf("cosine", args({{"eta_min", -1.0}})),
            "schedule 'cosine': eta_min must be >= 0, got -1.0");
  EXPECT_EQ(errorOf("reduce_on_plateau", args({{"factor", 1.5}})),
            "schedule 'reduce_on_plateau': factor must be in (0, 1), got 1.5");
  EXPECT_EQ(errorOf("reduce_on_plateau", args({{"patience", int64_t(-1)}})),
            "schedule 'reduce_on_plateau': patience must be >= 0, got -1");
  EXPECT_EQ(errorOf("reduce_on_plateau", args({{"min_lr", -0.1}})),
            "schedule 'reduce_on_plateau': min_lr must be >= 0, got -0.1");
  EXPECT_EQ(errorOf("constant", args({{"warmup", int64_t(-2)}})),
            "schedule 'constant': warmup must be >= 0, got -2");
  EXPECT_EQ(errorOf("constant", args({{"warmup", int64_t(1)}, {"warmup_start_factor", 0.0}})),
            "schedule 'constant': warmup_start_factor must be in (0, 1], got 0.0");
  EXPECT_EQ(errorOf("warmup", args({{"start_factor", 2.0}})),
            "schedule 'warmup': start_factor must be in (0, 1], got 2.0");
  EXPECT_EQ(errorOf("constant", {}, -1.0),
            "schedule 'constant': the base learning rate must be a finite number >= 0, got -1.0");
}

TEST(EarlyStopping, StopsAfterPatienceEpochsWithoutImprovement) {
  auto es = makeEarlyStopping(args({{"patience", int64_t(2)}}));
  ASSERT_TRUE(es) << es.error().message();
  EXPECT_FALSE(es->update(1.0));
  EXPECT_FALSE(es->update(0.9));
  EXPECT_FALSE(es->update(0.95));
  EXPECT_FALSE(es->update(0.8)); // An improvement resets the count.
  EXPECT_FALSE(es->update(0.8));
  EXPECT_TRUE(es->update(0.85));
  EXPECT_EQ(es->best, 0.8);
}

TEST(EarlyStopping, MinDeltaAndDefaults) {
  auto d = makeEarlyStopping({});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->patience, 5);
  EXPECT_EQ(d->minDelta, 0.0);
  auto es = makeEarlyStopping(args({{"patience", int64_t(1)}, {"min_delta", 0.1}}));
  ASSERT_TRUE(es);
  EXPECT_FALSE(es->update(1.0));
  EXPECT_TRUE(es->update(0.95)); // Better, but not by more than min_delta.
  EXPECT_EQ(es->best, 1.0);
  EXPECT_FALSE(es->update(0.85));
}

TEST(EarlyStopping, StateRoundTrip) {
  EarlyStopping es{3, 0.0};
  es.update(0.7);
  es.update(0.75);
  EarlyStopping r{3, 0.0};
  ASSERT_FALSE(r.restore(es.state()));
  EXPECT_EQ(r.best, 0.7);
  EXPECT_EQ(r.bad, 1);
  EXPECT_FALSE(r.update(0.8));
  EXPECT_TRUE(r.update(0.8));
  EXPECT_EQ(r.restore({{"best", "0.5"}}).message(), "early_stopping state: missing key 'bad'");
}

TEST(EarlyStopping, ErrorMessages) {
  EXPECT_EQ(makeEarlyStopping(args({{"patiense", int64_t(3)}})).error().message(),
            "early stopping 'early_stopping' has no argument 'patiense'; did you mean 'patience'? "
            "(arguments: patience, min_delta)");
  EXPECT_EQ(makeEarlyStopping(args({{"patience", int64_t(-1)}})).error().message(),
            "early_stopping: patience must be >= 0, got -1");
  EXPECT_EQ(makeEarlyStopping(args({{"min_delta", -0.5}})).error().message(),
            "early_stopping: min_delta must be >= 0, got -0.5");
}
