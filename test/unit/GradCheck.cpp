// The unit tests' gradient check: the library's (runtime/train/GradCheck.h) on IR text, each mismatch
// a GoogleTest failure.
#include "GradCheck.h"

#include "ir/TextParser.h"

#include <gtest/gtest.h>

#include <sstream>

namespace dtnn::test {

void expectGradientsMatch(const std::string &irText, const GradCheckOptions &opts) {
  SourceManager sm;
  std::ostringstream errs;
  DiagnosticEngine diags(sm, errs);
  auto m = ir::parseModule(irText, "gradcheck.dtir", sm, diags);
  ASSERT_TRUE(m) << errs.str();
  auto results = runtime::checkGradients(*m, opts);
  ASSERT_TRUE(results) << results.error().message();
  for (const runtime::GradCheckResult &r : *results) {
    EXPECT_GT(r.checked, 0) << r.name;
    for (const runtime::GradMismatch &x : r.mismatches)
      EXPECT_NEAR(x.analytic, x.numeric, opts.atol + opts.rtol * std::abs(x.numeric))
          << "d/d " << r.name << "[" << x.element << "]";
  }
}

} // namespace dtnn::test
