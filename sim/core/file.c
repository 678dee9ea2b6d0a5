/* file.c: regular-file opening and bounded whole-file reads, and the one cut of input that
 * messages quote (file.h).
 *
 * Invariants: a path is opened with O_NONBLOCK, so that opening a FIFO never
 * waits for a writer, then checked with fstat on the descriptor itself (no
 * race between the check and the read); only S_ISREG passes. A whole-file
 * read stops at MAX_BYTES + 1 bytes whatever the size fstat reported (a file
 * may grow while it is read), so memory is bounded by MAX_BYTES. Every
 * file opened for reading is remembered (ema_file_inputs), so that a
 * result can name and hash everything it was made from. */
#include "ema/core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

static void set_errno_error(GError **error, const char *path, const char *what, int saved) {
  g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved), "%s: %s: %s", path, what,
              g_strerror(saved));
}

/* The paths read so far, each once. */
static GPtrArray *inputs;
static GHashTable *inputs_seen;
G_LOCK_DEFINE_STATIC(inputs);

static void remember_input(const char *path) {
  G_LOCK(inputs);
  if (inputs == NULL) {
    inputs = g_ptr_array_new_with_free_func(g_free);
    inputs_seen = g_hash_table_new(g_str_hash, g_str_equal);
  }
  if (!g_hash_table_contains(inputs_seen, path)) {
    char *copy = g_strdup(path);
    g_ptr_array_add(inputs, copy);
    g_hash_table_add(inputs_seen, copy);
  }
  G_UNLOCK(inputs);
}

static gint compare_paths(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

GPtrArray *ema_file_inputs(void) {
  GPtrArray *copy = g_ptr_array_new_with_free_func(g_free);
  G_LOCK(inputs);
  for (guint i = 0; inputs && i < inputs->len; i++)
    g_ptr_array_add(copy, g_strdup(inputs->pdata[i]));
  G_UNLOCK(inputs);
  /* sorted: files are read from several threads (the step models' profiles), so the order they
   * were first read in varies from run to run, and an output must not */
  g_ptr_array_sort(copy, compare_paths);
  return copy;
}

/* What MODE's file is, other than a regular file, in the words of messages: "a FIFO", "a
 * character device" (/dev/null), "a block device" (/dev/sda), ...; the one list of every
 * message that refuses a file for its kind. */
static const char *file_kind(mode_t mode) {
  return S_ISDIR(mode)    ? "a directory"
         : S_ISLNK(mode)  ? "a symbolic link"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
                          : "a special file";
}

/* PATH opened without blocking, refused unless a regular file (*ST its stat); not remembered. */
static int open_regular_unrecorded(const char *path, struct stat *st, GError **error) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    set_errno_error(error, path, "cannot open", errno);
    return -1;
  }
  if (fstat(fd, st) != 0) {
    int saved = errno;
    close(fd);
    set_errno_error(error, path, "cannot stat", saved);
    return -1;
  }
  if (!S_ISREG(st->st_mode)) {
    close(fd);
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: not a regular file (%s)", path,
                file_kind(st->st_mode));
    return -1;
  }
  return fd;
}

static int open_regular_fd(const char *path, struct stat *st, GError **error) {
  int fd = open_regular_unrecorded(path, st, error);
  if (fd >= 0)
    remember_input(path);
  return fd;
}

GMappedFile *ema_file_map_regular(const char *path, GError **error) {
  struct stat st;
  int fd = open_regular_unrecorded(path, &st, error);
  GMappedFile *file;
  if (fd < 0)
    return NULL;
  file = g_mapped_file_new_from_fd(fd, FALSE, error);
  close(fd);
  return file;
}

FILE *ema_file_open_regular(const char *path, GError **error) {
  struct stat st;
  int fd = open_regular_fd(path, &st, error);
  FILE *fp;
  if (fd < 0)
    return NULL;
  fp = fdopen(fd, "rb");
  if (fp == NULL) {
    int saved = errno;
    close(fd);
    set_errno_error(error, path, "cannot open", saved);
  }
  return fp;
}

