// Calibration's parameters and the row predictor (calibrate.hpp): a colltune row by its
// registry algorithm, an NCCL row by the one NCCL price path (sim::NcclPricer): NCCL's choice
// on the machine as measured, or the cell the log's NCCL_ALGO/NCCL_PROTO name, priced by its
// colltune schedule with the protocol's costs at the parameters' values.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "colltune/calibrate/calibrate.hpp"
#include "colltune/common/error.hpp"
#include "colltune/sim/calibration.hpp"
#include "colltune/sim/cost_model.hpp"
#include "colltune/sim/priced_machine.hpp"

namespace colltune::tuner {

// ---- parameters -----------------------------------------------------------------------------

double& CalibValues::at(int i) {
  switch (i) {
    case 0: return alpha_intra_us;
    case 1: return intra_gbps;
    case 2: return alpha_inter_us;
    case 3: return inter_gbps;
    case 4: return reduce_gbps;
    case 5: return ll_efficiency;
    case 6: return ll128_efficiency;
  }
  throw Error("calibration parameter index " + std::to_string(i) + " out of range");
}
double CalibValues::at(int i) const { return const_cast<CalibValues&>(*this).at(i); }

const std::vector<CalibrationParameter>& calibration_parameters() {
  static const std::vector<CalibrationParameter> table{
      {"alpha_intra_us", "run all_reduce_perf on one node from 8 B (-b 8 -e 1M)"},
      {"intra_gbps", "run all_reduce_perf on one node up to 1 GiB or more (-b 1M -e 4G)"},
      {"alpha_inter_us", "run all_reduce_perf across nodes from 8 B (-b 8 -e 1M)"},
      {"inter_gbps", "run all_reduce_perf across nodes with NCCL_ALGO=Ring up to 1 GiB or more"},
      {"reduce_gbps", "measure the reduction rate with bench/micro/micro_reduce, or run reduce_scatter_perf beside "
                      "all_gather_perf"},
      {"ll_efficiency", "run all_reduce_perf with NCCL_PROTO=LL from 64 KiB to 16 MiB"},
      {"ll128_efficiency", "run all_reduce_perf with NCCL_PROTO=LL128 from 64 KiB to 64 MiB"},
  };
  return table;
}

const std::vector<std::string>& calibration_parameter_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const CalibrationParameter& p : calibration_parameters()) out.push_back(p.name);
    return out;
  }();
  return names;
}

int calibration_parameter_index(const std::string& name) {
  const auto& names = calibration_parameter_names();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) {
    std::string all;
    for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
    throw Error("unknown calibration parameter '" + name + "' (valid: " + all + ")");
  }
  return static_cast<int>(it - names.begin());
}

namespace {

CalibValues values_of_figures(const sim::MachineFigures& f) {
  CalibValues v;
  v.alpha_intra_us = f.alpha_intra_us;
  v.intra_gbps = f.intra_gbps;
  v.alpha_inter_us = f.alpha_inter_us;
  v.inter_gbps = f.inter_gbps;
  v.reduce_gbps = f.reduce_gbps;
  v.ll_efficiency = f.efficiency.ll;
  v.ll128_efficiency = f.efficiency.ll128;
  return v;
}

}  // namespace

sim::MachineFigures figures_of(const CalibValues& v) {
  sim::MachineFigures f;
  f.alpha_intra_us = v.alpha_intra_us;
  f.intra_gbps = v.intra_gbps;
  f.alpha_inter_us = v.alpha_inter_us;
  f.inter_gbps = v.inter_gbps;
  f.reduce_gbps = v.reduce_gbps;
  f.efficiency = {v.ll_efficiency, v.ll128_efficiency};
  return f;
}

CalibValues values_of(const topo::Topology& topology, int nranks) {
  return values_of_figures(
      sim::figures_of(sim::derive_level_costs(topology, nranks), sim::calibration_facts(topology).efficiency));
}

CalibValues priced_values_of(const topo::Topology& topology, int nranks) {
  return values_of(sim::priced_machine(topology), nranks);
}

// ---- the predictor --------------------------------------------------------------------------

