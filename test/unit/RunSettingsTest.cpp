// Tests of the run-settings schema (ir/RunSettings.h): the typed values and
// defaults readRunSettings gives, every kind of error it reports, command-line
// overrides, and that each choice the schema declares is the one its
// implementation builds (schedules, data sources, losses, optimizers).
#include "ir/OpTable.h"
#include "ir/RunSettings.h"
#include "runtime/train/Schedule.h"
#include "runtime/train/data/Sources.h"

#include <gtest/gtest.h>

using namespace dtnn;
using ir::AttrMap;
using ir::AttrValue;

namespace {

AttrMap config(std::initializer_list<std::pair<std::string, AttrValue>> entries) {
  AttrMap m;
  for (const auto &[k, v] : entries) m.set(k, v);
  return m;
}

std::string errorOf(const AttrMap &c) {
  auto s = ir::readRunSettings(c);
  return s ? "<no error>" : s.error().message();
}

std::vector<std::string> choiceNames(const std::string &key) {
  std::vector<std::string> names;
  for (const ir::SettingChoice &c : ir::findRunSetting(key)->choices()) names.push_back(c.name);
  return names;
}

TEST(RunSettings, DefaultsAndTypedValues) {
  auto d = ir::readRunSettings(AttrMap());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->batch, 64);
  EXPECT_EQ(d->epochs, 1);
  EXPECT_EQ(d->seed, 1u);
  EXPECT_EQ(d->lr, 0.01);
  EXPECT_EQ(d->optimizer.name, "sgd");
  EXPECT_EQ(d->loss.name, "softmax_cross_entropy");
  EXPECT_EQ(d->data.name, "fashion_mnist");
  EXPECT_EQ(d->schedule.name, "constant");
  EXPECT_FALSE(d->earlyStopping);
  EXPECT_EQ(d->metrics, std::vector<std::string>{"accuracy"});

  auto s = ir::readRunSettings(config({{"batch", int64_t{32}},
                                       {"epochs", int64_t{0}},
                                       {"seed", int64_t{7}},
                                       {"validation", int64_t{0}},
                                       {"optimizer", std::string("adam")},
                                       {"optimizer.lr", int64_t{1}},
                                       {"optimizer.betas", std::vector<int64_t>{0, 0}},
                                       {"schedule", std::string("step")},
                                       {"schedule.step_size", int64_t{3}},
                                       {"data", std::string("synthetic")},
                                       {"data.shape", int64_t{4}},
                                       {"early_stopping", std::string("early_stopping")},
                                       {"early_stopping.patience", int64_t{2}},
                                       {"metrics", std::string("top5,accuracy,top5")}}));
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->batch, 32);
  EXPECT_EQ(s->epochs, 0);
  EXPECT_EQ(s->seed, 7u);
  EXPECT_EQ(s->validation, 0.0);
  // Whole numbers become the kinds the schema declares.
  EXPECT_EQ(s->lr, 1.0);
  EXPECT_EQ(*s->optimizer.args.find("betas"), AttrValue(std::vector<double>{0, 0}));
  EXPECT_EQ(*s->data.args.find("shape"), AttrValue(std::vector<int64_t>{4}));
  EXPECT_EQ(s->schedule.name, "step");
  EXPECT_EQ(*s->schedule.args.find("step_size"), AttrValue(int64_t{3}));
  ASSERT_TRUE(s->earlyStopping);
  EXPECT_EQ(*s->earlyStopping->find("patience"), AttrValue(int64_t{2}));
  EXPECT_EQ(s->metrics, (std::vector<std::string>{"accuracy", "top5"}));
}

