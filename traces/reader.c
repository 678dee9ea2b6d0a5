/* reader.c: the bounded line reader and the CSV field splitter that every
 * trace file reader uses.
 *
 * Invariants: memory is one EMA_TRACE_CHUNK read buffer plus one line buffer
 * that grows only for lines that straddle two chunks and never beyond
 * max_line bytes, so garbage input (binary data, a file with no newline)
 * costs at most max_line bytes before it is reported; lines that lie inside
 * a chunk are returned in place without copying. A NUL byte is an error
 * (binary data), "\r\n" and "\n" both end a line, a "\r" elsewhere is an error, and a last line
 * without a newline is returned like any other; a file that starts with the magic bytes of a
 * compression format or of UTF-16 is refused by its name; a line of spaces and tabs only is blank
 * (ema_trace_line_is_blank), skipped by every reader. Only a regular file is opened (a FIFO
 * or a device is refused at once, never waited on or read forever). */
#include <errno.h>
#include <string.h>

#include "ema/core/file.h"
#include "private.h"

gboolean ema_trace_reader_open(EmaTraceReader *reader, const char *path, gsize max_line,
                               GError **error) {
  GError *inner = NULL;
  g_return_val_if_fail(reader != NULL && path != NULL, FALSE);

  memset(reader, 0, sizeof *reader);
  reader->fp = ema_file_open_regular(path, &inner);
  if (reader->fp == NULL) {
    g_set_error_literal(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_IO, inner->message);
    g_error_free(inner);
    return FALSE;
  }
  reader->path = g_strdup(path);
  reader->max_line = max_line;
  /* An extra byte lets an in-place line be NUL-terminated at the chunk end. */
  reader->chunk = g_malloc(EMA_TRACE_CHUNK + 1);
  return TRUE;
}

void ema_trace_reader_close(EmaTraceReader *reader) {
  if (reader == NULL)
    return;
  if (reader->fp != NULL)
    fclose(reader->fp);
  g_free(reader->path);
  g_free(reader->chunk);
  g_free(reader->line);
  memset(reader, 0, sizeof *reader);
}

gboolean ema_trace_reader_rewind(EmaTraceReader *reader, GError **error) {
  if (fseek(reader->fp, 0, SEEK_SET) != 0) {
    int saved = errno;
    g_set_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_IO, "%s: cannot rewind: %s", reader->path,
                g_strerror(saved));
    return FALSE;
  }
  clearerr(reader->fp);
  reader->pos = reader->fill = 0;
  reader->offset = 0;
  reader->eof = FALSE;
  reader->line_no = 0;
  return TRUE;
}

gboolean ema_trace_line_is_blank(const char *line, gsize len) {
  for (gsize i = 0; i < len; i++)
    if (line[i] != ' ' && line[i] != '\t')
      return FALSE;
  return TRUE;
}

static void reader_verror(const EmaTraceReader *reader, guint64 line, guint column, GError **error,
                          EmaTraceError code, const char *format, va_list ap) G_GNUC_PRINTF(6, 0);

static void reader_verror(const EmaTraceReader *reader, guint64 line, guint column, GError **error,
                          EmaTraceError code, const char *format, va_list ap) {
  if (error == NULL)
    return;
  g_autofree char *message = g_strdup_vprintf(format, ap);
  if (column > 0)
    g_set_error(error, EMA_TRACE_ERROR, code, "%s:%" G_GUINT64_FORMAT ":%u: %s", reader->path, line,
                column, message);
  else
    g_set_error(error, EMA_TRACE_ERROR, code, "%s:%" G_GUINT64_FORMAT ": %s", reader->path, line,
                message);
}

void ema_trace_reader_error(const EmaTraceReader *reader, GError **error, EmaTraceError code,
                            const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  reader_verror(reader, reader->line_no, 0, error, code, format, ap);
  va_end(ap);
}

void ema_trace_reader_error_at(const EmaTraceReader *reader, guint64 line, GError **error,
                               EmaTraceError code, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  reader_verror(reader, line, 0, error, code, format, ap);
  va_end(ap);
}

void ema_trace_reader_error_col(const EmaTraceReader *reader, guint column, GError **error,
                                EmaTraceError code, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  reader_verror(reader, reader->line_no, column, error, code, format, ap);
  va_end(ap);
}

