/* The per-size table the plugin applies: the CSV `colltune tune` writes as nccl_tuner.conf, in
 * the format NCCL's example tuner plugin documents:
 *   collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]]
 * -1 is a wildcard ("any" / "keep NCCL's"); `#` starts a comment; blank lines are skipped. */
#ifndef COLLTUNE_NCCL_PLUGIN_TABLE_H
#define COLLTUNE_NCCL_PLUGIN_TABLE_H

#include <stddef.h>
#include <stdint.h>

#define CT_ANY (-1)

/* Limits, each named in the warning when a table exceeds it. 256 characters per data row is the
 * line buffer of NCCL's example plugin, so a table valid here is read the same way there. */
#define CT_MAX_ROW_CHARS 256
#define CT_MAX_FILE_BYTES ((size_t)1 << 20) /* 1 MiB */
#define CT_MAX_ROWS 4096
#define CT_ERROR_CHARS 2048

typedef struct {
  int collective;     /* CT_ALLREDUCE, ... */
  uint64_t min_bytes; /* inclusive */
  uint64_t max_bytes; /* inclusive */
  int algorithm;      /* CT_RING, ..., or CT_ANY: leave the algorithm to NCCL */
  int protocol;       /* CT_SIMPLE, ..., or CT_ANY: the cheapest usable one */
  int channels;       /* 1 .. CT_MAX_CHANNELS overrides NCCL's channel count; CT_ANY keeps it */
  int n_nodes;
  int n_ranks;
  int num_pipe_ops;
  int reg_buff; /* 0 or 1, or CT_ANY */
  int line;     /* 1-based line in the file, for the log */
} ct_row;

/* A loaded table: the rows in file order, or why the file was refused (then rows is NULL and
 * count 0). A table of only comments and blank lines (what colltune writes when NCCL's own
 * choice is predicted best) is valid, with count 0. */
typedef struct {
  ct_row* rows;
  size_t count;
  char error[CT_ERROR_CHARS]; /* "line N: ..." for a bad row, or the file-level reason; "" when valid */
} ct_table;

/* Parses text[0, size) (NUL bytes included: they are refused, shown escaped); the first bad line
 * refuses the table (a half-applied table would be harder to notice than none). */
void ct_parse_table(const char* text, size_t size, ct_table* table);

/* Reads at most CT_MAX_FILE_BYTES of `path` and parses it. */
void ct_load_table(const char* path, ct_table* table);

void ct_free_table(ct_table* table);

/* Names as the CSV spells them, for the log ("?" outside the range). */
const char* ct_collective_name(int collective);
const char* ct_algorithm_name(int algorithm);
const char* ct_protocol_name(int protocol);

/* `text` with control bytes and bytes >= 0x7f written as \xNN, cut to fit `out` (NUL-terminated):
 * a NUL byte in a row must not cut NCCL's log line short. */
void ct_escape(const char* text, size_t size, char* out, size_t out_size);

#endif /* COLLTUNE_NCCL_PLUGIN_TABLE_H */
