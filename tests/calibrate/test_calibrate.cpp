// Calibration: the readers (published nccl-tests logs as pasted, bench reports), the robust fit
// (known parameters recovered from noisy synthetic measurements), what it refuses, and the
// calibrated topology (its derived figures are the fitted ones).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <set>

#include "colltune/common/error.hpp"
#include "colltune/sim/step_model.hpp"
#include "colltune/sim/timeline.hpp"
#include "colltune/topology/json_io.hpp"
#include "colltune/topology/topology.hpp"
#include "colltune/calibrate/calibrate.hpp"
#include "colltune/calibrate/compare.hpp"
#include "colltune/calibrate/measurements.hpp"

namespace colltune::tuner {
namespace {

const std::string kLogs = std::string(COLLTUNE_TEST_DATA) + "/nccl-tests-logs/";
const std::string kData = std::string(CALIBRATE_TEST_DATA) + "/";

// ---- readers --------------------------------------------------------------------------------

TEST(NcclTestsLog, EveryPublishedLogReads) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kLogs)) {
    if (entry.path().extension() != ".txt") continue;
    ++files;
    const MeasurementSet set = read_measurements(entry.path().string());
    EXPECT_GE(set.rows.size(), 6u) << entry.path();
    for (const Measurement& m : set.rows) {
      EXPECT_GT(m.time_us, 0) << m.source;
      EXPECT_GT(m.bytes, 0u) << m.source;
      EXPECT_EQ(m.runtime, MeasuredRuntime::nccl);
    }
  }
  EXPECT_GE(files, 6);
}

TEST(NcclTestsLog, RanksCollectiveAndAlgorithmComeFromTheLog) {
  const auto two_nodes = read_measurements(kLogs + "nccl-tests-309-hgx-h100-2node-ib-allreduce.txt");
  EXPECT_EQ(two_nodes.rows.front().nranks, 16);
  EXPECT_EQ(two_nodes.rows.front().collective, coll::Collective::allreduce);
  EXPECT_EQ(two_nodes.rows.front().elem_size, 4u);
  ASSERT_TRUE(two_nodes.rows.front().in_place_time_us.has_value());

  const auto gather = read_measurements(kLogs + "autodl-2080ti-2gpu-pcie-allgather.txt");
  EXPECT_EQ(gather.rows.front().collective, coll::Collective::allgather);
  EXPECT_EQ(gather.rows.front().nranks, 2);
  // Its 8 B and 16 B rows print size 0: skipped, and said so.
  EXPECT_FALSE(gather.skipped.empty());

  // srun's " 0: " labels stripped; NCCL_ALGO, set outside the log, given as a hint.
  MeasurementHints ring_hints;
  ring_hints.nccl_algo = "Ring";
  const auto ring = read_measurements(kLogs + "nccl-tests-290-h100-2node-ib-allreduce-algo-ring.txt", ring_hints);
  EXPECT_EQ(ring.rows.front().algorithm, "Ring");
  EXPECT_EQ(ring.rows.front().nranks, 16);
}

