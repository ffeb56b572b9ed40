/* Parsing the plugin's CSV table. Strict: every field is checked, numbers must be whole decimal
 * integers with nothing around them, and the first bad line refuses the whole table, named by
 * line number and field, so that a typo never turns into a silently different tuning. */
#include "table.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_tuner_abi.h"

/* Field order as NCCL's example plugin documents it; numPipeOps and regBuff may be omitted. */
enum { F_COLLECTIVE, F_MIN_BYTES, F_MAX_BYTES, F_ALGORITHM, F_PROTOCOL, F_CHANNELS, F_NODES, F_RANKS, F_PIPE_OPS,
       F_REG_BUFF, F_COUNT };
#define MIN_FIELDS F_PIPE_OPS
static const char* const kFieldNames[F_COUNT] = {"collective_type", "min_bytes", "max_bytes", "algorithm",
                                                 "protocol",        "channels",  "nNodes",    "nRanks",
                                                 "numPipeOps",      "regBuff"};

/* Indexed by the NCCL enum values. */
static const char* const kCollectives[CT_NUM_COLLECTIVES] = {"broadcast", "reduce", "allgather", "reducescatter",
                                                             "allreduce"};
static const char* const kAlgorithms[CT_NUM_ALGORITHMS] = {"tree", "ring", "collnet_direct", "collnet_chain",
                                                           "nvls", "nvls_tree", "pat"};
static const char* const kProtocols[CT_NUM_PROTOCOLS] = {"ll", "ll128", "simple"};

typedef struct {
  const char* text;
  size_t size;
} span;

static int blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

static span trim(span s) {
  while (s.size > 0 && blank(s.text[0])) ++s.text, --s.size;
  while (s.size > 0 && blank(s.text[s.size - 1])) --s.size;
  return s;
}

static int equals(span s, const char* word) { return strlen(word) == s.size && memcmp(s.text, word, s.size) == 0; }

static int equals_ignoring_case(span s, const char* word) {
  if (strlen(word) != s.size) return 0;
  for (size_t i = 0; i < s.size; ++i) {
    const char c = s.text[i] >= 'A' && s.text[i] <= 'Z' ? (char)(s.text[i] - 'A' + 'a') : s.text[i];
    if (c != word[i]) return 0;
  }
  return 1;
}

void ct_escape(const char* text, size_t size, char* out, size_t out_size) {
  static const char kHex[] = "0123456789abcdef";
  size_t o = 0;
  for (size_t i = 0; i < size && o + 5 < out_size; ++i) {
    const unsigned char c = (unsigned char)text[i];
    if (c >= 0x20 && c < 0x7f) {
      out[o++] = (char)c;
    } else {
      out[o++] = '\\';
      out[o++] = 'x';
      out[o++] = kHex[c >> 4];
      out[o++] = kHex[c & 15];
    }
  }
  if (out_size > 0) out[o < out_size ? o : out_size - 1] = '\0';
}

/* The row being parsed: its fields, and the first error found in them. */
typedef struct {
  span fields[F_COUNT];
  size_t count;
  ct_row row;
  char* error; /* CT_ERROR_CHARS; "" while no error */
} row_parser;

static void fail(row_parser* p, int field, const char* fmt, ...) {
  if (p->error[0] != '\0') return;
  char shown[4 * CT_MAX_ROW_CHARS + 1];
  ct_escape(p->fields[field].text, p->fields[field].size, shown, sizeof shown);
  char why[256];
  va_list args;
  va_start(args, fmt);
  vsnprintf(why, sizeof why, fmt, args);
  va_end(args);
  snprintf(p->error, CT_ERROR_CHARS, "field %d (%s) '%s' %s", field + 1, kFieldNames[field], shown, why);
}

/* One of `names` (case-insensitive), or -1 where a wildcard is allowed. */
static void name_field(row_parser* p, int field, const char* const* names, int n, int wildcard, int* out) {
  const span v = p->fields[field];
  *out = CT_ANY;
  if (wildcard && equals(v, "-1")) return;
  for (int i = 0; i < n; ++i)
    if (equals_ignoring_case(v, names[i])) {
      *out = i;
      return;
    }
  char list[160] = "";
  for (int i = 0; i < n; ++i) {
    strncat(list, i == 0 ? "" : ", ", sizeof list - strlen(list) - 1);
    strncat(list, names[i], sizeof list - strlen(list) - 1);
  }
  fail(p, field, "is not one of %s%s", list, wildcard ? ", -1" : "");
}

