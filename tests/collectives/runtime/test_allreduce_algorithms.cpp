// Every registry allreduce algorithm, executed for real over the threads transport: rank
// counts 1-17, sizes {0, 1, 2, 7, p-1, p, p+1, 1000} (65537 and 2^20 for a few p), in place and
// out of place, with and without small pipeline chunks; then every dtype x op for a subset of
// rank counts. Every rank's result is compared bit-exactly with the host reference.
#include <gtest/gtest.h>

#include <set>

#include "colltune/collectives/allreduce.hpp"
#include "colltune/collectives/executor.hpp"
#include "colltune/collectives/registry.hpp"
#include "colltune/collectives/threads.hpp"
#include "colltune/common/error.hpp"
#include "common/switch_layouts.hpp"
#include "runtime_test_util.hpp"

namespace colltune {
namespace {

using coll::DType;
using coll::ReduceOp;

std::vector<std::string> allreduce_ids() {
  std::vector<std::string> ids;
  for (const auto& a : coll::algorithms()) {
    // nccl_nvls's last rank is the NVSwitch, not a GPU: its own test below.
    if (a.collective == coll::Collective::allreduce && !a.in_switch) ids.push_back(a.id);
  }
  return ids;
}

bool is_hierarchical(const std::string& id) { return id.rfind("hierarchical", 0) == 0; }

// Hierarchical algorithms run on several hosts: uniform hosts of 2 or 3 where p allows,
// else hosts of 2 with a smaller last one.
RankLayout layout_for(const std::string& id, int p) {
  if (!is_hierarchical(id) || p < 2) return RankLayout::single_host(p);
  const int per_host = p % 2 == 0 ? 2 : (p % 3 == 0 ? 3 : 2);
  std::vector<int> host_of(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) host_of[static_cast<std::size_t>(r)] = r / per_host;
  return RankLayout(host_of);
}

struct Case {
  std::size_t count;
  DType dtype;
  ReduceOp op;
  std::size_t chunk;
  bool in_place;
};

// Runs every case on one set of rank threads; returns how many ran (others not applicable).
std::size_t run_cases(const std::string& id, const RankLayout& layout, const std::vector<Case>& cases,
                      test::FailureLog& log, const coll::AlgoOptions& base = {}) {
  const std::string& inner = base.inner;
  const int p = layout.nranks();
  std::vector<bool> applicable(cases.size());
  std::vector<std::vector<std::byte>> refs(cases.size());  // computed once, shared by the ranks
  std::size_t ran = 0;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    coll::AlgoOptions algo = base;
    algo.chunk_elems = cases[c].chunk;
    applicable[c] = !coll::find_algorithm(id).not_applicable(layout, cases[c].count, algo).has_value();
    if (applicable[c]) refs[c] = test::make_reference(cases[c].dtype, cases[c].op, p, cases[c].count);
    ran += applicable[c];
  }
  coll::run_threads(layout, [&](coll::Communicator& comm) {
    for (std::size_t c = 0; c < cases.size(); ++c) {
      if (!applicable[c]) continue;
      const Case& k = cases[c];
      coll::AllreduceOptions o;
      o.algorithm = id;
      o.algo = base;
      o.algo.chunk_elems = k.chunk;
      o.dtype = k.dtype;
      o.op = k.op;
      o.timeout_s = 30;
      auto in = test::make_input(k.dtype, k.op, comm.rank(), k.count);
      std::vector<std::byte> out(k.in_place ? 0 : in.size());
      void* result = k.in_place ? in.data() : out.data();
      coll::allreduce(comm, in.data(), result, k.count, o);
      const auto bad = test::first_mismatch(result, refs[c].data(), k.count, coll::dtype_size(k.dtype));
      if (bad >= 0) {
        log.add(id + " p=" + std::to_string(p) + " rank " + std::to_string(comm.rank()) + " count " +
                std::to_string(k.count) + " " + std::string(coll::to_string(k.dtype)) + " " +
                std::string(coll::to_string(k.op)) + " chunk " + std::to_string(k.chunk) +
                (k.in_place ? " in-place" : " out-of-place") + " inner " + inner + ": element " + std::to_string(bad));
      }
    }
  });
  return ran;
}

std::vector<std::size_t> sizes_for(int p) {
  const auto up = static_cast<std::size_t>(p);
  std::set<std::size_t> sizes{0, 1, 2, 7, up - 1, up, up + 1, 1000};
  if (p == 2 || p == 5 || p == 17) {
    sizes.insert(65537);
    sizes.insert(std::size_t{1} << 20);
  }
  return {sizes.begin(), sizes.end()};
}

TEST(AllreduceAlgorithms, EveryAlgorithmEveryRankCountEverySize) {
  const auto ids = allreduce_ids();
  ASSERT_GE(ids.size(), 4u);
  test::FailureLog log;
  for (const auto& id : ids) {
    std::size_t ran = 0;
    for (int p = 1; p <= 17; ++p) {
      std::vector<Case> cases;
      bool in_place = (p % 2) == 0;
      for (std::size_t n : sizes_for(p)) {
        // Small chunks reach the multi-chunk paths (smallest where p is small, to stay fast).
        const std::size_t chunk = n > 1000 ? 16411 : (p > 8 ? 7 : 3);
        cases.push_back({n, DType::f32, ReduceOp::sum, chunk, in_place});
        cases.push_back({n, DType::f32, ReduceOp::sum, 0, !in_place});
        in_place = !in_place;
      }
      ran += run_cases(id, layout_for(id, p), cases, log);
    }
    EXPECT_GT(ran, 0u) << id << " never ran";
  }
  EXPECT_EQ(log.count(), 0u) << log.summary();
}

TEST(AllreduceAlgorithms, EveryDtypeAndOp) {
  const DType dtypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64};
  const ReduceOp ops[] = {ReduceOp::sum, ReduceOp::avg, ReduceOp::min, ReduceOp::max, ReduceOp::prod};
  test::FailureLog log;
  for (const auto& id : allreduce_ids()) {
    for (int p : {1, 2, 3, 6, 13}) {
      std::vector<Case> cases;
      std::size_t i = 0;
      for (DType t : dtypes) {
        for (ReduceOp op : ops) {
          for (std::size_t n : {std::size_t{1}, static_cast<std::size_t>(p) + 1, std::size_t{257}}) {
            cases.push_back({n, t, op, (i % 3 == 0) ? 2u : 0u, (i++ % 2) == 0});
          }
        }
      }
      run_cases(id, layout_for(id, p), cases, log);
    }
  }
  EXPECT_EQ(log.count(), 0u) << log.summary();
}