// NCCL settings a log makes that the model does not read are reported per file, never silently
// fitted: from a command line (-x NAME=VALUE) and NCCL's "set by environment" lines, each name
// once; NCCL_ALGO, NCCL_PROTO and the channel settings are read as the run's, logging and an
// *_DISABLE at NCCL's default 0 are not listed, and a list value keeps its commas.
TEST(NcclTestsLog, SettingsTheModelDoesNotReadAreReported) {
  const std::string table =
      "#  size   count  type   redop     time  algbw  busbw  error     time  algbw  busbw  error\n"
      "   1024     256  float    sum    20.00   0.05   0.08  0e+00    20.00   0.05   0.08  0e+00\n";
  const std::string head =
      "# mpirun -np 16 -x NCCL_DEBUG=INFO -x NCCL_ALGO=Ring -x NCCL_MIN_CTAS=24 -x NCCL_IB_DISABLE=0 "
      "-x NCCL_IB_HCA=mlx5_0:1,mlx5_1:1 ./all_reduce_perf -b 1K\n"
      "node1:1:1 [0] NCCL INFO NCCL_IB_QPS_PER_CONNECTION set by environment to 2.\n"
      "node1:1:1 [0] NCCL INFO NCCL_MIN_CTAS set by environment to 24.\n";
  const MeasurementSet set = parse_nccl_tests_log(head + table, "run.txt");
  ASSERT_EQ(set.rows.size(), 1u);
  EXPECT_EQ(set.rows.front().algorithm, "Ring");
  EXPECT_EQ(set.rows.front().nccl_channels, (sim::NcclChannelEnv{.min_ctas = 24}));
  ASSERT_EQ(set.unread_nccl_env.size(), 1u);
  EXPECT_EQ(set.unread_nccl_env.front(), "run.txt sets NCCL_IB_HCA=mlx5_0:1,mlx5_1:1, NCCL_IB_QPS_PER_CONNECTION=2");
  // --nccl-env replaces the log's value of a name, and adds others.
  MeasurementHints hints;
  hints.nccl_env = {"NCCL_MIN_CTAS=16", "NCCL_MAX_NCHANNELS=8"};
  EXPECT_EQ(parse_nccl_tests_log(head + table, "run.txt", hints).rows.front().nccl_channels,
            (sim::NcclChannelEnv{.max_nchannels = 8, .min_ctas = 16}));
  // A channel setting that is not a count: one error naming the file.
  try {
    parse_nccl_tests_log("# mpirun -x NCCL_MAX_CTAS=many ./all_reduce_perf\n" + table, "bad.txt");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.txt: NCCL_MAX_CTAS: 'many' is not a decimal integer"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(parse_nccl_tests_log(table, "plain.txt").unread_nccl_env.empty());
  // Two files: one entry each, in order.
  const auto both = read_measurements({kLogs + "nccl-tests-309-h100-8node-ib-allreduce-minctas24-qps2.txt",
                                       kLogs + "nccl-tests-309-h100-8node-ib-allreduce-default.txt"});
  ASSERT_EQ(both.unread_nccl_env.size(), 1u);
  EXPECT_NE(both.unread_nccl_env.front().find("minctas24-qps2.txt sets NCCL_IB_QPS_PER_CONNECTION=2"),
            std::string::npos);
  EXPECT_EQ(both.rows.front().nccl_channels.min_ctas, 24);
  EXPECT_EQ(both.rows.back().nccl_channels, sim::NcclChannelEnv{});
}

TEST(NcclTestsLog, OlderColumnLayoutsAndInference) {
  // nccl-tests before "root" and "#wrong": "error" columns; no rank lines, no command line:
  // allreduce and 4 ranks follow from busbw / algbw = 2(n-1)/n.
  const std::string old =
      "#  size   count  type   redop     time  algbw  busbw  error     time  algbw  busbw  error\n"
      "   1024     256  float    sum    20.00   0.05   0.08  0e+00    20.00   0.05   0.08  0e+00\n"
      "1048576  262144  float    sum   100.00  10.49  15.73  0e+00   100.00  10.49  15.73  0e+00\n";
  const MeasurementSet set = parse_nccl_tests_log(old, "old.txt");
  ASSERT_EQ(set.rows.size(), 2u);
  EXPECT_EQ(set.rows[1].nranks, 4);
  EXPECT_EQ(set.rows[1].collective, coll::Collective::allreduce);
  EXPECT_EQ(set.rows[1].source, "old.txt:3");
  // A row with a missing field is reported, not read.
  const MeasurementSet cut = parse_nccl_tests_log(old + "  2048  512  float  sum  20.0\n", "cut.txt");
  EXPECT_EQ(cut.rows.size(), 2u);
  ASSERT_EQ(cut.skipped.size(), 1u);
  EXPECT_NE(cut.skipped[0].find("cut.txt:4"), std::string::npos);
}

// Lines of 300,000 characters in the places the reader matches with std::regex (a host name,
// launcher digits, an NCCL_ALGO value, a command line): once a stack overflow (SIGSEGV, found by
// the fuzz replay's calibrate target); now read as short lines are.
TEST(NcclTestsLog, LongLinesDoNotOverflowTheStack) {
  const std::string table =
      "#  size   count  type   redop     time  algbw  busbw  error     time  algbw  busbw  error\n"
      "   1024     256  float    sum    20.00   0.05   0.08  0e+00    20.00   0.05   0.08  0e+00\n";
  const std::string run(300000, 'h');
  const MeasurementSet host =
      parse_nccl_tests_log("#  Rank  0 Group  0 Pid 1 on " + run + " device  0\n" + table, "host.txt");
  EXPECT_EQ(host.rows.size(), 1u);
  const MeasurementSet digits = parse_nccl_tests_log(" " + std::string(300000, '1') + ": x\n" + table, "digits.txt");
  EXPECT_EQ(digits.rows.size(), 1u);
  const MeasurementSet algo = parse_nccl_tests_log("NCCL_ALGO=" + run + "\n" + table, "algo.txt");
  EXPECT_EQ(algo.rows.front().algorithm.size(), 512u - std::string("NCCL_ALGO=").size());
  const MeasurementSet binary = parse_nccl_tests_log("# " + run + " NCCL_ALGO=Ring all_reduce_perf\n" + table, "bin.txt");
  EXPECT_EQ(binary.rows.front().algorithm, "Ring");
}

TEST(NcclTestsLog, BadLogsAreOneClearError) {
  const auto message = [](const std::string& file) {
    try {
      read_measurements(kData + file);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("empty.txt").find("empty file"), std::string::npos);
  EXPECT_NE(message("no_rows.txt").find("no data rows"), std::string::npos);
  EXPECT_NE(message("bad_columns.txt").find("columns not recognised"), std::string::npos);
  EXPECT_NE(message("missing.txt").find("cannot read"), std::string::npos);
}

TEST(BenchReport, RowsOfTheBenchJson) {
  const std::string report = R"({"format": "colltune-bench", "version": 2, "collective": "allreduce",
    "transport": "mpi", "nranks": 4, "type": "float", "chunk_elems": 0, "rows": [
      {"algorithm": "ring", "size_bytes": 1024, "count": 256,
       "out_of_place": {"time_us": 12.5}, "in_place": {"time_us": 12.0}},
      {"algorithm": "mpi", "size_bytes": 1024, "count": 256, "out_of_place": {"time_us": 9.0}},
      {"algorithm": "rhd", "size_bytes": 8, "count": 2, "not_applicable": "fewer elements than ranks"}]})";
  const MeasurementSet set = parse_bench_json(report, "b.json");
  ASSERT_EQ(set.rows.size(), 2u);
  EXPECT_EQ(set.rows[0].algorithm, "ring");
  EXPECT_EQ(set.rows[0].nranks, 4);
  EXPECT_DOUBLE_EQ(set.rows[0].time_us, 12.5);
  ASSERT_TRUE(set.rows[0].in_place_time_us.has_value());
  EXPECT_DOUBLE_EQ(*set.rows[0].in_place_time_us, 12.0);
  EXPECT_EQ(set.skipped.size(), 1u);
}