/* Decimal digits, the whole field, into *out; 0 when not digits, -1 on overflow of `max`. */
static int digits(span v, uint64_t max, uint64_t* out) {
  if (v.size == 0) return 0;
  uint64_t x = 0;
  for (size_t i = 0; i < v.size; ++i) {
    if (v.text[i] < '0' || v.text[i] > '9') return 0;
    const uint64_t d = (uint64_t)(v.text[i] - '0');
    if (x > (max - d) / 10) return -1;
    x = x * 10 + d;
  }
  *out = x;
  return 1;
}

/* A byte count: a plain decimal integer from 0 to 2^64-1 (no sign, no spaces inside). */
static void bytes_field(row_parser* p, int field, uint64_t* out) {
  const int ok = digits(p->fields[field], UINT64_MAX, out);
  if (ok < 0) fail(p, field, "is larger than 2^64-1");
  else if (ok == 0) fail(p, field, "is not a byte count");
}

/* A whole decimal int with an optional '-'. */
static int int_field(row_parser* p, int field, int* out) {
  span v = p->fields[field];
  const int negative = v.size > 0 && v.text[0] == '-';
  if (negative) ++v.text, --v.size;
  uint64_t x = 0;
  const int ok = digits(v, (uint64_t)2147483647 + (uint64_t)negative, &x);
  if (ok > 0) {
    *out = negative ? (int)(-(int64_t)x) : (int)x;
    return 1;
  }
  fail(p, field, ok < 0 ? "is out of range" : "is not an integer");
  return 0;
}

/* -1 (any / keep NCCL's) or a count in 1..max. */
static void count_field(row_parser* p, int field, int max, const char* why, int* out) {
  if (int_field(p, field, out) && *out != CT_ANY && (*out <= 0 || *out > max)) fail(p, field, "%s", why);
}

static void parse_row(row_parser* p) {
  ct_row* r = &p->row;
  name_field(p, F_COLLECTIVE, kCollectives, CT_NUM_COLLECTIVES, 0, &r->collective);
  bytes_field(p, F_MIN_BYTES, &r->min_bytes);
  bytes_field(p, F_MAX_BYTES, &r->max_bytes);
  name_field(p, F_ALGORITHM, kAlgorithms, CT_NUM_ALGORITHMS, 1, &r->algorithm);
  name_field(p, F_PROTOCOL, kProtocols, CT_NUM_PROTOCOLS, 1, &r->protocol);
  count_field(p, F_CHANNELS, CT_MAX_CHANNELS, "must be -1 or 1..64 (NCCL's MAXCHANNELS)", &r->channels);
  count_field(p, F_NODES, 2147483647, "must be -1 or a positive integer", &r->n_nodes);
  count_field(p, F_RANKS, 2147483647, "must be -1 or a positive integer", &r->n_ranks);
  r->num_pipe_ops = r->reg_buff = CT_ANY;
  if (p->count > F_PIPE_OPS) count_field(p, F_PIPE_OPS, 2147483647, "must be -1 or a positive integer", &r->num_pipe_ops);
  if (p->count > F_REG_BUFF && int_field(p, F_REG_BUFF, &r->reg_buff) && r->reg_buff != CT_ANY && r->reg_buff != 0 &&
      r->reg_buff != 1)
    fail(p, F_REG_BUFF, "must be -1, 0 or 1");
  if (p->error[0] != '\0') return;
  if (r->min_bytes > r->max_bytes) fail(p, F_MAX_BYTES, "is below min_bytes %llu", (unsigned long long)r->min_bytes);
  /* NCCL takes an algorithm and protocol together or neither: a protocol alone cannot apply. */
  if (r->algorithm == CT_ANY && r->protocol != CT_ANY) fail(p, F_PROTOCOL, "needs an algorithm (algorithm is -1)");
}

/* Splits `data` at commas into p->fields (at most F_COUNT + 1 are counted). */
static void split_fields(span data, row_parser* p) {
  p->count = 0;
  size_t start = 0;
  for (size_t i = 0; i <= data.size; ++i) {
    if (i < data.size && data.text[i] != ',') continue;
    if (p->count < F_COUNT) p->fields[p->count] = trim((span){data.text + start, i - start});
    ++p->count;
    start = i + 1;
  }
}

