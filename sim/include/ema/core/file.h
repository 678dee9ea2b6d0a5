/* file.h: opening and reading the files EMA is given (experiments, includes,
 * models, traces, results) so that a path naming something other than a
 * regular file (a FIFO, a device such as /dev/zero, a directory) is a clear
 * error, never a hang or an unbounded read, and a file larger than its
 * reader accepts is refused before it is read.
 *
 * Also the one CSV field writer (RFC 4180 quoting) of every CSV EMA writes,
 * and fixed-point and integer number writers for the large CSVs; and the one
 * cut of the input an error message quotes (EMA_FILE_QUOTE_MAX bytes).
 *
 * Errors use G_FILE_ERROR and read "PATH: reason". */
#pragma once

#include <stdio.h>

#include <glib.h>

G_BEGIN_DECLS

/* The largest text file read whole (experiments, includes, models, results). */
#define EMA_FILE_MAX_TEXT ((gsize) 64 << 20)

/* Open PATH for reading, refusing what is not a regular file. The open
 * never blocks (a FIFO without a writer is refused, not waited for). */
FILE *ema_file_open_regular(const char *path, GError **error);

/* 3 where TEXT (LENGTH bytes) begins with UTF-8's byte-order mark (a spreadsheet's or
 * PowerShell's export carries one before a header), else 0: the bytes a reader skips. */
gsize ema_file_bom_length(const char *text, gsize length);

/* The line and the column in bytes, both from 1, of AT (a byte of TEXT, or its end): where an
 * error about that byte points. */
void ema_file_position(const char *text, const char *at, guint *line, guint *col);

/* The most bytes of a value read from input (a CSV cell, a trace's field, a YAML value, a
 * command-line value) that an error message quotes. */
#define EMA_FILE_QUOTE_MAX 40

/* How many of the LENGTH bytes of TEXT an error message quotes: all of them up to
 * EMA_FILE_QUOTE_MAX, else the first EMA_FILE_QUOTE_MAX, fewer where the cut would split a UTF-8
 * character. The one cut of every message that quotes input: ema_file_quote_cut, and the
 * quoters that escape what they show (the traces' ema_trace_quote, the units' quote), cut here. */
gsize ema_file_quote_length(const char *text, gsize length);

/* TEXT (LENGTH bytes; -1: up to its NUL) as a message quotes it: whole, or its first
 * ema_file_quote_length() bytes and "...", so that a value of any length (a 10 MB cell) leaves
 * the message one readable line. Newly allocated. */
char *ema_file_quote_cut(const char *text, gssize length);

/* The first control character of TEXT (below 0x20, or 0x7f), or NULL: what a name that becomes
 * a CSV field, a folder or a label may not hold (a newline splits the line it is on). */
const char *ema_file_control_char(const char *text);

/* Read all of the regular file PATH, at most MAX_BYTES, into *TEXT
 * (NUL-terminated, free with g_free) and *LENGTH (may be NULL). */
gboolean ema_file_read_regular(const char *path, gsize max_bytes, char **text, gsize *length,
                               GError **error);

/* Whether PATH, a file a user named for an output (-o FILE) that WHAT is
 * ("the table", "the model"), may take it: absent, or a regular file, which
 * the output replaces whole (written beside it, then renamed over it, so that
 * a failed write leaves it as it was). A directory, a device, a FIFO, a
 * socket or a symbolic link is refused (a rename would put a regular file in
 * place of /dev/full, or of a link), as is an empty PATH or one ending in
 * '/': FALSE with G_FILE_ERROR_INVAL, "'PATH' is a FIFO, not a file WHAT
 * can replace: give WHAT's file". */
gboolean ema_file_output_ok(const char *path, const char *what, GError **error);

/* Whether the paths A and B name one file (the same device and inode); FALSE
 * where either does not exist. */
gboolean ema_file_same(const char *a, const char *b);

/* The paths of every file this process opened through the two functions
 * above, sorted (a copy; free with g_ptr_array_unref). */
GPtrArray *ema_file_inputs(void);

/* The regular file PATH mapped read-only, opened as ema_file_open_regular opens (never
 * waiting on a FIFO) but not counted among the inputs: for hashing what a result names. */
GMappedFile *ema_file_map_regular(const char *path, GError **error);

/* Append TEXT to OUT as one CSV field: as it is, or in double quotes (with
 * quotes doubled) when it holds a comma, a quote, CR or LF (RFC 4180). */
void ema_file_csv_field(GString *out, const char *text);

/* Append VALUE with DECIMALS (1-9) digits after the point to OUT, the same
 * characters as printf's "%.*f": scaled to an integer when that is exact
 * (not within a rounding error of a tie, finite, non-negative, below
 * 2^53), else through printf. Several times cheaper than printf for the
 * times and durations of events.csv. */
void ema_file_append_fixed(GString *out, double value, guint decimals);

/* Chars of the longest unsigned 64-bit number in decimal, with its NUL. */
#define EMA_FILE_UINT_CHARS 21
/* VALUE in decimal into OUT (NUL-terminated), the characters of printf's
 * "%" G_GUINT64_FORMAT; returns their number. */
gsize ema_file_format_uint(char out[EMA_FILE_UINT_CHARS], guint64 value);
/* VALUE in decimal appended to OUT (ema_file_format_uint). */
void ema_file_append_uint(GString *out, guint64 value);

G_END_DECLS