namespace {

sim::NcclColl nccl_coll_of(coll::Collective c) {
  switch (c) {
    case coll::Collective::allreduce: return sim::NcclColl::allreduce;
    case coll::Collective::reduce_scatter: return sim::NcclColl::reduce_scatter;
    case coll::Collective::allgather: return sim::NcclColl::allgather;
  }
  return sim::NcclColl::allreduce;
}

const coll::Algorithm* registered(const std::string& id) {
  for (const coll::Algorithm& a : coll::algorithms())
    if (a.id == id) return &a;
  return nullptr;
}

// What runs a row, found once per row (the fit prices every row thousands of times).
struct Resolved {
  std::string label;  // "ring", "nccl_ring+ll128", "nccl:NVLS+simple"
  std::string why;    // no model: why
  const coll::Algorithm* algorithm = nullptr;  // colltune rows
  coll::AlgoOptions options;
  const sim::NcclPricer* pricer = nullptr;  // NCCL rows
  sim::NcclColl coll = sim::NcclColl::allreduce;
  sim::NcclChoice cell;   // NCCL's choice for the row, on the machine as measured
  bool scheduled = false;  // a colltune schedule prices it (else NCCL's own time stands in)
  bool modelled() const { return algorithm || pricer; }
};

}  // namespace

struct Predictor::Impl {
  const topo::Topology& topology;
  int nranks;
  topo::Topology priced;  // the machine as collectives achieve it (calibrated: as fitted)
  sim::CostModel model;   // colltune's rows
  // One NCCL price path per (NCCL_ALGO, NCCL_PROTO, channel settings) the rows ran with; null where NCCL's model
  // does not describe the machine (why in nccl_error).
  using PricerKey = std::tuple<std::string, std::string, sim::NcclChannelEnv>;  // NCCL_ALGO, NCCL_PROTO, channels
  mutable std::map<PricerKey, std::unique_ptr<sim::NcclPricer>> pricers;
  mutable std::map<PricerKey, std::string> nccl_error;
  using Key =
      std::tuple<int, int, std::string, std::string, sim::NcclChannelEnv, std::size_t, std::size_t, std::size_t>;
  mutable std::map<Key, Resolved> cache;
  // Guards cache, pricers and nccl_error: the fit prices its rows on several threads. A row is
  // resolved once (under the lock); its pricing runs outside it.
  mutable std::mutex mutex;

  Impl(const topo::Topology& t, int n) : topology(t), nranks(n), priced(sim::priced_machine(t)), model(priced, n) {}

  const Resolved& resolved(const Measurement& row) const {
    const Key key{static_cast<int>(row.runtime),
                  static_cast<int>(row.collective),
                  row.algorithm,
                  row.protocol,
                  row.nccl_channels,
                  row.bytes,
                  row.elem_size,
                  row.chunk_elems};
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it == cache.end()) it = cache.emplace(key, row.runtime == MeasuredRuntime::colltune ? colltune_row(row) : nccl_row(row)).first;
    return it->second;
  }

  const sim::NcclPricer* pricer(const Measurement& row, std::string* why) const {
    const PricerKey key{row.algorithm, row.protocol, row.nccl_channels};
    auto it = pricers.find(key);
    if (it == pricers.end()) {
      sim::NcclOptions options;
      options.nranks = nranks;
      options.algo_env = row.algorithm;
      options.proto_env = row.protocol;
      options.channel_env = row.nccl_channels;
      try {
        it = pricers.emplace(key, sim::make_nccl_pricer(topology, priced, options)).first;
      } catch (const Error& e) {
        nccl_error[key] = e.what();
        it = pricers.emplace(key, nullptr).first;
      }
    }
    if (!it->second) *why = "NCCL's model does not describe this machine (" + nccl_error[key] + ")";
    return it->second.get();
  }

  Resolved nccl_row(const Measurement& row) const {
    Resolved r;
    r.pricer = pricer(row, &r.why);
    if (!r.pricer) return r;
    r.coll = nccl_coll_of(row.collective);
    try {
      r.cell = r.pricer->model().choose(r.coll, row.bytes);
    } catch (const Error& e) {
      r.pricer = nullptr;
      r.why = e.what();
      return r;
    }
    const sim::NcclPrice p = r.pricer->price(r.coll, r.cell.algo, r.cell.proto, row.bytes, row.elem_size);
    r.scheduled = !p.schedule.empty();
    const std::string proto(sim::to_string(r.cell.proto));
    r.label = r.scheduled ? p.schedule + "+" + proto : "nccl:" + std::string(sim::nccl_env_name(r.cell.algo)) + "+" + proto;
    r.why = p.fallback;
    return r;
  }

  Resolved colltune_row(const Measurement& row) const {
    Resolved r;
    const coll::Algorithm* a = registered(row.algorithm);
    if (!a) {
      r.why = row.algorithm == "mpi" ? "MPI_Allreduce: colltune does not model which algorithm MPI runs"
                                     : "'" + row.algorithm + "' is not a colltune algorithm";
      return r;
    }
    if (a->collective != row.collective) {
      r.why = row.algorithm + " is a " + std::string(coll::to_string(a->collective)) + ", the row a " +
              std::string(coll::to_string(row.collective));
      return r;
    }
    coll::AlgoOptions options;
    if (row.chunk_elems > 0) options.chunk_elems = row.chunk_elems;
    try {
      const std::size_t elem = row.elem_size == 0 ? 1 : row.elem_size;
      coll::applicable_algorithm(a->id, model.layout, row.bytes / elem, model.options_for(*a, {}));
    } catch (const Error& e) {
      r.why = e.what();
      return r;
    }
    r.algorithm = a;
    r.options = model.options_for(*a, options);
    r.label = a->id;
    return r;
  }
};