const char *ema_trace_not_text(const char *data, gsize len) {
  static const struct {
    const char *magic;
    gsize len;
    const char *problem;
  } kinds[] = {
      {"\x1f\x8b", 2, "a gzip-compressed file: decompress it first"},
      {"\x28\xb5\x2f\xfd", 4, "a zstd-compressed file: decompress it first"},
      {"\xfd"
       "7zXZ\0",
       6, "an xz-compressed file: decompress it first"},
      {"PK\x03\x04", 4, "a zip archive: extract the trace first"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(kinds); i++)
    if (len >= kinds[i].len && memcmp(data, kinds[i].magic, kinds[i].len) == 0)
      return kinds[i].problem;
  /* UTF-16 (what PowerShell 5's '>' writes): its byte-order mark, then a character of the
   * ASCII range, half of it a NUL byte */
  if (len >= 4 && ((memcmp(data, "\xff\xfe", 2) == 0 && data[3] == '\0') ||
                   (memcmp(data, "\xfe\xff", 2) == 0 && data[2] == '\0')))
    return "UTF-16 text: save it as UTF-8";
  return NULL;
}

/* Refill the chunk. Returns FALSE on a read error or a file that is no text (ERROR set). */
static gboolean reader_fill(EmaTraceReader *reader, GError **error) {
  reader->offset += reader->fill;
  reader->pos = 0;
  reader->fill = fread(reader->chunk, 1, EMA_TRACE_CHUNK, reader->fp);
  const char *not_text =
      reader->offset == 0 ? ema_trace_not_text(reader->chunk, reader->fill) : NULL;
  if (not_text != NULL) {
    ema_trace_reader_error_at(reader, 1, error, EMA_TRACE_ERROR_PARSE, "%s", not_text);
    return FALSE;
  }
  if (reader->fill < EMA_TRACE_CHUNK) {
    if (ferror(reader->fp)) {
      int saved = errno;
      ema_trace_reader_error_at(reader, reader->line_no + 1, error, EMA_TRACE_ERROR_IO,
                                "read error: %s", g_strerror(saved));
      return FALSE;
    }
    if (reader->fill == 0)
      reader->eof = TRUE;
  }
  return TRUE;
}

/* Append N bytes to the assembled line, within max_line. */
static gboolean line_append(EmaTraceReader *reader, gsize *len, const char *p, gsize n,
                            GError **error) {
  if (*len + n > reader->max_line) {
    ema_trace_reader_error_at(reader, reader->line_no + 1, error, EMA_TRACE_ERROR_PARSE,
                              "line longer than %" G_GSIZE_FORMAT " bytes", reader->max_line);
    return FALSE;
  }
  if (*len + n + 1 > reader->line_cap) {
    gsize cap = MAX(reader->line_cap * 2, 256);
    while (cap < *len + n + 1)
      cap *= 2;
    cap = MIN(cap, reader->max_line + 1);
    reader->line = g_realloc(reader->line, cap);
    reader->line_cap = cap;
  }
  memcpy(reader->line + *len, p, n);
  *len += n;
  reader->line[*len] = '\0';
  return TRUE;
}

/* Final checks on a complete line: strip "\r", refuse NUL bytes and a "\r" inside it. */
static int line_finish(EmaTraceReader *reader, char *p, gsize n, char **line, gsize *len,
                       GError **error) {
  const char *cr, *nul;
  reader->line_no++;
  if (n > 0 && p[n - 1] == '\r')
    n--;
  p[n] = '\0';
  if ((nul = memchr(p, '\0', n)) != NULL) {
    ema_trace_reader_error_col(reader, (guint) (nul - p) + 1, error, EMA_TRACE_ERROR_PARSE,
                               "binary data (NUL byte)");
    return -1;
  }
  /* no field of a trace holds one: lines ended by "\r" alone (a classic Mac export) would
   * otherwise read as one line whose last field runs into the next rows */
  if ((cr = memchr(p, '\r', n)) != NULL) {
    ema_trace_reader_error_col(reader, (guint) (cr - p) + 1, error, EMA_TRACE_ERROR_PARSE,
                               "a carriage return (\\r) inside the line: lines must end with "
                               "\\n or \\r\\n");
    return -1;
  }
  *line = p;
  *len = n;
  return 1;
}

int ema_trace_reader_next(EmaTraceReader *reader, char **line, gsize *len, GError **error) {
  gsize assembled = 0;
  gboolean straddles = FALSE;

  for (;;) {
    if (reader->pos >= reader->fill) {
      if (reader->eof)
        break;
      if (!reader_fill(reader, error))
        return -1;
      if (reader->eof)
        break;
    }
    char *start = reader->chunk + reader->pos;
    gsize avail = reader->fill - reader->pos;
    char *nl = memchr(start, '\n', avail);
    if (nl != NULL) {
      gsize n = (gsize) (nl - start);
      reader->pos += n + 1;
      if (!straddles) {
        if (n > reader->max_line) {
          ema_trace_reader_error_at(reader, reader->line_no + 1, error, EMA_TRACE_ERROR_PARSE,
                                    "line longer than %" G_GSIZE_FORMAT " bytes", reader->max_line);
          return -1;
        }
        return line_finish(reader, start, n, line, len, error);
      }
      if (!line_append(reader, &assembled, start, n, error))
        return -1;
      return line_finish(reader, reader->line, assembled, line, len, error);
    }
    /* No newline in what is left of the chunk: keep it and read on. */
    if (!line_append(reader, &assembled, start, avail, error))
      return -1;
    straddles = TRUE;
    reader->pos = reader->fill;
  }
  if (straddles && assembled > 0) /* a last line without a newline */
    return line_finish(reader, reader->line, assembled, line, len, error);
  return 0;
}

/* ---- CSV ------------------------------------------------------------------ */

char *ema_trace_quote(const char *p, gsize len) {
  gsize shown = ema_file_quote_length(p, len); /* the one cut of quoted input */
  GString *s = g_string_sized_new(4 * shown + 8);

  g_string_append_c(s, '\'');
  for (gsize i = 0; i < shown; i++) {
    guchar c = (guchar) p[i];
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
      g_string_append_c(s, (char) c);
    else
      g_string_append_printf(s, "\\x%02x", c);
  }
  if (shown < len)
    g_string_append(s, "...");
  g_string_append_c(s, '\'');
  return g_string_free(s, FALSE);
}