// An in-place time of -1 or 0 (not measured) is no time, as in nccl-tests logs; it was kept, and
// compare printed a negative time (found by the fuzz replay's finite-answer oracle).
TEST(BenchReport, ANonPositiveInPlaceTimeIsNotMeasured) {
  for (const char* t : {"-1", "0"}) {
    const std::string report = std::string(R"({"format": "colltune-bench", "version": 2, "collective": "allreduce",
      "transport": "mpi", "nranks": 4, "type": "float", "chunk_elems": 0, "rows": [
        {"algorithm": "ring", "size_bytes": 1024, "count": 256,
         "out_of_place": {"time_us": 12.5}, "in_place": {"time_us": )") + t + "}}]}";
    const MeasurementSet set = parse_bench_json(report, "b.json");
    ASSERT_EQ(set.rows.size(), 1u);
    EXPECT_FALSE(set.rows[0].in_place_time_us.has_value()) << t;
  }
}

TEST(HorovodTimeline, EachFusedBuffersAllreduceIsARow) {
  const MeasurementSet set = read_measurements(std::string(COLLTUNE_EXAMPLES) + "/workloads/horovod_timeline_small.json");
  // 12 tensors over 2 steps in 3 fused buffers per step: 6 allreduces, not one per tensor.
  ASSERT_EQ(set.rows.size(), 6u);
  std::size_t bytes = 0;
  for (const Measurement& m : set.rows) {
    EXPECT_EQ(m.runtime, MeasuredRuntime::nccl);
    EXPECT_EQ(m.nranks, 0);  // one rank's view: the topology's rank count
    EXPECT_GT(m.time_us, 0);
    bytes += m.bytes;
  }
  const sim::TimelineImport run = sim::import_horovod_timeline(std::string(COLLTUNE_EXAMPLES) +
                                                               "/workloads/horovod_timeline_small.json");
  EXPECT_EQ(bytes, 2 * run.workload.total_bytes());  // every tensor's bytes, once per step
  EXPECT_EQ(run.step_starts_us.size(), 2u);
}