TEST(RunSettings, Errors) {
  EXPECT_EQ(errorOf(config({{"batch", int64_t{0}}})),
            "train setting 'batch' must be an integer of at least 1");
  EXPECT_EQ(errorOf(config({{"epochs", 2.5}})),
            "train setting 'epochs' must be an integer of at least 0");
  EXPECT_EQ(errorOf(config({{"validation", 1.0}})),
            "train setting 'validation' must be a fraction in [0, 1)");
  EXPECT_EQ(errorOf(config({{"optimizer.lr", 0.0}})), "the learning rate must be a positive number");
  EXPECT_EQ(errorOf(config({{"optimizer.lr", std::string("fast")}})),
            "the learning rate must be a positive number");
  EXPECT_EQ(errorOf(config({{"epoch", int64_t{3}}})),
            "unknown train setting 'epoch'; did you mean 'epochs'?");
  EXPECT_EQ(errorOf(config({{"colour.red", int64_t{3}}})), "unknown train setting 'colour.red'");
  EXPECT_EQ(errorOf(config({{"optimizer", int64_t{3}}})),
            "train setting 'optimizer' must name an optimizer, got 3");
  EXPECT_EQ(errorOf(config({{"optimizer", std::string("adm")}})),
            "unknown optimizer 'adm'; did you mean 'adam'? (known optimizers: sgd, adam, adamw, "
            "rmsprop, nadam)");
  EXPECT_EQ(errorOf(config({{"loss", std::string("mse")}})),
            "unknown loss 'mse' (known losses: bce_loss, mse_loss, nll_loss, "
            "softmax_cross_entropy)");
  EXPECT_EQ(errorOf(config({{"schedule", std::string("cosin")}})),
            "unknown schedule 'cosin'; did you mean 'cosine'? (known schedules: constant, cosine, "
            "exponential, multistep, reduce_on_plateau, step, warmup)");
  EXPECT_EQ(errorOf(config({{"data", std::string("coco")}})),
            "unknown data source 'coco' (known data sources: cifar10, fashion_mnist, image_folder, "
            "imagenet, mnist, npz_chunks, synthetic, text)");
  // An argument is checked against the choice made, whatever the order of the entries.
  EXPECT_EQ(errorOf(config({{"schedule.gama", 0.5}, {"schedule", std::string("step")}})),
            "schedule 'step' has no argument 'gama'; did you mean 'gamma'? (arguments: "
            "step_size, gamma, warmup, warmup_start_factor)");
  EXPECT_EQ(errorOf(config({{"schedule.gamma", 0.5}})),
            "schedule 'constant' has no argument 'gamma' (arguments: warmup, warmup_start_factor)");
  EXPECT_EQ(errorOf(config({{"loss", std::string("mse_loss")}, {"loss.weight", 1.0}})),
            "loss 'mse_loss' takes no arguments, got 'weight'");
  EXPECT_EQ(errorOf(config({{"loss", std::string("nll_loss")}, {"loss.weight", 1.0}})),
            "loss 'nll_loss' has no argument 'weight' (arguments: ignore_index)");
  EXPECT_EQ(errorOf(config({{"data", std::string("mnist")}, {"data.dir", int64_t{3}}})),
            "data source 'mnist' argument 'dir' must be a string, got 3");
  EXPECT_EQ(errorOf(config({{"early_stopping.patience", int64_t{3}}})),
            "train setting 'early_stopping.patience' is given without early_stopping");
  EXPECT_EQ(errorOf(config({{"metrics", std::string("accuracy,top0")}})),
            "unknown metric 'top0' (known: accuracy, topK such as top5, bits_per_byte, perplexity)");
  EXPECT_EQ(errorOf(config({{"optimizer", std::string("sgd")}, {"optimizer.lr", -1.0}})),
            "the learning rate must be a positive number");
}

TEST(RunSettings, CommandLineOverrides) {
  AttrMap c = config({{"optimizer", std::string("sgd")},
                      {"optimizer.lr", 0.5},
                      {"optimizer.momentum", 0.9}});
  const ir::RunSettingDef &opt = *ir::findRunSetting("optimizer");
  // The same choice keeps its arguments; another drops them, except the learning rate.
  EXPECT_EQ(ir::setRunSetting(c, opt, std::string("sgd")).message(), "");
  EXPECT_TRUE(c.find("optimizer.momentum"));
  EXPECT_EQ(ir::setRunSetting(c, opt, std::string("adam")).message(), "");
  EXPECT_FALSE(c.find("optimizer.momentum"));
  EXPECT_EQ(*c.find("optimizer.lr"), AttrValue(0.5));
  EXPECT_EQ(ir::setRunSetting(c, opt, std::string("adamm")).message(),
            "unknown optimizer 'adamm'; did you mean 'adam'? (known optimizers: sgd, adam, adamw, "
            "rmsprop, nadam)");
  EXPECT_EQ(ir::setRunSetting(c, *ir::findRunSetting("batch"), int64_t{0}).message(),
            "train setting 'batch' must be an integer of at least 1");
  EXPECT_EQ(ir::setRunSetting(c, *ir::findRunSetting("optimizer.lr"), int64_t{2}).message(), "");
  EXPECT_EQ(*c.find("optimizer.lr"), AttrValue(2.0));
  auto s = ir::readRunSettings(c);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->optimizer.name, "adam");
  EXPECT_EQ(s->lr, 2.0);
  // Every flag names a setting; the train section's keys are the others without a dot.
  for (const ir::RunSettingDef &d : ir::runSettingDefs()) {
    if (!d.flag.empty()) {
      EXPECT_NE(d.kind, ir::SettingKind::Metrics) << d.key;
    }
  }
  EXPECT_EQ(ir::trainSectionKeys(),
            (std::vector<std::string>{"augment", "batch", "checkpoint_every", "data", "early_stopping",
                                      "epochs", "init_defaults", "loss", "metrics", "optimizer",
                                      "precision", "schedule", "seed", "validation"}));
}

// The choices the schema declares are exactly those their implementations build.
TEST(RunSettings, ChoicesHaveImplementations) {
  EXPECT_EQ(choiceNames("schedule"), runtime::scheduleNames());
  EXPECT_EQ(choiceNames("data"), dataSourceNames());
  for (const std::string &loss : choiceNames("loss")) {
    const ir::OpDef *def = ir::OpTable::get().lookup(loss);
    ASSERT_TRUE(def) << loss;
    EXPECT_EQ(def->role, ir::OpRole::Metric) << loss;
  }
  for (const std::string &opt : choiceNames("optimizer")) {
    const ir::OpDef *def = ir::OpTable::get().lookup(opt + "_update");
    ASSERT_TRUE(def) << opt;
    EXPECT_EQ(def->role, ir::OpRole::Update) << opt;
  }
  // Each schedule builds from the arguments the schema declares (with required ones given).
  for (const std::string &name : choiceNames("schedule")) {
    AttrMap args;
    if (name == "step") args.set("step_size", int64_t{2});
    if (name == "exponential") args.set("gamma", 0.5);
    if (name == "multistep") args.set("milestones", std::vector<int64_t>{2});
    EXPECT_TRUE(runtime::makeSchedule({name, args}, 0.1, 10)) << name;
  }
}

} // namespace
