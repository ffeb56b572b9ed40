// The compute fit: the published throughput table loads, the fit reproduces the fractions
// colltune ships, the step model computes what the fit predicts, and the held-out error is
// what docs/step-model.md says.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "colltune/common/error.hpp"
#include "colltune/sim/compute_fit.hpp"
#include "colltune/sim/profiles.hpp"
#include "colltune/topology/hardware.hpp"

namespace colltune::sim {
namespace {

const std::string kData = std::string(COLLTUNE_SOURCE_DIR) + "/sim/workload/data";

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const std::vector<PublishedRow>& table() {
  static const std::vector<PublishedRow> rows = load_published_throughput(kData + "/published_throughput.csv");
  return rows;
}

const FitResult& fit() {
  static const FitResult result = fit_achieved_fractions(table());
  return result;
}

TEST(ComputeFit, EveryPublishedRowLoadsWithItsSource) {
  ASSERT_EQ(table().size(), 212u);
  int fitted = 0;
  for (const PublishedRow& r : table()) {
    EXPECT_TRUE(r.source_url.starts_with("https://github.com/")) << r.id;  // pinned to a commit
    EXPECT_FALSE(r.use.empty()) << r.id;
    if (r.use != "fit") continue;
    ++fitted;
    EXPECT_GT(r.samples_per_s, 0) << r.id;
    EXPECT_NO_THROW(topo::find_gpu(r.gpu)) << r.id;
  }
  EXPECT_EQ(fitted, 145);
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, sep)) out.push_back(item);
  return out;
}

// Two CSV texts with the same fields, numbers equal to the digits they are written with (a
// build with other floating-point contractions may round the last digit the other way).
void expect_same_csv(const std::string& a, const std::string& b) {
  const auto la = split(a, '\n'), lb = split(b, '\n');
  ASSERT_EQ(la.size(), lb.size());
  for (std::size_t i = 0; i < la.size(); ++i) {
    const auto fa = split(la[i], ','), fb = split(lb[i], ',');
    ASSERT_EQ(fa.size(), fb.size()) << la[i];
    for (std::size_t j = 0; j < fa.size(); ++j) {
      char* end_a = nullptr;
      char* end_b = nullptr;
      const double va = std::strtod(fa[j].c_str(), &end_a), vb = std::strtod(fb[j].c_str(), &end_b);
      if (fa[j].empty() || *end_a != '\0' || *end_b != '\0') EXPECT_EQ(fa[j], fb[j]) << la[i];
      else EXPECT_NEAR(va, vb, 1e-3 * std::abs(va) + 0.011) << la[i];
    }
  }
}

TEST(ComputeFit, ReproducesTheShippedFractions) {
  // The checked-in files are the fit's output (colltune_fit_compute writes them); a refit must
  // give them again.
  expect_same_csv(fractions_csv(fit()), read(kData + "/achieved_fractions.csv"));
  expect_same_csv(residuals_csv(fit()), read(kData + "/fit_residuals.csv"));
}

TEST(ComputeFit, TheStepModelComputesWhatTheFitPredicts) {
  // Every predicted row, through the library's own path (make_profile with the compiled-in
  // fractions): samples/s = batch / (forward + backward).
  for (const RowResult& r : fit().rows) {
    if (r.role == FitRole::unused) continue;
    ProfileOptions o = parse_profile_options(r.row.model, r.row.gpu);
    o.precision = r.row.precision;
    o.batch = 8;
    const Workload w = make_profile(r.row.model.substr(0, r.row.model.find(':')), o);
    EXPECT_NEAR(8e6 / (w.forward_us + w.backward_us), r.predicted, 1e-9 * r.predicted) << r.row.id;
  }
}

TEST(ComputeFit, HeldOutErrorIsWhatTheDocsSay) {
  const std::string docs = read(std::string(COLLTUNE_SOURCE_DIR) + "/docs/step-model.md");
  std::istringstream lines(fit_summary(fit()));
  for (std::string line; std::getline(lines, line);) EXPECT_NE(docs.find(line), std::string::npos) << line;
  EXPECT_EQ(fit().held_out.rows, 48);  // a third of the 145 fitted rows
}

TEST(ComputeFit, AGpuWithoutRowsGetsThePooledFractions) {
  std::map<std::string, AchievedFractions> pooled;
  for (const FractionEntry& e : fit().fractions)
    if (e.gpu == "pooled") pooled[e.precision] = e.fractions;
  for (const FractionEntry& e : fit().fractions) {
    if (e.gpu != "l40s") continue;  // no published row
    EXPECT_EQ(e.fractions.rows, 0);
    EXPECT_DOUBLE_EQ(e.fractions.conv, pooled[e.precision].conv);
    EXPECT_DOUBLE_EQ(e.fractions.matmul, pooled[e.precision].matmul);
    EXPECT_DOUBLE_EQ(e.fractions.memory, pooled[e.precision].memory);
  }
}

TEST(ComputeFit, BadTablesNameTheRow) {
  const std::string header = "id,model,gpu,precision,samples_per_s,use,source_url\n";
  for (const auto& [row, why] : std::vector<std::pair<std::string, std::string>>{
           {"1,resnet50,x100,amp,100,fit,https://x\n", "row 2: unknown GPU 'x100'"},
           {"1,resnet50,v100,fp8,100,fit,https://x\n", "row 2: precision 'fp8' is not fp32, tf32 or amp"},
           {"1,resnet51,v100,amp,100,fit,https://x\n", "row 2: unknown model 'resnet51'"},
           {"1,resnet50,v100,amp,,fit,https://x\n", "row 2: a fitted row needs"},
           {"1,resnet50,v100,amp,abc,fit,https://x\n", "samples_per_s 'abc' is not a number"},
           {"1,resnet50,v100,amp,100,fit\n", "6 fields, the header has 7"}}) {
    try {
      parse_published_throughput(header + row, "t.csv");
      ADD_FAILURE() << "accepted " << row;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
}

TEST(ComputeFit, SquadHeadReplacesThePretrainingHeads) {
  // Hugging Face BertForQuestionAnswering: BertModel without its pooler, plus 2 outputs a token.
  EXPECT_EQ(model_architecture("bert-large", 384, "squad").total_params(), 335'141'888u - 1'049'600u + 2'050u);
  EXPECT_THROW(model_architecture("resnet50", 0, "squad"), Error);
  EXPECT_THROW(parse_profile_spec("bert-large:head=mlm"), Error);
}

}  // namespace
}  // namespace colltune::sim
