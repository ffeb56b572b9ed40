#include "colltune/collectives/algorithms/trees.hpp"

#include <algorithm>
#include <array>

#include "colltune/collectives/algorithms/index_math.hpp"

namespace colltune::coll::algo {

int binomial_parent(int v) { return v == 0 ? -1 : v & (v - 1); }

std::vector<int> binomial_children(int v, int q) {
  std::vector<int> out;
  const int limit = v == 0 ? q : (1 << lowest_bit(v));
  for (int d = 1; d < limit && v + d < q; d *= 2) out.push_back(v + d);
  return out;
}

namespace {
int btree_parent(int v, int q) {
  if (v == 0) return -1;
  const int bit = 1 << lowest_bit(v);
  const int up = (v ^ bit) | (bit << 1);
  return up < q ? up : (v ^ bit);
}
}  // namespace

BinaryTree in_order_tree(int q) {
  BinaryTree t;
  const auto n = static_cast<std::size_t>(q);
  t.parent.resize(n);
  t.children.resize(n);
  t.depth.assign(n, 0);
  for (int v = 0; v < q; ++v) {
    t.parent[static_cast<std::size_t>(v)] = btree_parent(v, q);
    if (v > 0) t.children[static_cast<std::size_t>(btree_parent(v, q))].push_back(v);
  }
  // Parents of v > 0 are either larger (at a greater height) or 0, so compute depths from the
  // root down in order of decreasing height: a worklist keeps it simple.
  std::vector<int> work{0};
  while (!work.empty()) {
    const int v = work.back();
    work.pop_back();
    for (int c : t.children[static_cast<std::size_t>(v)]) {
      t.depth[static_cast<std::size_t>(c)] = t.depth[static_cast<std::size_t>(v)] + 1;
      t.height = std::max(t.height, t.depth[static_cast<std::size_t>(c)]);
      work.push_back(c);
    }
  }
  return t;
}

int second_tree_rank(int v, int q) { return q % 2 == 0 ? q - 1 - v : (v + 1) % q; }

int double_tree_rank(int tree, int v, int q) { return tree == 0 ? v : second_tree_rank(v, q); }

BinaryTree double_tree(int q, int tree) {
  const BinaryTree positions = in_order_tree(q);
  BinaryTree ranks;
  const auto n = static_cast<std::size_t>(q);
  ranks.parent.assign(n, -1);
  ranks.children.assign(n, {});
  ranks.depth.assign(n, 0);
  ranks.height = positions.height;
  for (int v = 0; v < q; ++v) {
    const auto r = static_cast<std::size_t>(double_tree_rank(tree, v, q));
    ranks.depth[r] = positions.depth[static_cast<std::size_t>(v)];
    const int up = positions.parent[static_cast<std::size_t>(v)];
    if (up < 0) continue;
    ranks.parent[r] = double_tree_rank(tree, up, q);
    ranks.children[static_cast<std::size_t>(ranks.parent[r])].push_back(static_cast<int>(r));
  }
  return ranks;
}

void PipelinedTree::ops(int r, long long t, std::size_t chunk_elems, std::vector<Op>& out) const {
  const auto rr = static_cast<std::size_t>(r);
  const long long h = height;
  const long long d = depth[rr];
  const auto last = static_cast<long long>(rounds);
  // Its chunks this step run from t-(H+d) (down) to t-(H-d-1) (up from the children).
  if (t - (h - d - 1) < 0 || t - (h + d) >= last) return;
  const auto chunk = [&](long long c) -> Block {
    if (c < 0 || c >= last) return Block{0, 0};
    return chunk_of(range, static_cast<std::size_t>(c), chunk_elems);
  };
  const auto place = [&](int rank) { return order.empty() ? rank : order[static_cast<std::size_t>(rank)]; };
  const int up = parent[rr];
  const std::vector<int>& mine = children[rr];
  // The other senders' ops (the parent's and the children's), by place.
  std::array<Op, 4> others;
  std::array<int, 4> at{};
  std::size_t n = 0;
  const auto other = [&](int from, OpKind kind, const Block& block) {
    if (block.count == 0) return;
    const int v = place(from);
    std::size_t j = n++;
    for (; j > 0 && v < at[j - 1]; --j) others[j] = others[j - 1], at[j] = at[j - 1];
    others[j] = Op{kind, from, block, channel};
    at[j] = v;
  };
  if (up >= 0) other(up, OpKind::recv_copy, chunk(t - (h + d - 1)));
  const Block reduced = chunk(t - (h - d - 1));
  for (int c : mine) other(c, OpKind::recv_reduce, reduced);
  const int own = place(r);
  std::size_t i = 0;
  for (; i < n && at[i] < own; ++i) out.push_back(others[i]);
  if (up >= 0) {
    const Block sent = chunk(t - (h - d));
    if (sent.count > 0) out.emplace_back(OpKind::send, up, sent, channel);
  }
  const Block down = chunk(t - (h + d));
  if (down.count > 0)
    for (int c : mine) out.emplace_back(OpKind::send, c, down, channel);
  for (; i < n; ++i) out.push_back(others[i]);
}

}  // namespace colltune::coll::algo
