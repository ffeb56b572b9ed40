#include "colltune/collectives/algorithms/builder.hpp"

#include <algorithm>

#include "colltune/common/error.hpp"

namespace colltune::coll::algo {

ScheduleBuilder::ScheduleBuilder(std::string id, Collective collective, int nranks, std::size_t count) {
  if (nranks <= 0) throw Error("algorithm '" + id + "': needs at least one rank (got " + std::to_string(nranks) + ")");
  schedule_.algorithm = std::move(id);
  schedule_.collective = collective;
  schedule_.nranks = nranks;
  schedule_.count = count;
  schedule_.ranks.resize(static_cast<std::size_t>(nranks));
  last_key_.assign(static_cast<std::size_t>(nranks), -1);
}

void ScheduleBuilder::add(int rank, int t, const Op& op) {
  // Phases get disjoint key ranges so a new phase never merges into an old step.
  const long long key = static_cast<long long>(phase_) * (1LL << 40) + t;
  auto& steps = schedule_.ranks[static_cast<std::size_t>(rank)];
  auto& last = last_key_[static_cast<std::size_t>(rank)];
  if (steps.empty() || key != last) steps.emplace_back();
  last = key;
  steps.back().ops.push_back(op);
}

void ScheduleBuilder::message(int t, int from, int to, const Block& src, const Block& dst, bool reduce,
                              std::uint16_t channel) {
  if (src.count == 0) return;
  add(from, t, Op{OpKind::send, to, src, channel});
  add(to, t, Op{reduce ? OpKind::recv_reduce : OpKind::recv_copy, from, dst, channel});
}

void ScheduleBuilder::append(const Schedule& sub, const std::vector<int>& ranks, std::size_t offset) {
  begin_phase();
  for (std::size_t i = 0; i < sub.ranks.size(); ++i) {
    const int rank = ranks[i];
    auto& steps = schedule_.ranks[static_cast<std::size_t>(rank)];
    for (const Step& step : sub.ranks[i]) {
      Step mapped;
      for (const Op& op : step.ops) {
        mapped.ops.emplace_back(op.kind, ranks[static_cast<std::size_t>(op.peer)],
                                Block{op.block.offset + offset, op.block.count}, op.channel);
      }
      steps.push_back(std::move(mapped));
    }
    last_key_[static_cast<std::size_t>(rank)] = -1;
  }
  begin_phase();
}

Wire wire(const RankLayout& layout, int a, int b, const LevelCosts& costs) {
  if (layout.host_of(a) == layout.host_of(b)) return {costs.alpha_intra_us, costs.beta_intra_us_per_byte};
  return {inter_alpha_us(costs, layout.host_of(a), layout.host_of(b)), costs.beta_inter_us_per_byte};
}

void Levels::add(const RankLayout& layout, int a, int b) {
  const int from = layout.host_of(a);
  const int to = layout.host_of(b);
  if (from == to) {
    intra_ = true;
    return;
  }
  inter_alpha_ = std::max(inter_alpha_, coll::inter_alpha_us(*costs_, from, to));
  const auto hosts = static_cast<std::size_t>(layout.nhosts());
  if (out_.size() < hosts) out_.resize(hosts, 0), in_.resize(hosts, 0);
  crossing_ = std::max({crossing_, ++out_[static_cast<std::size_t>(from)], ++in_[static_cast<std::size_t>(to)]});
  if (groups_->empty()) return;
  const int gf = (*groups_)[static_cast<std::size_t>(from)];
  const int gt = (*groups_)[static_cast<std::size_t>(to)];
  if (gf == gt) return;
  const auto n = static_cast<std::size_t>(std::max(gf, gt)) + 1;
  if (group_out_.size() < n) group_out_.resize(n, 0), group_in_.resize(n, 0);
  group_crossing_ = std::max({group_crossing_, ++group_out_[static_cast<std::size_t>(gf)],
                              ++group_in_[static_cast<std::size_t>(gt)]});
}

double inter_beta(const LevelCosts& costs, int crossing, int group_crossing) {
  return std::max({costs.beta_inter_us_per_byte, costs.beta_host_us_per_byte * crossing,
                   costs.beta_group_us_per_byte * group_crossing});
}

double message_time(const Levels& levels, double bytes, const LevelCosts& costs) {
  double t = 0;
  if (levels.intra()) t = std::max(t, costs.alpha_intra_us + bytes * costs.beta_intra_us_per_byte);
  if (levels.inter())
    t = std::max(t, levels.inter_alpha_us() +
                        bytes * inter_beta(costs, levels.crossing_per_host(), levels.crossing_per_group()));
  return t;
}

std::size_t elements_of(std::size_t bytes, std::size_t elem_size) {
  const std::size_t e = std::max<std::size_t>(elem_size, 1);
  return bytes / e + (bytes % e != 0 ? 1 : 0);
}

}  // namespace colltune::coll::algo
