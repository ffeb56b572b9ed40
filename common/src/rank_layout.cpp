#include "colltune/common/rank_layout.hpp"

#include <algorithm>
#include <string>

#include "colltune/common/error.hpp"

namespace colltune {

RankLayout::RankLayout(std::vector<int> host_of_rank) : host_of_rank_(std::move(host_of_rank)) {
  if (host_of_rank_.empty()) throw Error("rank layout: no ranks");
  // Before sizing by the largest host: with every host negative, max + 1 would wrap around.
  for (std::size_t r = 0; r < host_of_rank_.size(); ++r) {
    const int h = host_of_rank_[r];
    if (h < 0) throw Error("rank layout: rank " + std::to_string(r) + " has negative host " + std::to_string(h));
  }
  const int max_host = *std::max_element(host_of_rank_.begin(), host_of_rank_.end());
  ranks_of_host_.resize(static_cast<std::size_t>(max_host) + 1);
  local_rank_.resize(host_of_rank_.size());
  for (std::size_t r = 0; r < host_of_rank_.size(); ++r) {
    const int h = host_of_rank_[r];
    auto& members = ranks_of_host_[static_cast<std::size_t>(h)];
    local_rank_[r] = static_cast<int>(members.size());
    members.push_back(static_cast<int>(r));
  }
  for (std::size_t h = 0; h < ranks_of_host_.size(); ++h) {
    if (ranks_of_host_[h].empty()) throw Error("rank layout: host " + std::to_string(h) + " has no ranks");
  }
}

RankLayout RankLayout::single_host(int nranks) { return uniform(1, nranks); }

RankLayout RankLayout::uniform(int hosts, int per_host) {
  if (hosts <= 0 || per_host <= 0) {
    throw Error("rank layout: need at least one host and one rank per host (got " + std::to_string(hosts) +
                " hosts x " + std::to_string(per_host) + " ranks)");
  }
  std::vector<int> host_of(static_cast<std::size_t>(hosts) * static_cast<std::size_t>(per_host));
  for (std::size_t r = 0; r < host_of.size(); ++r) host_of[r] = static_cast<int>(r / static_cast<std::size_t>(per_host));
  return RankLayout(std::move(host_of));
}

bool RankLayout::is_uniform() const { return max_ranks_per_host() == min_ranks_per_host(); }

int RankLayout::max_ranks_per_host() const {
  std::size_t m = 0;
  for (const auto& v : ranks_of_host_) m = std::max(m, v.size());
  return static_cast<int>(m);
}

int RankLayout::min_ranks_per_host() const {
  if (ranks_of_host_.empty()) return 0;
  std::size_t m = ranks_of_host_.front().size();
  for (const auto& v : ranks_of_host_) m = std::min(m, v.size());
  return static_cast<int>(m);
}

}  // namespace colltune
