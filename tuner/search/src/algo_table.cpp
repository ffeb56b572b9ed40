// Per-size algorithm tables from the analytical cost model.
#include "colltune/tuner/algo_table.hpp"

#include <cmath>
#include <limits>

#include "colltune/common/error.hpp"
#include "colltune/common/parallel.hpp"
#include "colltune/tuner/space.hpp"

namespace colltune::tuner {
namespace {

sim::CollectiveRequest request_for(const AlgoChoice& choice, std::size_t bytes, bool fp16) {
  sim::CollectiveRequest r;
  r.algorithm = choice.algorithm;
  r.bytes = bytes;
  r.elem_size = 4;
  r.fp16_compress = fp16;
  r.options.chunk_elems = choice.chunk_bytes / (fp16 ? 2 : 4);
  if (!choice.inner.empty()) r.options.inner = choice.inner;
  return r;
}

std::vector<AlgoChoice> choices_of(const AlgoTableOptions& o) {
  if (!o.choices.empty()) return o.choices;
  std::vector<AlgoChoice> out;
  for (std::size_t chunk : o.chunks)
    for (const auto& a : o.algorithms) {
      out.push_back(AlgoChoice{a, "", chunk});
      if (o.hierarchical) out.push_back(AlgoChoice{std::string(kHierarchicalAlgorithm), a, chunk});
    }
  return out;
}

double time_of(const sim::CostModel& model, const AlgoChoice& c, std::size_t bytes, bool fp16) {
  try {
    const double t = model.time_us(request_for(c, bytes, fp16));
    return std::isfinite(t) ? t : std::numeric_limits<double>::infinity();
  } catch (const Error&) {
    return std::numeric_limits<double>::infinity();  // not applicable to this layout
  }
}

}  // namespace

std::string describe(const AlgoChoice& c) { return c.inner.empty() ? c.algorithm : c.algorithm + "(" + c.inner + ")"; }

void add_sample(std::vector<SizeRange>& table, SizeRange best, std::size_t bytes, std::size_t previous_bytes) {
  if (!table.empty() && table.back().choice == best.choice && table.back().nccl_algorithm == best.nccl_algorithm &&
      table.back().protocol == best.protocol) {
    table.back().max_bytes = bytes;
    table.back().sampled_bytes = bytes;
    table.back().time_us = best.time_us;
    table.back().nccl_pick_us = best.nccl_pick_us;
    return;
  }
  best.min_bytes = table.empty() ? 0 : previous_bytes + 1;
  best.max_bytes = bytes;
  best.sampled_bytes = bytes;
  table.push_back(std::move(best));
}

std::vector<SizeRange> build_algo_table(const sim::CostModel& model, const AlgoTableOptions& options) {
  const auto choices = choices_of(options);
  std::vector<std::size_t> sizes;
  for (std::size_t s = std::max<std::size_t>(options.min_bytes, 1); s <= options.max_bytes; s *= 2) {
    sizes.push_back(s);
    if (s > std::numeric_limits<std::size_t>::max() / 2) break;
  }
  // Each size's fastest choice, the sizes on several threads (the cost model's memo is shared safely).
  const std::vector<SizeRange> fastest = parallel_map(sizes.size(), [&](std::size_t i) {
    const std::size_t s = sizes[i];
    SizeRange best{0, s, {}, "simple", s, std::numeric_limits<double>::infinity(), -1, ""};
    for (const auto& c : choices) {
      const double t = time_of(model, c, s, options.fp16);
      if (sim::clearly_faster(t, best.time_us)) {
        best.choice = c;
        best.time_us = t;
      }
    }
    if (!std::isfinite(best.time_us)) throw Error("no allreduce algorithm applies at " + format_bytes(s));
    return best;
  });
  std::vector<SizeRange> table;
  std::size_t previous = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    add_sample(table, fastest[i], sizes[i], previous);
    previous = sizes[i];
  }
  if (table.empty()) throw Error("algorithm table: empty size range");
  table.back().max_bytes = std::max(table.back().max_bytes, kTableMaxBytes);
  return table;
}

const SizeRange& row_for(const std::vector<SizeRange>& table, std::size_t bytes) {
  if (table.empty()) throw Error("algorithm table: no rows");
  for (const SizeRange& row : table)
    if (bytes <= row.max_bytes) return row;
  return table.back();
}

double predicted_busbw(const sim::CostModel& model, const AlgoChoice& choice, std::size_t bytes, bool fp16) {
  const double t = time_of(model, choice, bytes, fp16);
  if (!std::isfinite(t) || t <= 0) return 0.0;
  const double p = model.layout.nranks();
  const double factor = p > 1 ? 2.0 * (p - 1.0) / p : 1.0;
  return gbps(bytes, t) * factor;
}

}  // namespace colltune::tuner
