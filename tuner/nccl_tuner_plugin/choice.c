/* Row matching and the edit of NCCL's cost table (choice.h). */
#include "choice.h"

#include "nccl_tuner_abi.h"

static int fits(int wanted, size_t actual) { return wanted == CT_ANY || (wanted > 0 && (size_t)wanted == actual); }

static int matches(const ct_row* row, const ct_query* q) {
  return row->collective == q->collective && row->min_bytes <= q->bytes && q->bytes <= row->max_bytes &&
         (row->num_pipe_ops == CT_ANY || row->num_pipe_ops == q->num_pipe_ops) &&
         (row->reg_buff == CT_ANY || row->reg_buff == q->reg_buff);
}

/* NCCL's cost table, row-major: algorithm a's protocols are adjacent. */
typedef struct {
  float* cells;
  int num_algo;
  int num_proto;
} cost_table;

static int contains(const cost_table* t, int a, int p) { return a >= 0 && a < t->num_algo && p >= 0 && p < t->num_proto; }
static float* cell(const cost_table* t, int a, int p) { return &t->cells[a * t->num_proto + p]; }
/* NCCL only considers cells >= 0; -1 (and anything negative, or NaN) is disabled/unsupported. */
static int usable(const cost_table* t, int a, int p) { return contains(t, a, p) && *cell(t, a, p) >= 0.0f; }

/* The cheapest usable protocol of `algorithm`, or CT_ANY when NCCL disabled all of them. */
static int cheapest_protocol(const cost_table* t, int algorithm) {
  int best = CT_ANY;
  for (int p = 0; p < t->num_proto; ++p)
    if (usable(t, algorithm, p) && (best == CT_ANY || *cell(t, algorithm, p) < *cell(t, algorithm, best))) best = p;
  return best;
}

/* The table parser holds channels to 1..CT_MAX_CHANNELS; checked again here, where the count
 * reaches NCCL, so no other path can hand it more than MAXCHANNELS. */
static int set_channels(const ct_row* row, int* n_channels) {
  if (row->channels <= 0 || row->channels > CT_MAX_CHANNELS || n_channels == NULL) return 0;
  *n_channels = row->channels;
  return 1;
}

size_t ct_rows_for(ct_row* rows, size_t count, size_t n_nodes, size_t n_ranks) {
  size_t kept = 0;
  for (size_t i = 0; i < count; ++i)
    if (fits(rows[i].n_nodes, n_nodes) && fits(rows[i].n_ranks, n_ranks)) rows[kept++] = rows[i];
  return kept;
}

const ct_row* ct_first_match(const ct_row* rows, size_t count, const ct_query* query) {
  for (size_t i = 0; i < count; ++i)
    if (matches(&rows[i], query)) return &rows[i];
  return NULL;
}

ct_choice ct_apply_row(const ct_row* row, float* cells, int num_algo, int num_proto, int* n_channels) {
  const cost_table table = {cells, num_algo, num_proto};
  ct_choice c = {CT_CHANNELS_ONLY, row->algorithm, row->protocol, 0};
  if (row->algorithm == CT_ANY) {
    c.channels_set = set_channels(row, n_channels);
    return c;
  }
  if (!contains(&table, row->algorithm, row->protocol == CT_ANY ? 0 : row->protocol)) {
    c.verdict = CT_OUTSIDE_TABLE;
    return c;
  }
  if (c.protocol == CT_ANY) c.protocol = cheapest_protocol(&table, row->algorithm);
  if (c.protocol == CT_ANY || !usable(&table, c.algorithm, c.protocol)) {
    c.verdict = CT_UNUSABLE;
    return c;
  }
  /* 0 is the lowest cost NCCL accepts (it skips negative cells), so the cell wins unless another
   * usable cell is exactly 0 too; NCCL's model never prices a collective at 0. */
  *cell(&table, c.algorithm, c.protocol) = 0.0f;
  c.verdict = CT_APPLIED;
  c.channels_set = set_channels(row, n_channels);
  return c;
}

ct_choice ct_apply_row_v2(const ct_row* row, int* algorithm, int* protocol, int* n_channels) {
  ct_choice c = {CT_CHANNELS_ONLY, row->algorithm, row->protocol, 0};
  if (row->algorithm == CT_ANY) {
    c.channels_set = set_channels(row, n_channels);
    return c;
  }
  const int safe_algorithm = row->algorithm == CT_RING || (row->algorithm == CT_TREE && row->collective == CT_ALLREDUCE);
  const int safe_protocol = row->protocol == CT_LL || row->protocol == CT_SIMPLE;
  if (!safe_algorithm || !safe_protocol || algorithm == NULL || protocol == NULL) {
    c.verdict = CT_UNUSABLE;
    return c;
  }
  *algorithm = row->algorithm;
  *protocol = row->protocol;
  c.verdict = CT_APPLIED;
  c.channels_set = set_channels(row, n_channels);
  return c;
}