Predictor::Predictor(const topo::Topology& topology, int nranks) : impl_(std::make_unique<Impl>(topology, nranks)) {}
Predictor::~Predictor() = default;

std::optional<std::string> Predictor::model_of(const Measurement& row, std::string* why) const {
  const Resolved& r = impl_->resolved(row);
  if (!r.modelled()) {
    if (why) *why = r.why;
    return std::nullopt;
  }
  return r.label;
}

std::optional<std::string> Predictor::nccl_model_only(const Measurement& row) const {
  const Resolved& r = impl_->resolved(row);
  if (!r.pricer || r.scheduled) return std::nullopt;
  return r.why;
}

std::optional<NcclPick> Predictor::nccl_pick(const Measurement& row) const {
  const Resolved& r = impl_->resolved(row);
  if (!r.pricer) return std::nullopt;
  NcclPick p{std::string(sim::nccl_env_name(r.cell.algo)), std::string(sim::nccl_env_name(r.cell.proto)),
             r.cell.channels, r.cell.time_us, ""};
  if (!row.algorithm.empty()) p.env = "NCCL_ALGO=" + row.algorithm;
  if (!row.protocol.empty()) {
    if (!p.env.empty()) p.env += ' ';
    p.env += "NCCL_PROTO=";
    p.env += row.protocol;
  }
  return p;
}

std::vector<bool> Predictor::touches(const Measurement& row) const {
  const Resolved& r = impl_->resolved(row);
  std::vector<bool> t(CalibValues::kCount, r.algorithm != nullptr || r.scheduled);
  t[5] = r.scheduled && r.cell.proto == sim::NcclProto::ll;
  t[6] = r.scheduled && r.cell.proto == sim::NcclProto::ll128;
  return t;
}

double Predictor::time_us(const Measurement& row) const {
  const Resolved& r = impl_->resolved(row);
  if (!r.modelled()) throw Error(row.source + ": no model: " + r.why);
  if (r.pricer) return r.pricer->price(r.coll, r.cell.algo, r.cell.proto, row.bytes, row.elem_size).time_us;
  const std::size_t elem = row.elem_size == 0 ? 1 : row.elem_size;
  return sim::hint_or_price(*r.algorithm, impl_->model.layout, row.bytes / elem * elem, elem, r.options,
                            impl_->model.levels);
}

double Predictor::time_us(const Measurement& row, const CalibValues& values) const {
  const Resolved& r = impl_->resolved(row);
  if (!r.modelled()) throw Error(row.source + ": no model: " + r.why);
  const sim::MachineFigures figures = figures_of(values);
  if (r.pricer) return r.pricer->price(r.coll, r.cell.algo, r.cell.proto, row.bytes, row.elem_size, &figures).time_us;
  const std::size_t elem = row.elem_size == 0 ? 1 : row.elem_size;
  return sim::hint_or_price(*r.algorithm, impl_->model.layout, row.bytes / elem * elem, elem, r.options,
                            sim::with_figures(impl_->model.levels, figures));
}

}  // namespace colltune::tuner