TEST(AllreduceAlgorithms, HierarchicalOnEmulatedHosts) {
  // 3 hosts of 4, 4 hosts of 2, and an uneven 3+3+2 (hierarchical_leader only).
  test::FailureLog log;
  for (const auto& layout :
       {RankLayout::uniform(3, 4), RankLayout::uniform(4, 2), RankLayout({0, 0, 0, 1, 1, 1, 2, 2})}) {
    for (const std::string inner : {"ring", "rhd", "tree", "dbtree"}) {
      for (const std::string id : {"hierarchical", "hierarchical_leader"}) {
        std::vector<Case> cases{{0, DType::f32, ReduceOp::sum, 0, true},
                                {13, DType::i32, ReduceOp::max, 2, false},
                                {5000, DType::f64, ReduceOp::sum, 64, true}};
        coll::AlgoOptions base;
        base.inner = inner;
        const std::size_t ran = run_cases(id, layout, cases, log, base);
        if (inner == "ring" && (layout.is_uniform() || id == "hierarchical_leader")) {
          EXPECT_EQ(ran, cases.size()) << id << " " << inner;
        }
      }
    }
  }
  EXPECT_EQ(log.count(), 0u) << log.summary();
}

TEST(AllreduceAlgorithms, NcclRingOnEmulatedHostsWithAndWithoutChannelOrders) {
  // The default channels (one per rank of a host) and NCCL-like orders: three channels on hosts
  // of 4 (in order, reversed, interleaved), one channel on hosts of 2.
  const std::vector<std::vector<int>> four{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}};
  const std::vector<std::vector<int>> two{{1, 0}};
  test::FailureLog log;
  for (const auto& [layout, orders] :
       {std::pair{RankLayout::uniform(3, 4), four}, std::pair{RankLayout::uniform(4, 2), two}}) {
    for (const auto& channel_orders : {std::vector<std::vector<int>>{}, orders}) {
      std::vector<Case> cases{{0, DType::f32, ReduceOp::sum, 0, true},
                              {2, DType::f32, ReduceOp::sum, 0, false},
                              {13, DType::i32, ReduceOp::max, 2, false},
                              {5000, DType::f64, ReduceOp::sum, 64, true},
                              {65537, DType::f32, ReduceOp::sum, 0, false}};
      coll::AlgoOptions base;
      base.channel_orders = channel_orders;
      EXPECT_EQ(run_cases("nccl_ring", layout, cases, log, base), cases.size());
    }
  }
  EXPECT_EQ(log.count(), 0u) << log.summary();
}

