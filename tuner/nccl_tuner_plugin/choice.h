/* Matching a collective against the table and applying the matching row to NCCL's choice. */
#ifndef COLLTUNE_NCCL_PLUGIN_CHOICE_H
#define COLLTUNE_NCCL_PLUGIN_CHOICE_H

#include <stddef.h>
#include <stdint.h>

#include "table.h"

/* One collective as NCCL describes it to the tuner. reg_buff is CT_ANY where the interface
 * version does not pass it (v2, v3): then rows that require 0 or 1 do not match. */
typedef struct {
  int collective;
  uint64_t bytes;
  int num_pipe_ops;
  int reg_buff;
} ct_query;

/* Keeps, in place and in file order, the rows whose nNodes and nRanks fit a communicator of this
 * shape; returns how many. Done once at init: a row for another job shape can never match it. */
size_t ct_rows_for(ct_row* rows, size_t count, size_t n_nodes, size_t n_ranks);

/* The first row matching the query (collective, min <= bytes <= max, numPipeOps, regBuff), or
 * NULL. First match wins, as in NCCL's example plugin. */
const ct_row* ct_first_match(const ct_row* rows, size_t count, const ct_query* query);

/* What applying a row did. */
typedef enum {
  CT_APPLIED,       /* the (algorithm, protocol) cell was made the cheapest */
  CT_CHANNELS_ONLY, /* algorithm -1: NCCL chooses; only a channel count was set (if any) */
  CT_UNUSABLE,      /* NCCL marked the cell (or every protocol of the algorithm) unusable: nothing changed */
  CT_OUTSIDE_TABLE  /* the table NCCL passed has no such algorithm/protocol (an older NCCL): nothing changed */
} ct_verdict;

typedef struct {
  ct_verdict verdict;
  int algorithm;
  int protocol; /* resolved: the cheapest usable one when the row says -1 */
  int channels_set;
} ct_choice;

/* Applies `row` to NCCL's cost table (float[num_algo][num_proto], contiguous): the chosen cell
 * is set to 0, below every usable cost, and a row's channels (1..CT_MAX_CHANNELS) are written to
 * *n_channels. A cell NCCL marked unusable is never touched; then nothing is (channels
 * included), so NCCL keeps its whole choice. */
ct_choice ct_apply_row(const ct_row* row, float* cells, int num_algo, int num_proto, int* n_channels);

/* The v2 interface has no cost table: NCCL uses the algorithm and protocol the plugin names,
 * unchecked. So only combinations every NCCL build has for that collective are named: ring, or
 * tree for allreduce, with LL or Simple. Anything else leaves NCCL's choice (verdict unusable). */
ct_choice ct_apply_row_v2(const ct_row* row, int* algorithm, int* protocol, int* n_channels);

#endif /* COLLTUNE_NCCL_PLUGIN_CHOICE_H */