TEST(HorovodTimeline, ItsFusionCopyRateReachesTheStepModel) {
  const topo::Topology t = topo::load_topology("dgx-h100:nodes=4");
  const MeasurementSet set = read_measurements(std::string(COLLTUNE_EXAMPLES) + "/workloads/horovod_timeline_small.json");
  ASSERT_GT(set.fusion_copy_us, 0);
  const CalibrationResult r = calibrate(t, set);
  EXPECT_DOUBLE_EQ(r.fusion_copy_gbps, set.fusion_copy_bytes / set.fusion_copy_us / 1e3);
  const topo::Topology calibrated = topo::topology_from_json(calibrated_topology_json(t, r), "calibrated.json");
  EXPECT_NEAR(sim::StepSimulator(calibrated).costs().fusion_copy_gbps, r.fusion_copy_gbps, 1e-9);
  // An explicit --cost still wins.
  sim::StepCosts costs;
  costs.fusion_copy_gbps = 50;
  EXPECT_EQ(sim::StepSimulator(calibrated, costs).costs().fusion_copy_gbps, 50);
  // Link efficiencies are not applied again on a calibrated machine, and the costs say so.
  costs.nvlink_efficiency = 0.5;
  EXPECT_EQ(sim::StepSimulator(calibrated, costs).costs().nvlink_efficiency, 1.0);
  EXPECT_EQ(sim::StepSimulator(t, costs).costs().nvlink_efficiency, 0.5);
}

// ---- the fit on synthetic measurements ------------------------------------------------------

// Measurements the model itself predicts at `truth`, times lognormal noise of `sigma`.
MeasurementSet synthetic(const topo::Topology& t, const CalibValues& truth, const std::vector<std::string>& algos,
                         double sigma, unsigned seed, std::size_t factor = 4) {
  const Predictor predictor(t, t.num_ranks());
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, sigma);
  MeasurementSet set;
  set.files.push_back("synthetic");
  int line = 0;
  for (const std::string& algo : algos)
    for (std::size_t bytes = 1024; bytes <= (std::size_t{1} << 30); bytes *= factor) {
      Measurement m;
      m.source = "synthetic:" + std::to_string(++line);
      m.algorithm = algo;
      m.nranks = t.num_ranks();
      m.bytes = bytes;
      m.time_us = predictor.time_us(m, truth) * std::exp(noise(rng));
      set.rows.push_back(m);
    }
  return set;
}

const CalibrateOptions kHoldReduce{.hold = {"reduce_gbps"}, .holdout_half = false};

CalibValues shifted(const CalibValues& base) {
  CalibValues v = base;
  v.alpha_intra_us = base.alpha_intra_us * 2.5 + 1.0;
  v.intra_gbps = base.intra_gbps * 0.7;
  v.alpha_inter_us = base.alpha_inter_us * 3.0 + 2.0;
  v.inter_gbps = base.inter_gbps * 0.6;
  return v;  // the reduction rate stays: transfers and reductions scale together (below)
}

std::string held_list(const CalibrationResult& r) {
  std::string out;
  for (const auto& h : r.held) out += h + "\n";
  return out;
}

void expect_recovered(const CalibrationResult& r, const CalibValues& truth, double tolerance) {
  for (const std::string& name : r.fitted) {
    const int i = calibration_parameter_index(name);
    EXPECT_NEAR(r.after.at(i) / truth.at(i), 1.0, tolerance) << name << ": fitted " << r.after.at(i) << ", true "
                                                             << truth.at(i) << "\nheld:\n" << held_list(r);
  }
}

TEST(Calibrate, RecoversKnownParametersFromNoisyMeasurements) {
  const topo::Topology t = topo::load_topology("dgx-a100:nodes=2");
  const CalibValues truth = shifted(values_of(t, t.num_ranks()));
  const MeasurementSet set = synthetic(t, truth, {"ring", "dbtree", "hierarchical"}, 0.03, 7);
  const CalibrationResult r = calibrate(t, set, kHoldReduce);
  EXPECT_EQ(r.fitted, (std::vector<std::string>{"alpha_intra_us", "intra_gbps", "alpha_inter_us", "inter_gbps"}))
      << held_list(r);
  expect_recovered(r, truth, 0.05);
  EXPECT_LT(r.median_abs_error, 0.05);
}

