#pragma once
// Which ranks share a host. This is all that algorithms may know about the machine
// (docs/design.md: collectives/ knows a rank layout, not link speeds).
#include <vector>

namespace colltune {

class RankLayout {
 public:
  RankLayout() = default;
  // host_of_rank[r] = host index of rank r. Hosts must be numbered 0..H-1 with none empty.
  // Throws colltune::Error otherwise.
  explicit RankLayout(std::vector<int> host_of_rank);

  static RankLayout single_host(int nranks);
  // `hosts` hosts with `per_host` ranks each; rank r lives on host r / per_host.
  static RankLayout uniform(int hosts, int per_host);

  int nranks() const { return static_cast<int>(host_of_rank_.size()); }
  int nhosts() const { return static_cast<int>(ranks_of_host_.size()); }
  int host_of(int rank) const { return host_of_rank_.at(static_cast<std::size_t>(rank)); }
  // Ranks of `host`, ascending.
  const std::vector<int>& ranks_on_host(int host) const {
    return ranks_of_host_.at(static_cast<std::size_t>(host));
  }
  // Position of `rank` among the ranks of its host.
  int local_rank(int rank) const { return local_rank_.at(static_cast<std::size_t>(rank)); }
  // True when every host has the same number of ranks.
  bool is_uniform() const;
  int max_ranks_per_host() const;
  int min_ranks_per_host() const;
  const std::vector<int>& host_of_rank() const { return host_of_rank_; }

  bool operator==(const RankLayout& other) const { return host_of_rank_ == other.host_of_rank_; }

 private:
  std::vector<int> host_of_rank_;
  std::vector<std::vector<int>> ranks_of_host_;
  std::vector<int> local_rank_;
};

}  // namespace colltune
