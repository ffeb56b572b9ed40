// Full solutions remembered: progressive filling over components reads only their links and
// their flows' paths, so equal multisets of channels (one path each) get equal solutions, bit for
// bit: the rates, the link that fixes each channel's flows (they share every link, so one pop
// fixes them all) and the links' pops (the links that fix flows; a regular pop is at the rate
// it gives, only cascade pops are kept). The solve looks its multiset up before filling.
#include <utility>

#include "event_sim_engine.hpp"

namespace colltune::sim::detail {
namespace {

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}
constexpr std::size_t kMaxSolved = std::size_t{1} << 22;  // channels and pops remembered, at most

}  // namespace

// Counts the component's flows per channel and hashes the multiset; on a hit, its solution.
bool RateSolver::recall() {
  comp_chans_.clear();
  for (std::uint32_t f : fixed_) {
    const std::uint32_t c = (*flows_)[f].chan;
    if (c >= chan_count_.size()) {
      chan_count_.resize(c + 1, 0);
      chan_index_.resize(c + 1, 0);
    }
    if (chan_count_[c]++ == 0) comp_chans_.push_back(c);
  }
  std::uint64_t h = comp_chans_.size();
  for (std::uint32_t c : comp_chans_) h += mix((std::uint64_t{c} << 32) | chan_count_[c]);
  comp_hash_ = h;
  const Solved* hit = nullptr;
  const auto [lo, hi] = solved_index_.equal_range(h);
  for (auto it = lo; it != hi && hit == nullptr; ++it) {
    const Solved& s = solved_[it->second];
    if (s.chans.size() != comp_chans_.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < s.chans.size() && same; ++i) same = chan_count_[s.chans[i]] == s.counts[i];
    if (same) hit = &s;
  }
  if (hit == nullptr) return false;
  for (std::size_t i = 0; i < hit->chans.size(); ++i) chan_index_[hit->chans[i]] = static_cast<std::uint32_t>(i);
  for (std::uint32_t f : fixed_) {
    const std::uint32_t i = chan_index_[(*flows_)[f].chan];
    settle(f, hit->rates[i], hit->by[i]);
  }
  for (std::uint32_t l : touched_) tag(l).pop = PopKind::kNever;
  for (std::size_t i = 0; i < hit->chans.size(); ++i) set_pop(hit->by[i], {hit->rates[i], hit->by[i], 0});
  for (const auto& [l, t] : hit->cascade) set_pop(l, t);
  for (std::uint32_t c : comp_chans_) chan_count_[c] = 0;
  return true;
}

// Remembers the solution just filled (recall() has counted its channels).
void RateSolver::remember() {
  std::size_t cascade = 0;
  for (std::uint32_t l : touched_) cascade += ls(l).stored.sub != 0;
  if (solved_size_ + comp_chans_.size() + cascade <= kMaxSolved) {
    Solved s;
    s.chans = comp_chans_;
    s.counts.reserve(comp_chans_.size());
    for (std::size_t i = 0; i < comp_chans_.size(); ++i) {
      s.counts.push_back(chan_count_[comp_chans_[i]]);
      chan_index_[comp_chans_[i]] = static_cast<std::uint32_t>(i);
    }
    s.rates.resize(comp_chans_.size());
    s.by.resize(comp_chans_.size());
    for (std::uint32_t f : fixed_) {
      const std::uint32_t i = chan_index_[(*flows_)[f].chan];
      s.rates[i] = fs(f).rate;
      s.by[i] = fs(f).by;
    }
    for (std::uint32_t l : touched_)
      if (ls(l).stored.sub != 0) s.cascade.emplace_back(l, ls(l).stored);
    solved_size_ += comp_chans_.size() + cascade;
    solved_index_.emplace(comp_hash_, static_cast<std::uint32_t>(solved_.size()));
    solved_.push_back(std::move(s));
  }
  for (std::uint32_t c : comp_chans_) chan_count_[c] = 0;
}

}  // namespace colltune::sim::detail