// The fit prices its rows on several threads: a published log fits to the same numbers every
// time, the first run with cold memos, the second with warm ones (and under ThreadSanitizer in
// `make test-tsan`: the predictor's and the NCCL price path's shared state).
TEST(Calibrate, APublishedLogFitsTheSameEveryTime) {
  const topo::Topology t = topo::load_topology("dgx-a100:nodes=2,transport=roce");
  const MeasurementSet set = read_measurements(kLogs + "oci-a100-2node-roce-allreduce.txt");
  const CalibrationResult a = calibrate(t, set);
  const CalibrationResult b = calibrate(t, set);
  ASSERT_FALSE(a.fitted.empty());
  EXPECT_EQ(a.fitted, b.fitted);
  for (const std::string& name : a.fitted) {
    const int i = calibration_parameter_index(name);
    EXPECT_EQ(a.after.at(i), b.after.at(i)) << name;
  }
  EXPECT_EQ(a.median_abs_error, b.median_abs_error);
}

TEST(Calibrate, OutliersAndWarmupRowsAreReportedAndDoNotMoveTheFit) {
  const topo::Topology t = topo::load_topology("dgx-a100:nodes=2");
  const CalibValues truth = shifted(values_of(t, t.num_ranks()));
  MeasurementSet set = synthetic(t, truth, {"ring", "dbtree", "hierarchical"}, 0.02, 11, 2);
  set.rows[0].time_us *= 40;   // the first row of a series: a warm-up row
  set.rows[20].time_us *= 1.8;  // hiccups
  set.rows[50].time_us *= 0.6;
  const CalibrationResult r = calibrate(t, set, kHoldReduce);
  expect_recovered(r, truth, 0.05);
  std::set<std::string> flags;
  for (const RowFit& f : r.rows)
    if (!f.flag.empty()) flags.insert(f.source + " " + f.flag);
  EXPECT_TRUE(flags.count("synthetic:1 warm-up"));
  EXPECT_TRUE(flags.count("synthetic:21 outlier"));
  EXPECT_TRUE(flags.count("synthetic:51 outlier"));
}

// A row whose out-of-place and in-place samples are 1.5x apart, either way, is a spike in one of
// them: left out before the fit, whichever sample is off, and named as such. The other rows'
// in-place samples agree within 1%.
TEST(Calibrate, RowsWhoseTwoSamplesDisagreeAreSpikes) {
  const topo::Topology t = topo::load_topology("dgx-a100:nodes=2");
  const CalibValues truth = shifted(values_of(t, t.num_ranks()));
  MeasurementSet set = synthetic(t, truth, {"ring", "dbtree", "hierarchical"}, 0.02, 13, 2);
  for (Measurement& m : set.rows) m.in_place_time_us = m.time_us * 1.01;
  set.rows[30].in_place_time_us = set.rows[30].time_us / 1.6;  // out of place disturbed
  set.rows[31].time_us *= 1.4;
  set.rows[31].in_place_time_us = *set.rows[31].in_place_time_us * 2.3;  // in place disturbed more
  const CalibrationResult r = calibrate(t, set, kHoldReduce);
  expect_recovered(r, truth, 0.05);
  std::set<std::string> spikes;
  for (const RowFit& f : r.rows)
    if (f.flag == "spike") spikes.insert(f.source);
  EXPECT_EQ(spikes, (std::set<std::string>{"synthetic:31", "synthetic:32"}));
  EXPECT_NE(calibration_text(r).find("2 left out (spikes)"), std::string::npos) << calibration_text(r);
}

// compare judges a row by calibrate's rule: a spike is shown, flagged, and left out of the
// errors, per model and overall.
TEST(Compare, SpikesAreShownAndLeftOutOfTheErrors) {
  const topo::Topology t = topo::load_topology("dgx-a100:nodes=2");
  MeasurementSet set = synthetic(t, values_of(t, t.num_ranks()), {"ring"}, 0.0, 1);
  for (Measurement& m : set.rows) m.in_place_time_us = m.time_us;
  const Comparison clean = compare_measurements(t, set);
  set.rows[3].time_us *= 3;  // out of place disturbed: 3x its in-place sample
  const Comparison c = compare_measurements(t, set);
  EXPECT_EQ(c.spikes, 1U);
  EXPECT_EQ(c.rows[3].flag, "spike");
  EXPECT_NEAR(c.rows[3].rel_error, (1 + clean.rows[3].rel_error) / 3 - 1, 1e-12);  // shown with its error
  EXPECT_EQ(c.overall.rows, clean.overall.rows - 1);
  EXPECT_EQ(c.overall.max_abs, clean.overall.max_abs);  // the -67% is not in the summary
  EXPECT_EQ(c.by_model.at(c.rows[3].model).rows, clean.by_model.at(c.rows[3].model).rows - 1);
  EXPECT_NE(comparison_text(c).find("(1 spike left out)"), std::string::npos) << comparison_text(c);
  EXPECT_NE(comparison_json(c).find("\"flag\": \"spike\""), std::string::npos);
  set.rows[3].time_us /= 3 * 1.4;  // 1.4x apart the other way: not a spike
  EXPECT_EQ(compare_measurements(t, set).spikes, 0U);
}