TEST(AllreduceAlgorithms, NcclTreeOnEmulatedHosts) {
  // One host, two hosts, an odd number of hosts (the second tree shifted, not mirrored), one rank
  // per host; the default chains and given ones, both host-link patterns.
  const std::vector<std::vector<int>> four{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}};
  const std::vector<std::vector<int>> three{{2, 0, 1}};
  test::FailureLog log;
  for (const auto& [layout, orders] :
       {std::pair{RankLayout::uniform(3, 4), four}, std::pair{RankLayout::uniform(2, 3), three},
        std::pair{RankLayout::uniform(1, 4), four},
        std::pair{RankLayout::uniform(5, 1), std::vector<std::vector<int>>{}}}) {
    for (const auto& channel_orders : {std::vector<std::vector<int>>{}, orders}) {
      for (bool simple : {false, true}) {
        std::vector<Case> cases{{0, DType::f32, ReduceOp::sum, 0, true},
                                {2, DType::f32, ReduceOp::sum, 0, false},
                                {13, DType::i32, ReduceOp::max, 2, false},
                                {5001, DType::f64, ReduceOp::sum, 64, true},
                                {65537, DType::f32, ReduceOp::sum, 0, false}};
        coll::AlgoOptions base;
        base.channel_orders = channel_orders;
        base.nccl_simple_tree = simple;
        EXPECT_EQ(run_cases("nccl_tree", layout, cases, log, base), cases.size());
      }
    }
  }
  EXPECT_EQ(log.count(), 0u) << log.summary();
}

// Runs schedule `id` with its helpers as ranks of `comm` (their buffers start as garbage and are
// not checked) and returns the first element where a data rank's result differs from the sum
// over the data ranks, or -1.
long long run_with_helpers(coll::Communicator& comm, const std::string& id, const RankLayout& layout, std::size_t count,
                           std::size_t chunk) {
  coll::AlgoOptions algo;
  algo.chunk_elems = chunk;
  const coll::Schedule s = coll::build_schedule(id, layout, count, algo);
  const bool data_rank = !s.is_helper(comm.rank());
  auto buf = data_rank ? test::make_input(DType::f32, ReduceOp::sum, comm.rank(), count)
                       : std::vector<std::byte>(count * 4, std::byte{0x7f});
  const coll::PlainCodec codec(DType::f32, ReduceOp::sum);
  coll::execute(s, comm, buf.data(), 4, codec, 30);
  if (!data_rank) return -1;
  const auto ref = test::make_reference(DType::f32, ReduceOp::sum, s.data_ranks(), count);
  return test::first_mismatch(buf.data(), ref.data(), count, 4);
}