gsize ema_file_bom_length(const char *text, gsize length) {
  return length >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
}

void ema_file_position(const char *text, const char *at, guint *line, guint *col) {
  const char *start = text;
  *line = 1;
  for (const char *c = text; c < at; c++)
    if (*c == '\n') {
      ++*line;
      start = c + 1;
    }
  *col = (guint) (at - start) + 1;
}

gsize ema_file_quote_length(const char *text, gsize length) {
  const char *end = text + EMA_FILE_QUOTE_MAX;
  if (length <= EMA_FILE_QUOTE_MAX)
    return length;
  /* back to the first byte of the character the cut falls in */
  while (end > text && ((guchar) *end & 0xC0) == 0x80)
    end--;
  return (gsize) (end - text);
}

const char *ema_file_control_char(const char *text) {
  for (const char *c = text; *c; c++)
    if ((guchar) *c < 0x20 || *c == 0x7f)
      return c;
  return NULL;
}

char *ema_file_quote_cut(const char *text, gssize length) {
  /* a NUL-terminated TEXT is measured only as far as the cut needs */
  gsize n = length >= 0 ? (gsize) length : strnlen(text, EMA_FILE_QUOTE_MAX + 1);
  gsize shown = ema_file_quote_length(text, n);
  return shown < n ? g_strdup_printf("%.*s...", (int) shown, text) : g_strndup(text, n);
}

gboolean ema_file_read_regular(const char *path, gsize max_bytes, char **text, gsize *length,
                               GError **error) {
  struct stat st;
  int fd = open_regular_fd(path, &st, error);
  g_autofree char *buf = NULL;
  gsize len = 0, cap;

  if (fd < 0)
    return FALSE;
  if ((guint64) st.st_size > max_bytes) {
    close(fd);
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                "%s: larger than %" G_GSIZE_FORMAT " bytes (%" G_GUINT64_FORMAT ")", path,
                max_bytes, (guint64) st.st_size);
    return FALSE;
  }
  cap = (gsize) st.st_size + 1;
  buf = g_malloc(cap + 1);
  for (;;) {
    ssize_t got;
    if (len == cap) {
      if (cap > max_bytes) /* it grew past the limit while being read */
        break;
      cap = MIN(cap * 2, max_bytes + 1);
      buf = g_realloc(buf, cap + 1);
    }
    got = read(fd, buf + len, cap - len);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      int saved = errno;
      close(fd);
      set_errno_error(error, path, "read error", saved);
      return FALSE;
    }
    if (got == 0)
      break;
    len += (gsize) got;
  }
  close(fd);
  if (len > max_bytes) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                "%s: larger than %" G_GSIZE_FORMAT " bytes", path, max_bytes);
    return FALSE;
  }
  buf[len] = '\0';
  *text = g_steal_pointer(&buf);
  if (length)
    *length = len;
  return TRUE;
}

gboolean ema_file_output_ok(const char *path, const char *what, GError **error) {
  GStatBuf st;
  if (path[0] == '\0' || g_str_has_suffix(path, G_DIR_SEPARATOR_S)) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "'%s' is no file name: give %s's file",
                path, what);
    return FALSE;
  }
  if (g_lstat(path, &st) != 0 || S_ISREG(st.st_mode))
    return TRUE;
  if (S_ISDIR(st.st_mode)) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "'%s' is a directory: give %s's file",
                path, what);
    return FALSE;
  }
  g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
              "'%s' is %s, not a file %s can replace: give %s's file", path, file_kind(st.st_mode),
              what, what);
  return FALSE;
}