TEST(Calibrate, HoldoutPredictsTheSizesItDidNotSee) {
  const topo::Topology t = topo::load_topology("dgx-a100:nodes=2");
  const CalibValues truth = shifted(values_of(t, t.num_ranks()));
  const CalibrationResult r = calibrate(t, synthetic(t, truth, {"ring", "dbtree", "hierarchical"}, 0.02, 3),
                                        {.hold = {"reduce_gbps"}, .holdout_half = true});
  EXPECT_GE(r.holdout_median_abs_error, 0);
  EXPECT_LT(r.holdout_median_abs_error, 0.05);
}

TEST(Calibrate, OneHostHoldsTheInterHostFigures) {
  const topo::Topology t = topo::load_topology("flat:ranks=4,alpha=3,bw=10,reduce=20");
  CalibValues truth = values_of(t, 4);
  truth.alpha_intra_us = 7;
  truth.intra_gbps = 4;
  const CalibrationResult r = calibrate(t, synthetic(t, truth, {"ring", "tree", "rhd"}, 0.01, 5), kHoldReduce);
  EXPECT_EQ(r.fitted, (std::vector<std::string>{"alpha_intra_us", "intra_gbps"})) << held_list(r);
  expect_recovered(r, truth, 0.05);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Calibrate, ParametersTheRowsCannotSeparateAreHeldAndNamed) {
  // Every allreduce reduces each byte it receives as it moves it: bandwidth and reduction rate
  // trade one for the other. One is held at the topology's value, and the report says why.
  const topo::Topology t = topo::load_topology("flat:ranks=4");
  CalibValues truth = values_of(t, 4);
  truth.intra_gbps *= 0.5;  // below the line rates the fit is bounded by
  truth.reduce_gbps *= 0.5;
  const MeasurementSet ring = synthetic(t, truth, {"ring", "tree"}, 0.01, 1);
  const CalibrationResult r = calibrate(t, ring);
  EXPECT_EQ(r.fitted.size(), 2u) << held_list(r);
  const std::string held = held_list(r);
  EXPECT_NE(held.find("cannot tell it from"), std::string::npos) << held;
  EXPECT_NE(held.find("reduce_gbps"), std::string::npos) << held;
  EXPECT_NE(held.find("intra_gbps"), std::string::npos) << held;
}

TEST(Calibrate, ALinkIsNeverFittedAboveItsLineRate) {
  // Rows that ask for 1.5x the NICs' line rate: inter_gbps stays at the line rate, said so, and
  // the held ones name the measurement that would identify them.
  const topo::Topology t = topo::load_topology("dgx-a100:nodes=2");
  CalibValues truth = values_of(t, t.num_ranks());
  truth.inter_gbps *= 1.5;
  const CalibrationResult r = calibrate(t, synthetic(t, truth, {"ring", "dbtree", "hierarchical"}, 0.01, 4), kHoldReduce);
  EXPECT_LE(r.after.inter_gbps, values_of(t, t.num_ranks()).inter_gbps);
  std::string bounded;
  for (const std::string& b : r.bounded) bounded += b + "\n";
  EXPECT_NE(bounded.find("inter_gbps: the rows ask for more than the 25 GB/s line rate"), std::string::npos) << bounded;
  EXPECT_NE(held_list(r).find("reduce_gbps: held by --hold"), std::string::npos);
  for (const std::string& h : r.held) {
    if (h.find("--hold") == std::string::npos) {
      EXPECT_NE(h.find("to identify it: "), std::string::npos) << h;
    }
  }
}