// nccl_nvls on the threads executor: L GPU ranks and the NVSwitch (the last rank, a helper whose
// buffer starts as garbage and is not checked); every GPU ends with the sum over the GPUs alone,
// bit for bit, for L = 1..8, uneven counts, with and without small chunks.
TEST(AllreduceAlgorithms, NcclNvlsWithTheSwitchAsAHelper) {
  test::FailureLog log;
  for (int gpus = 1; gpus <= 8; ++gpus) {
    const RankLayout layout = RankLayout::single_host(gpus + 1);
    std::vector<std::pair<std::size_t, std::size_t>> cases;  // (count, chunk)
    for (std::size_t n :
         {std::size_t{1}, static_cast<std::size_t>(gpus) + 1, std::size_t{7}, std::size_t{1001}, std::size_t{65537}})
      for (std::size_t chunk : {std::size_t{0}, std::size_t{5}})
        if (!(chunk == 5 && n > 1001)) cases.emplace_back(n, chunk);
    coll::run_threads(layout, [&](coll::Communicator& comm) {
      for (const auto& [count, chunk] : cases) {
        const long long bad = run_with_helpers(comm, "nccl_nvls", layout, count, chunk);
        if (bad >= 0)
          log.add("nccl_nvls L=" + std::to_string(gpus) + " rank " + std::to_string(comm.rank()) + " count " +
                  std::to_string(count) + " chunk " + std::to_string(chunk) + ": element " + std::to_string(bad));
      }
    });
  }
  EXPECT_EQ(log.count(), 0u) << log.summary();
}

// nccl_nvls_tree (every host's NVSwitch as a helper) and nccl_collnet (the network's SHARP switch
// as one helper) on the threads executor: every GPU ends with the sum over the GPUs alone, bit
// for bit, the helpers' buffers starting as garbage; 1-3 hosts of 1-3 GPUs, uneven counts.
TEST(AllreduceAlgorithms, NcclNvlsTreeAndCollnetWithTheSwitchesAsHelpers) {
  test::FailureLog log;
  for (const std::string id : {"nccl_nvls_tree", "nccl_collnet"}) {
    for (int hosts = 1; hosts <= 3; ++hosts) {
      for (int gpus = 1; gpus <= 3; ++gpus) {
        const RankLayout layout =
            id == "nccl_collnet" ? test::collnet_layout(hosts, gpus) : test::nvls_tree_layout(hosts, gpus);
        coll::run_threads(layout, [&](coll::Communicator& comm) {
          for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1001}, std::size_t{65537}}) {
            for (std::size_t chunk : {std::size_t{0}, std::size_t{5}}) {
              if (chunk == 5 && count > 1001) continue;
              const long long bad = run_with_helpers(comm, id, layout, count, chunk);
              if (bad >= 0)
                log.add(id + " H=" + std::to_string(hosts) + " L=" + std::to_string(gpus) + " rank " +
                        std::to_string(comm.rank()) + " count " + std::to_string(count) + " chunk " +
                        std::to_string(chunk) + ": element " + std::to_string(bad));
            }
          }
        });
      }
    }
  }
  EXPECT_EQ(log.count(), 0u) << log.summary();
}

// coll::allreduce wants every rank's result, so a schedule with helpers (the NVSwitch rank of
// nccl_nvls, dedicated parameter servers) is refused with the reason rather than run with the
// last ranks left unreduced.
TEST(AllreduceAlgorithms, SchedulesWithHelpersAreRefused) {
  const RankLayout layout = RankLayout::single_host(4);
  std::vector<std::string> errors(4);
  coll::run_threads(layout, [&](coll::Communicator& comm) {
    std::vector<float> in(16, 1.0f), out(16);
    coll::AllreduceOptions options;
    options.algorithm = "nccl_nvls";
    try {
      coll::allreduce(comm, in.data(), out.data(), in.size(), options);
    } catch (const Error& e) {
      errors[static_cast<std::size_t>(comm.rank())] = e.what();
    }
  });
  for (const std::string& e : errors) EXPECT_NE(e.find("its last 1 of 4 ranks are helpers"), std::string::npos) << e;
}

}  // namespace
}  // namespace colltune