gboolean ema_file_same(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* LEN bytes of BYTES appended to OUT: in place while they fit its
 * allocation (GLib 2.74's g_string_append_len is an out-of-line insert,
 * about 70 instructions a call, and events.csv appends millions of
 * fields), else by g_string_append_len. */
static inline void append_bytes(GString *out, const char *bytes, gsize len) {
  if (out->len + len < out->allocated_len) {
    memcpy(out->str + out->len, bytes, len);
    out->len += len;
    out->str[out->len] = '\0';
  } else {
    g_string_append_len(out, bytes, (gssize) len);
  }
}

void ema_file_csv_field(GString *out, const char *text) {
  if (strpbrk(text, ",\"\n\r") == NULL) {
    append_bytes(out, text, strlen(text));
    return;
  }
  g_string_append_c(out, '"');
  for (const char *c = text;;) {
    const char *quote = strchr(c, '"');
    if (quote == NULL) {
      g_string_append(out, c);
      break;
    }
    g_string_append_len(out, c, quote - c + 1);
    g_string_append_c(out, '"'); /* doubled */
    c = quote + 1;
  }
  g_string_append_c(out, '"');
}

/* "00" to "99": the digits two at a time, half the dependent divisions of
 * one at a time (event rows write millions of numbers). */
static const char two_digits[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

/* VALUE's decimal digits written backwards ending before END; returns where
 * they start. At least one digit (0 is "0"). */
static char *put_digits(char *end, guint64 value) {
  while (value >= 100) {
    guint pair = (guint) (value % 100);
    value /= 100;
    end -= 2;
    memcpy(end, &two_digits[2 * pair], 2);
  }
  if (value >= 10) {
    end -= 2;
    memcpy(end, &two_digits[2 * value], 2);
  } else {
    *--end = (char) ('0' + value);
  }
  return end;
}

/* VALUE (< 10^COUNT) as exactly COUNT digits, zeros first, backwards before END. */
static char *put_padded(char *end, guint32 value, guint count) {
  for (; count >= 2; count -= 2) {
    guint pair = value % 100;
    value /= 100;
    end -= 2;
    memcpy(end, &two_digits[2 * pair], 2);
  }
  if (count == 1)
    *--end = (char) ('0' + value);
  return end;
}

gsize ema_file_format_uint(char out[EMA_FILE_UINT_CHARS], guint64 value) {
  char digits[EMA_FILE_UINT_CHARS];
  char *start = put_digits(digits + sizeof digits, value);
  gsize n = (gsize) (digits + sizeof digits - start);
  memcpy(out, start, n);
  out[n] = '\0';
  return n;
}

void ema_file_append_uint(GString *out, guint64 value) {
  char digits[EMA_FILE_UINT_CHARS];
  gsize n = ema_file_format_uint(digits, value);
  append_bytes(out, digits, n);
}

void ema_file_append_fixed(GString *out, double value, guint decimals) {
  static const double scales[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
  double scaled, whole, fraction;
  guint64 n;
  char digits[32];
  g_return_if_fail(decimals >= 1 && decimals <= 9);
  scaled = value * scales[decimals];
  /* the product's rounding error is at most half an ulp of it: a fraction
   * that far from one half rounds as the exact value does */
  if (!(value >= 0) || signbit(value) || !(scaled < 9007199254740992.0)) {
    g_string_append_printf(out, "%.*f", (int) decimals, value);
    return;
  }
  whole = floor(scaled);
  fraction = scaled - whole;
  if (fabs(fraction - 0.5) <= scaled * 1e-15 + 1e-12) {
    g_string_append_printf(out, "%.*f", (int) decimals, value);
    return;
  }
  n = (guint64) whole + (fraction > 0.5);
  {
    static const guint64 powers[] = {1,      10,      100,      1000,      10000,
                                     100000, 1000000, 10000000, 100000000, 1000000000};
    char *start = put_padded(digits + sizeof digits, (guint32) (n % powers[decimals]), decimals);
    *--start = '.';
    start = put_digits(start, n / powers[decimals]);
    append_bytes(out, start, (gsize) (digits + sizeof digits - start));
  }
}