TEST(Calibrate, BadInputIsOneClearError) {
  const topo::Topology t = topo::load_topology("pcie-box:gpus=4");
  const std::string one_size = error_of([&] { calibrate(t, read_measurements(kData + "one_size.txt")); });
  EXPECT_NE(one_size.find("only one size"), std::string::npos) << one_size;
  const topo::Topology eight = topo::load_topology("flat:ranks=8");
  const std::string ranks = error_of([&] { calibrate(eight, read_measurements(kData + "one_size.txt")); });
  EXPECT_NE(ranks.find("measured on 4 ranks, the topology 'flat:ranks=8' has 8"), std::string::npos) << ranks;
  const std::string hold = error_of([&] { calibrate(t, read_measurements(kData + "one_size.txt"), {.hold = {"speed"}}); });
  EXPECT_NE(hold.find("unknown calibration parameter 'speed'"), std::string::npos) << hold;
}

// ---- the calibrated topology ----------------------------------------------------------------

TEST(CalibratedTopology, DerivesTheFittedFigures) {
  // (Not pcie-box:nodes=2: scaled latencies there move the route between host-mates from the
  // host's PCIe tree to the network, and the written figures miss; the JSON says by how much.)
  for (const std::string spec : {"dgx-a100:nodes=2", "flat:ranks=4", "dgx-h100", "fat-tree:nodes=3"}) {
    const topo::Topology t = topo::load_topology(spec);
    const CalibValues v = shifted(values_of(t, t.num_ranks()));
    double mismatch = 1;
    const topo::Topology c = apply_calibration(t, t.num_ranks(), v, &mismatch);
    EXPECT_LT(mismatch, 1e-6) << spec;
    const CalibValues d = values_of(c, c.num_ranks());
    EXPECT_NEAR(d.intra_gbps / v.intra_gbps, 1, 1e-6) << spec;
    EXPECT_NEAR(d.reduce_gbps / v.reduce_gbps, 1, 1e-6) << spec;
    if (t.num_hosts() > 1) {
      EXPECT_NEAR(d.inter_gbps / v.inter_gbps, 1, 1e-6) << spec;
    }
  }
}

// `spec`'s own figures with `change` applied, written by apply_calibration: the machine before and
// after, the figures asked for and those the written machine derives, and the mismatch reported.
struct WrittenFigures {
  topo::Topology before, after;
  CalibValues asked, derived;
  double mismatch = 1;
};
template <class Change>
WrittenFigures write_changed(const std::string& spec, Change change) {
  WrittenFigures w{topo::load_topology(spec), {}, {}, {}, 1};
  w.asked = values_of(w.before, w.before.num_ranks());
  change(w.asked);
  w.after = apply_calibration(w.before, w.before.num_ranks(), w.asked, &w.mismatch);
  w.derived = values_of(w.after, w.after.num_ranks());
  return w;
}

TEST(CalibratedTopology, TheWayToTheNicMovesWithTheNetwork) {
  // NVLink fitted slower, the network as declared (the OCI A100 log's whole-log fit: NVLink 189
  // of 247 GB/s): a DGX A100's PCIe between GPU and NIC lies on the route between hosts, not on
  // the route between host-mates, so it keeps pace with the network's figure, not NVLink's; had
  // it been scaled with NVLink, 31.5 GB/s x 0.6 would sit below the 25 GB/s NIC on every route
  // between hosts and the file would price the network 24% slower than the fit.
  const WrittenFigures w = write_changed("dgx-a100:nodes=2", [](CalibValues& v) { v.intra_gbps *= 0.6; });
  EXPECT_LT(w.mismatch, 1e-6);
  EXPECT_NEAR(w.derived.intra_gbps / w.asked.intra_gbps, 1, 1e-6);
  EXPECT_NEAR(w.derived.inter_gbps / w.asked.inter_gbps, 1, 1e-6);
  for (std::size_t i = 0; i < w.after.num_links(); ++i) {
    if (w.after.link(i).kind == topo::LinkKind::pcie) {
      EXPECT_EQ(w.after.link(i).bandwidth_gbps, w.before.link(i).bandwidth_gbps) << i;
    }
  }
}

TEST(CalibratedTopology, EachLevelCarriesItsOwnLatency) {
  // Three times the latency inside a host, the network's as declared: a DGX H100's PCIe on the
  // way to the NICs keeps the network's latency (scaled with NVLink's it would carry 3 x 2 us
  // onto the 4 us route between hosts), the PCIe between its switches and the CPUs takes the
  // intra scale (so no route between host-mates leaves NVLink), and every route keeps its links.
  const WrittenFigures w = write_changed("dgx-h100:nodes=2", [](CalibValues& v) { v.alpha_intra_us *= 3; });
  EXPECT_LT(w.mismatch, 1e-6);
  EXPECT_NEAR(w.derived.alpha_intra_us / w.asked.alpha_intra_us, 1, 1e-6);
  EXPECT_NEAR(w.derived.alpha_inter_us / w.asked.alpha_inter_us, 1, 1e-6);
  for (const auto& [a, b] : {std::pair{0, 1}, std::pair{0, 8}, std::pair{8, 0}, std::pair{3, 12}})
    EXPECT_EQ(w.after.route(a, b).links, w.before.route(a, b).links) << a << "->" << b;
}