/* Parses one line that holds data into table->rows[table->count]; returns 0 and fills `error`
 * with the reason when the line is refused. */
static int parse_line(span raw, span data, int line, ct_table* table, char* error) {
  if (trim(raw).size > CT_MAX_ROW_CHARS) {
    snprintf(error, CT_ERROR_CHARS, "longer than %d characters (the limit of a data row)", CT_MAX_ROW_CHARS);
    return 0;
  }
  if (table->count == CT_MAX_ROWS) {
    snprintf(error, CT_ERROR_CHARS, "more than %d rows (the limit of a table)", CT_MAX_ROWS);
    return 0;
  }
  row_parser p;
  memset(&p, 0, sizeof p);
  p.error = error;
  split_fields(data, &p);
  if (p.count < MIN_FIELDS || p.count > F_COUNT) {
    snprintf(error, CT_ERROR_CHARS, "%zu fields, expected %d to %d (%s,...,%s)", p.count, MIN_FIELDS, F_COUNT,
             kFieldNames[0], kFieldNames[F_COUNT - 1]);
    return 0;
  }
  p.row.line = line;
  parse_row(&p);
  if (error[0] != '\0') return 0;
  table->rows[table->count++] = p.row;
  return 1;
}

static void refuse(ct_table* table, const char* fmt, ...) {
  free(table->rows);
  table->rows = NULL;
  table->count = 0;
  va_list args;
  va_start(args, fmt);
  vsnprintf(table->error, sizeof table->error, fmt, args);
  va_end(args);
}

void ct_parse_table(const char* text, size_t size, ct_table* table) {
  memset(table, 0, sizeof *table);
  table->rows = (ct_row*)malloc(CT_MAX_ROWS * sizeof(ct_row));
  if (table->rows == NULL) {
    refuse(table, "out of memory");
    return;
  }
  int line = 0;
  for (size_t start = 0; start < size;) {
    const char* newline = (const char*)memchr(text + start, '\n', size - start);
    const size_t end = newline == NULL ? size : (size_t)(newline - text);
    const span raw = {text + start, end - start};
    start = end + 1;
    ++line;
    const char* hash = (const char*)memchr(raw.text, '#', raw.size);
    const span data = trim((span){raw.text, hash == NULL ? raw.size : (size_t)(hash - raw.text)});
    if (data.size == 0) continue;
    char error[CT_ERROR_CHARS] = "";
    if (!parse_line(raw, data, line, table, error)) {
      refuse(table, "line %d: %s", line, error);
      return;
    }
  }
}

void ct_load_table(const char* path, ct_table* table) {
  memset(table, 0, sizeof *table);
  FILE* file = fopen(path, "rb");
  if (file == NULL) {
    refuse(table, "cannot open (%s)", strerror(errno));
    return;
  }
  /* One byte over the limit tells "exactly at the limit" from "larger". */
  char* text = (char*)malloc(CT_MAX_FILE_BYTES + 1);
  if (text == NULL) {
    fclose(file);
    refuse(table, "out of memory");
    return;
  }
  const size_t n = fread(text, 1, CT_MAX_FILE_BYTES + 1, file);
  const int err = ferror(file) ? errno : 0;
  fclose(file);
  if (err != 0) refuse(table, "cannot read (%s)", strerror(err));
  else if (n > CT_MAX_FILE_BYTES) refuse(table, "larger than %zu MiB (the limit of a table)", CT_MAX_FILE_BYTES >> 20);
  else ct_parse_table(text, n, table);
  free(text);
}

void ct_free_table(ct_table* table) {
  free(table->rows);
  table->rows = NULL;
  table->count = 0;
}

const char* ct_collective_name(int c) { return c >= 0 && c < CT_NUM_COLLECTIVES ? kCollectives[c] : "?"; }
const char* ct_algorithm_name(int a) { return a >= 0 && a < CT_NUM_ALGORITHMS ? kAlgorithms[a] : "?"; }
const char* ct_protocol_name(int p) { return p >= 0 && p < CT_NUM_PROTOCOLS ? kProtocols[p] : "?"; }
