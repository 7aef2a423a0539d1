// The extension points of dtnn: one open registry per kind of extension (ops,
// kernels, backends, passes, optimizers, losses, metrics, data sources,
// schedules). dtnn's own entries register through these same calls, from
// registerBuiltins(); a program or library adding its own calls
// registerBuiltins() first, then these, before it runs a driver of
// dtnn/Tools.h. Every call takes an origin (the registrant's name, "built-in"
// for dtnn's own), and fails with a message naming both registrants when the
// name is taken. The entry types are declared by the layer headers named
// beside each call.
#pragma once

#include "dtnn/Error.h"

#include <functional>
#include <memory>
#include <string>

namespace dtnn {

// Registers every built-in op, pass, loss, metric, optimizer, backend with its
// kernels, data source and schedule; the first call does the work, later
// calls return its result. The drivers of dtnn/Tools.h call it first thing.
Error registerBuiltins();

namespace ir {
struct OpDef;
// Adds an op (name, operands, attributes, shape rule, gradient rule, ...) to
// the op table (ir/OpDef.h, ir/OpTable.h).
Error registerOp(OpDef def, const std::string &origin);
} // namespace ir

namespace runtime {
struct KernelEntry;
struct BackendEntry;
// Adds a kernel for one op, backend and element type (runtime/KernelRegistry.h).
Error registerKernel(KernelEntry e);
// Adds a backend (runtime/BackendRegistry.h).
Error registerBackend(BackendEntry e);
struct ScheduleDef;
// Adds a learning-rate schedule and its choice of the `schedule` setting
// (runtime/train/Schedule.h).
Error registerSchedule(ScheduleDef def, const std::string &origin);
} // namespace runtime

namespace passes {
class Pass;
struct OptimizerDef;
struct LossDef;
struct MetricDef;
// Makes a new instance of one pass (passes/PassRegistry.h).
using PassFactory = std::function<std::unique_ptr<Pass>()>;
// Adds the pass `create` makes, under its name(), for pipelines and --passes=
// (passes/Pass.h, passes/PassRegistry.h).
Error registerPass(PassFactory create, const std::string &origin);
// Adds an optimizer, whose update op `<name>_update` is registered first, and
// its choice of the `optimizer` setting (passes/Optimizers.h).
Error registerOptimizer(OptimizerDef def, const std::string &origin);
// Adds a loss, an op of the same name, and its choice of the `loss` setting
// (passes/Losses.h).
Error registerLoss(LossDef def, const std::string &origin);
// Adds a metric and its choice of the `metrics` setting (passes/Losses.h).
Error registerMetric(MetricDef def, const std::string &origin);
} // namespace passes

struct DataSourceDef;
// Adds a data source and its choice of the `data` setting
// (runtime/train/data/Sources.h).
Error registerDataSource(DataSourceDef def, const std::string &origin);

} // namespace dtnn