TEST(CalibratedTopology, TheWrittenCheckNamesWhatTheFileCannotCarry) {
  // One host: every fitted figure is written as fitted, and nothing is said.
  const topo::Topology one = topo::load_topology("dgx-h100");
  MeasurementHints ring;
  ring.nccl_algo = "Ring";
  const MeasurementSet one_log = read_measurements(kLogs + "together-h100-1node-allreduce-ring.txt", ring);
  const CalibrationResult one_fit = calibrate(one, one_log);
  EXPECT_TRUE(check_written(calibrated_topology_json(one, one_fit), one_fit, one_log).misses.empty());
  // Four hosts whose fit puts 9.3 us inside a host: the PCIe on the way to the NICs takes that
  // scale, so the file carries more between hosts than was fitted, and its errors are compare's.
  const topo::Topology four = topo::load_topology("dgx-h100:nodes=4");
  const MeasurementSet four_log = read_measurements(kLogs + "nccl-tests-309-h100-4node-ib-allreduce-default.txt");
  const CalibrationResult r = calibrate(four, four_log);
  const WrittenCheck w = check_written(calibrated_topology_json(four, r), r, four_log);
  ASSERT_EQ(w.misses.size(), 1u);
  EXPECT_EQ(w.misses[0].rfind("alpha_inter_us ", 0), 0u) << w.misses[0];
  EXPECT_GT(w.fitted_rows.max_abs, r.max_abs_error);
  EXPECT_EQ(w.fitted_rows.rows, r.rows.size() - 2);  // less a spike and an outlier
  EXPECT_NE(written_check_text(w).find("as compare and simulate price it"), std::string::npos);
}

TEST(CalibratedTopology, NoLinkIsWrittenBeyondItsLineRate) {
  // NVLink fitted far slower than the NICs at their line rate (nccl-tests#319's Ring run: 39 and
  // 50 GB/s): the NICs stay at their line rate, the way to them (PCIe) keeps its own, and both
  // figures are written as fitted.
  CalibValues declared;
  const WrittenFigures w = write_changed("dgx-h100:nodes=2", [&](CalibValues& v) {
    declared = v;
    v.intra_gbps = 39;
    v.inter_gbps = 50;
  });
  for (std::size_t i = 0; i < w.after.num_links(); ++i)
    EXPECT_LE(w.after.link(i).bandwidth_gbps, w.before.link(i).bandwidth_gbps * (50.0 / declared.inter_gbps) + 1e-9)
        << i;
  EXPECT_NO_THROW(w.after.validate());
  EXPECT_LT(w.mismatch, 1e-6);
}

TEST(CalibratedTopology, TheJsonRoundTripsWithItsCalibration) {
  const topo::Topology t = topo::load_topology("dgx-a100:nodes=2");
  const CalibValues truth = shifted(values_of(t, t.num_ranks()));
  const CalibrationResult r = calibrate(t, synthetic(t, truth, {"ring", "dbtree", "hierarchical"}, 0.01, 2), kHoldReduce);
  const std::string text = calibrated_topology_json(t, r);
  const topo::Topology back = topo::topology_from_json(text, "calibrated.json");
  EXPECT_NE(back.calibration.find("colltune-calibration"), std::string::npos);
  const CalibValues d = values_of(back, back.num_ranks());
  EXPECT_NEAR(d.inter_gbps / r.after.inter_gbps, 1, 1e-6);
  EXPECT_NEAR(d.alpha_intra_us / r.after.alpha_intra_us, 1, 1e-6);
  // Written again, the calibration block is kept.
  EXPECT_NE(topo::to_json(back).find("colltune-calibration"), std::string::npos);
  // Compared on the calibrated machine, the synthetic rows agree as the fit said.
  const Comparison c = compare_measurements(back, synthetic(t, truth, {"ring"}, 0.0, 1));
  EXPECT_LT(c.overall.max_abs, 0.05);
}

}  // namespace
}  // namespace colltune::tuner
