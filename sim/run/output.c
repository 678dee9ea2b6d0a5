/* output.c: output folders (claimed with a marker file), resolved.yaml and
 * summary.json, and the result tables. Models never write output; the CLI
 * calls these after a run. JSON is built with json-glib in a fixed key
 * order, so equal results give equal bytes.
 *
 * Invariants of a claimed folder: after ema_output_claim_dir, none of the
 * entries an earlier run wrote there is left (so nothing in it can pass for
 * a result of this run), nothing ema-sim did not write is touched (a
 * claimed sub-folder loses only what its own marker lists), a folder the
 * marker says one kind of command wrote (run, sweep, frontier, an
 * ema-validate command's) is never taken over by another
 * (ema_output_claim_dir_as; a kind's former name is its own only where the
 * marker lists an entry that only its command wrote), and no other
 * ema-sim process writes there while this one lives (an flock on the
 * folder; a sweep hands its point's lock to the run it starts), and a
 * folder that another's marker lists (a sweep's point) is claimed only by
 * the process that claimed that other (part_of_another()). A run's tables
 * are in its folder only beside their summary.json: written into
 * .ema-partial, moved in when the run ends well (summary.json last), removed
 * when it fails (ema_output_run_failed). */
#include "ema/run/output.h"

#include "ema/core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "ema/core/units.h"
#include "ema/pool/registry.h"
#include "ema/run/fidelity.h"
#include "ema/run/json.h"
#include "ema-vcs.h"

/* The entries every ema-sim run may write into its folder, in the order a
 * reader takes them up (ema_output_run_files names the files among them). */
static const char *const run_entries[] = {"summary.json",       "tenants.csv",   "requests.csv",
                                          "timeline.csv",       "steps.csv",     "events.csv",
                                          EMA_OUTPUT_PARTIAL,   "resolved.yaml", "compare.csv",
                                          "compare-paired.csv", "plots",         NULL};

gboolean ema_output_is_run_entry(const char *name) {
  for (guint i = 0; run_entries[i]; i++)
    if (strcmp(name, run_entries[i]) == 0)
      return TRUE;
  return strcmp(name, EMA_OUTPUT_MARKER) == 0 || strcmp(name, EMA_OUTPUT_MARKER ".new") == 0;
}

char *ema_output_run_files(const char *dir) {
  GString *list = g_string_new(NULL);
  for (guint i = 0; run_entries[i]; i++) {
    g_autofree char *path = g_build_filename(dir, run_entries[i], NULL);
    if (!g_file_test(path, G_FILE_TEST_IS_REGULAR))
      continue; /* not written by this run (the claim cleared it), or plots/ */
    if (list->len > 0)
      g_string_append(list, ", ");
    g_string_append(list, run_entries[i]);
  }
  return g_string_free(list, FALSE);
}

char *ema_output_safe_name(const char *name) {
  GString *out = g_string_new(NULL);
  for (const char *c = name; *c; c++)
    g_string_append_c(out, g_ascii_isalnum(*c) || strchr("._+-", *c) ? *c : '_');
  if (out->len == 0 || out->str[0] == '.')
    g_string_prepend_c(out, '_');
  return g_string_free(out, FALSE);
}

static gboolean file_error(GError **error, int saved, const char *what, const char *path) {
  g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved), "cannot %s %s: %s", what, path,
              g_strerror(saved));
  return FALSE;
}

/* ---- locks ------------------------------------------------------------------- */

/* The folders this process holds: path -> the descriptor its flock is on
 * (the lock lasts while the descriptor is open; O_CLOEXEC, so a program
 * the run starts does not keep it, unless it is handed on on purpose). */
static GHashTable *held_locks;
G_LOCK_DEFINE_STATIC(held_locks);

static void hold_lock(const char *dir, int fd) {
  G_LOCK(held_locks);
  if (held_locks == NULL)
    held_locks = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  if (g_hash_table_contains(held_locks, dir))
    close(GPOINTER_TO_INT(g_hash_table_lookup(held_locks, dir)));
  g_hash_table_insert(held_locks, g_strdup(dir), GINT_TO_POINTER(fd));
  G_UNLOCK(held_locks);
}

int ema_output_lock_fd(const char *dir) {
  int fd = -1;
  G_LOCK(held_locks);
  if (held_locks && g_hash_table_contains(held_locks, dir))
    fd = GPOINTER_TO_INT(g_hash_table_lookup(held_locks, dir));
  G_UNLOCK(held_locks);
  return fd;
}

void ema_output_release_dir(const char *dir) {
  G_LOCK(held_locks);
  if (held_locks && g_hash_table_contains(held_locks, dir)) {
    close(GPOINTER_TO_INT(g_hash_table_lookup(held_locks, dir)));
    g_hash_table_remove(held_locks, dir);
  }
  G_UNLOCK(held_locks);
}

/* The folders this process claimed (any way: locked, shared or handed on), by device and
 * inode: a folder that one of them lists is this process's to claim (part_of_another()). */
typedef struct {
  dev_t dev;
  ino_t ino;
} ClaimedDir;
static GArray *claimed_dirs;
G_LOCK_DEFINE_STATIC(claimed_dirs);

static void note_claimed(const char *dir) {
  GStatBuf st;
  if (g_stat(dir, &st) != 0)
    return;
  G_LOCK(claimed_dirs);
  if (claimed_dirs == NULL)
    claimed_dirs = g_array_new(FALSE, FALSE, sizeof(ClaimedDir));
  g_array_append_val(claimed_dirs, ((ClaimedDir){st.st_dev, st.st_ino}));
  G_UNLOCK(claimed_dirs);
}

static gboolean was_claimed(const GStatBuf *st) {
  gboolean found = FALSE;
  G_LOCK(claimed_dirs);
  for (guint i = 0; claimed_dirs && !found && i < claimed_dirs->len; i++) {
    const ClaimedDir *c = &g_array_index(claimed_dirs, ClaimedDir, i);
    found = c->dev == st->st_dev && c->ino == st->st_ino;
  }
  G_UNLOCK(claimed_dirs);
  return found;
}

static GPtrArray *read_marker(const char *dir, char **kind, GError **error);

/* Whether FOLDER's marker, a regular file, lists ENTRY: 1, with the kind it records in *KIND
 * (NULL for none); 0 where there is no such marker or it does not list ENTRY; -1 with ERROR
 * where it does not read. */
static int marker_lists(const char *folder, const char *entry, char **kind, GError **error) {
  g_autofree char *marker = g_build_filename(folder, EMA_OUTPUT_MARKER, NULL);
  g_autoptr(GPtrArray) names = NULL;
  GStatBuf st;
  if (g_lstat(marker, &st) != 0 || !S_ISREG(st.st_mode))
    return 0;
  if ((names = read_marker(folder, kind, error)) == NULL)
    return -1;
  return g_ptr_array_find_with_equal_func(names, entry, g_str_equal, NULL) ? 1 : 0;
}

/* FALSE with an error where DIR is an entry that its parent folder's marker lists (a sweep's
 * point, a comparison's variant, validate compare's sim/) and this process did not claim that
 * parent: the parent's own tables (sweep.csv, compare.csv) describe what DIR holds, and another
 * run written there would leave them describing results that are gone. */
static gboolean part_of_another(const char *dir, const char *option, GError **error) {
  g_autofree char *real = realpath(dir, NULL);
  g_autofree char *parent = NULL, *base = NULL, *kind = NULL;
  GStatBuf st;
  int listed;
  if (real == NULL)
    return TRUE; /* (made just before: a failure to resolve it shows in the claim) */
  parent = g_path_get_dirname(real);
  base = g_path_get_basename(real);
  if (g_stat(parent, &st) != 0 || was_claimed(&st))
    return TRUE;
  if ((listed = marker_lists(parent, base, &kind, error)) <= 0)
    return listed == 0;
  if (g_strcmp0(kind, "sweep") == 0)
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                "output directory %s is a point of the sweep in %s, whose sweep.csv describes "
                "it: run the sweep again to rerun its points, or give another %s",
                dir, parent, option);
  else
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                "output directory %s belongs to the output in %s (its %s lists it, and its "
                "tables describe what it holds): give another %s",
                dir, parent, EMA_OUTPUT_MARKER, option);
  return FALSE;
}

static char *kind_command(const char *kind);

gboolean ema_output_file_free(const char *path, const char *option, GError **error) {
  g_autofree char *dir = g_path_get_dirname(path);
  g_autofree char *real = realpath(dir, NULL);
  g_autofree char *entry = g_path_get_basename(path);
  if (real == NULL)
    return TRUE; /* no such folder: nothing there is anyone's (writing it says why it fails) */
  /* from the file's folder up: is the entry on the way to it listed by that folder's marker? */
  for (;;) {
    g_autofree char *parent = NULL;
    g_autofree char *kind = NULL;
    int listed = marker_lists(real, entry, &kind, error);
    if (listed < 0)
      return FALSE;
    if (listed > 0) {
      g_autofree char *command = kind ? kind_command(kind) : g_strdup("ema-sim");
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                  "%s: '%s' is an output of %s (%s/%s lists %s), which a later run of it "
                  "replaces or removes: give another %s",
                  option, path, command, real, EMA_OUTPUT_MARKER, entry, option);
      return FALSE;
    }
    parent = g_path_get_dirname(real);
    if (strcmp(parent, real) == 0)
      return TRUE;
    g_free(entry);
    entry = g_path_get_basename(real);
    g_free(real);
    real = g_steal_pointer(&parent);
  }
}

/* The folder DIR was claimed by the process that started this one and handed
 * on (EMA_OUTPUT_CLAIMED_ENV names the descriptor, which must be DIR's):
 * this process holds it now, as it is. */
static gboolean adopt_claim(const char *dir) {
  const char *fd_text = g_getenv(EMA_OUTPUT_CLAIMED_ENV);
  guint64 fd;
  struct stat held, named;
  if (fd_text == NULL || !g_ascii_string_to_unsigned(fd_text, 10, 3, G_MAXINT, &fd, NULL) ||
      fstat((int) fd, &held) != 0 || stat(dir, &named) != 0 || held.st_dev != named.st_dev ||
      held.st_ino != named.st_ino)
    return FALSE;
  g_unsetenv(EMA_OUTPUT_CLAIMED_ENV); /* one folder, once */
  (void) fcntl((int) fd, F_SETFD, FD_CLOEXEC);
  hold_lock(dir, (int) fd);
  note_claimed(dir);
  return TRUE;
}

/* Lock DIR against every other ema-sim process for as long as this one
 * lives (flock on the folder itself: nothing more is written into it, and
 * a killed process's lock goes with it). */
static gboolean lock_dir(const char *dir, const char *option, GError **error) {
  int fd;
  if (ema_output_lock_fd(dir) >= 0)
    return TRUE;
  fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return file_error(error, errno, "open output directory", dir);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int saved = errno;
    close(fd);
    if (saved == EWOULDBLOCK) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                  "output directory %s is in use by another process of ema-sim or ema-validate "
                  "(writing there now): wait for it, or give another %s",
                  dir, option);
      return FALSE;
    }
    return file_error(error, saved, "lock output directory", dir);
  }
  hold_lock(dir, fd);
  return TRUE;
}

/* ---- clearing -------------------------------------------------------------- */

static gboolean clear_listed(const char *dir, GError **error);
static gboolean write_marker(const char *dir, const char *kind, const char *const *entries,
                             gboolean locked, GError **error);

/* Remove PATH, an entry a marker lists: a file; a folder with its own
 * marker (a claimed sub-folder) has what that marker lists removed, and
 * goes only when nothing else is left in it; a listed folder without a
 * marker (plots/) is ema-sim's whole. Absent is fine. */
static gboolean remove_entry(const char *path, GError **error) {
  GStatBuf st;
  if (g_lstat(path, &st) != 0)
    return errno == ENOENT ? TRUE : file_error(error, errno, "inspect", path);
  if (S_ISDIR(st.st_mode)) {
    g_autofree char *marker = g_build_filename(path, EMA_OUTPUT_MARKER, NULL);
    g_autoptr(GDir) handle = NULL;
    const char *entry;
    if (g_file_test(marker, G_FILE_TEST_EXISTS)) {
      static const char *const none[] = {NULL};
      gboolean others = FALSE;
      if (!clear_listed(path, error) || (handle = g_dir_open(path, 0, error)) == NULL)
        return FALSE;
      while ((entry = g_dir_read_name(handle)) != NULL)
        others = others || strcmp(entry, EMA_OUTPUT_MARKER) != 0;
      if (others) /* a user's files keep it, still a folder of ema-sim's */
        return write_marker(path, NULL, none, TRUE, error);
      if (g_remove(marker) != 0 && errno != ENOENT)
        return file_error(error, errno, "remove", marker);
      if (g_rmdir(path) != 0 && errno != ENOENT)
        return file_error(error, errno, "remove", path);
      return TRUE;
    }
    if ((handle = g_dir_open(path, 0, error)) == NULL)
      return FALSE;
    while ((entry = g_dir_read_name(handle)) != NULL) {
      g_autofree char *child = g_build_filename(path, entry, NULL);
      if (!remove_entry(child, error))
        return FALSE;
    }
  }
  if (g_remove(path) != 0 && errno != ENOENT)
    return file_error(error, errno, "remove", path);
  return TRUE;
}

/* The marker's line that records which kind of command claimed the folder
 * (ema_output_claim_dir_kind); a comment, so that an ema-sim that records
 * no kind reads the marker as before. */
#define KIND_LINE "# kind: "

/* The entries DIR's marker lists, NULL with ERROR set when it cannot be read
 * (a marker that is not a regular file, a FIFO, is an error, never a wait).
 * Names with a '/', "." and ".." are not entries. *KIND (unless KIND is
 * NULL) gets the kind it records, NULL for none. */
static GPtrArray *read_marker(const char *dir, char **kind, GError **error) {
  g_autofree char *marker = g_build_filename(dir, EMA_OUTPUT_MARKER, NULL);
  /* mapped, not read: the marker is the run's own, not an input its summary names */
  g_autoptr(GMappedFile) file = ema_file_map_regular(marker, error);
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;
  GPtrArray *names;
  if (file == NULL)
    return NULL;
  if (g_mapped_file_get_length(file) > EMA_FILE_MAX_TEXT) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                "%s: larger than %" G_GSIZE_FORMAT " bytes", marker, EMA_FILE_MAX_TEXT);
    return NULL;
  }
  text = g_strndup(g_mapped_file_get_contents(file) ? g_mapped_file_get_contents(file) : "",
                   g_mapped_file_get_length(file));
  names = g_ptr_array_new_with_free_func(g_free);
  lines = g_strsplit(text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    if (kind && *kind == NULL && g_str_has_prefix(lines[i], KIND_LINE) &&
        lines[i][strlen(KIND_LINE)] != '\0')
      *kind = g_strdup(lines[i] + strlen(KIND_LINE));
    if (lines[i][0] != '\0' && lines[i][0] != '#' && !strchr(lines[i], '/') &&
        strcmp(lines[i], "..") != 0 && strcmp(lines[i], ".") != 0)
      g_ptr_array_add(names, g_strdup(lines[i]));
  }
  return names;
}

/* Remove every entry DIR's marker lists. */
static gboolean clear_listed(const char *dir, GError **error) {
  g_autoptr(GPtrArray) names = read_marker(dir, NULL, error);
  if (names == NULL)
    return FALSE;
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *path = g_build_filename(dir, names->pdata[i], NULL);
    if (!remove_entry(path, error))
      return FALSE;
  }
  return TRUE;
}

/* NAME is the temporary file the marker is written through before it is
 * renamed into place (a run killed then leaves it). Only this one name:
 * a user's .ema-output.backup is the user's. */
static gboolean is_marker_leftover(const char *name) {
  return strcmp(name, EMA_OUTPUT_MARKER ".new") == 0;
}

/* Write DIR's marker recording KIND (NULL: none) and listing ENTRIES through
 * MARKER.new (created afresh, no FIFO or link followed or waited on) and a
 * rename. */
static gboolean write_marker(const char *dir, const char *kind, const char *const *entries,
                             gboolean locked, GError **error) {
  g_autofree char *marker = g_build_filename(dir, EMA_OUTPUT_MARKER, NULL);
  g_autofree char *temporary = g_build_filename(dir, EMA_OUTPUT_MARKER ".new", NULL);
  g_autoptr(GString) list = g_string_new(
      "# ema-sim output folder: before it writes here again, ema-sim removes the\n"
      "# entries listed below (what it wrote here) and leaves everything else alone.\n");
  gssize written = 0;
  int fd;
  if (kind)
    g_string_append_printf(list, KIND_LINE "%s\n", kind);
  for (guint i = 0; entries[i]; i++)
    g_string_append_printf(list, "%s\n", entries[i]);
  /* under the lock a temporary file is a killed run's; without it (SHARED)
   * another sharer's, and O_EXCL lets one of them write the marker */
  if (locked && g_remove(temporary) != 0 && errno != ENOENT)
    return file_error(error, errno, "remove", temporary);
  fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return file_error(error, errno, "write", temporary);
  while (written < (gssize) list->len) {
    ssize_t n = write(fd, list->str + written, list->len - (gsize) written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int saved = errno;
      close(fd);
      return file_error(error, saved, "write", temporary);
    }
    written += n;
  }
  if (close(fd) != 0)
    return file_error(error, errno, "write", temporary);
  if (g_rename(temporary, marker) != 0)
    return file_error(error, errno, "write", marker);
  return TRUE;
}

/* DIR's entries are all this process's marker leftovers, or (SHARED: the
 * processes sharing it by design) claimed folders or the marker leftover
 * of another of them; ERROR names DIR otherwise. */
static gboolean only_ours(const char *dir, gboolean shared, GPtrArray *leftovers,
                          const char *option, GError **error) {
  g_autoptr(GDir) handle = g_dir_open(dir, 0, error);
  const char *name;
  if (handle == NULL)
    return FALSE;
  while ((name = g_dir_read_name(handle)) != NULL) {
    g_autofree char *inner = g_build_filename(dir, name, EMA_OUTPUT_MARKER, NULL);
    if (shared && (is_marker_leftover(name) || g_file_test(inner, G_FILE_TEST_IS_REGULAR)))
      continue;
    if (!is_marker_leftover(name)) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                  "output directory %s is not empty and not an ema-sim output folder (no %s): "
                  "give another %s, or empty it",
                  dir, EMA_OUTPUT_MARKER, option);
      return FALSE;
    }
    g_ptr_array_add(leftovers, g_build_filename(dir, name, NULL));
  }
  return TRUE;
}

/* A claim without a lock by one of several processes writing into DIR
 * together (KEEP): the first to find no marker writes it. */
static gboolean claim_shared(const char *dir, const char *kind, const char *const *entries,
                             const char *option, GError **error) {
  g_autofree char *marker = g_build_filename(dir, EMA_OUTPUT_MARKER, NULL);
  g_autoptr(GPtrArray) leftovers = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) names = NULL;
  GError *local = NULL;
  if (g_file_test(marker, G_FILE_TEST_EXISTS))
    return (names = read_marker(dir, NULL, error)) != NULL;
  if (!only_ours(dir, TRUE, leftovers, option, error))
    return FALSE;
  if (write_marker(dir, kind, entries, FALSE, &local))
    return TRUE;
  if (g_error_matches(local, G_FILE_ERROR, G_FILE_ERROR_EXIST)) {
    g_error_free(local); /* another of them writes it now */
    return TRUE;
  }
  g_propagate_error(error, local);
  return FALSE;
}

/* A claim that removes nothing (KEEP): what an earlier claim listed stays,
 * and stays listed (and so does the kind it recorded, unless KIND is
 * given), but with PRUNE only what ENTRIES name (a sweep's points found
 * done), the rest it listed removed (the points of another definition of
 * the sweep: results beside it that are not its own); a folder without a
 * marker is taken as it is, but an entry of ENTRIES already there that no
 * marker lists (a user's sweep.csv, compare.md) is refused, never
 * overwritten, unless it is a claimed folder itself. */
static gboolean claim_keeping(const char *dir, const char *kind, const char *const *entries,
                              gboolean prune, const char *option, GError **error) {
  g_autofree char *marker = g_build_filename(dir, EMA_OUTPUT_MARKER, NULL);
  g_autofree char *recorded = NULL;
  g_autoptr(GPtrArray) names = NULL;
  if (g_file_test(marker, G_FILE_TEST_EXISTS) || g_file_test(marker, G_FILE_TEST_IS_SYMLINK))
    names = read_marker(dir, &recorded, error);
  else
    names = g_ptr_array_new_with_free_func(g_free);
  if (names == NULL)
    return FALSE;
  for (guint i = names->len; prune && i-- > 0;)
    if (!g_strv_contains(entries, names->pdata[i])) {
      g_autofree char *path = g_build_filename(dir, names->pdata[i], NULL);
      if (!remove_entry(path, error))
        return FALSE;
      g_ptr_array_remove_index(names, i);
    }
  for (guint i = 0; entries[i]; i++) {
    g_autofree char *path = g_build_filename(dir, entries[i], NULL);
    g_autofree char *inner = g_build_filename(path, EMA_OUTPUT_MARKER, NULL);
    GStatBuf st;
    if (g_ptr_array_find_with_equal_func(names, entries[i], g_str_equal, NULL))
      continue;
    if (g_lstat(path, &st) == 0 && !g_file_test(inner, G_FILE_TEST_IS_REGULAR)) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                  "%s exists and is not ema-sim's (no %s lists it): move it, or give another %s",
                  path, marker, option);
      return FALSE;
    }
    g_ptr_array_add(names, g_strdup(entries[i]));
  }
  g_ptr_array_add(names, NULL);
  return write_marker(dir, kind ? kind : recorded, (const char *const *) names->pdata, TRUE, error);
}

/* The command a marker's KIND names: "ema-sim KIND", or KIND where it names its program
 * ("ema-validate pool"). */
static char *kind_command(const char *kind) {
  return g_str_has_prefix(kind, "ema-") ? g_strdup(kind) : g_strconcat("ema-sim ", kind, NULL);
}

/* The option a refusal of AS's claim asks for another of. */
static const char *claim_option(const EmaOutputClaimAs *as) {
  return as->option ? as->option : "-o";
}

/* DIR's marker, where it has one, records no kind or AS's (a NULL kind takes any), or AS's former
 * kind and lists one of its former entries (a folder this command claimed before its kind was
 * named so). CLAIMING: the refusal says the folder may be removed (a hold only writes into it). */
static gboolean same_kind(const char *dir, const EmaOutputClaimAs *as, gboolean claiming,
                          GError **error) {
  g_autofree char *marker = g_build_filename(dir, EMA_OUTPUT_MARKER, NULL);
  g_autofree char *recorded = NULL, *holds = NULL, *wanted = NULL;
  g_autoptr(GPtrArray) names = NULL;
  GStatBuf st;
  if (as->kind == NULL || g_lstat(marker, &st) != 0)
    return TRUE;
  if ((names = read_marker(dir, &recorded, error)) == NULL)
    return FALSE;
  if (recorded == NULL || strcmp(recorded, as->kind) == 0)
    return TRUE;
  if (as->former && strcmp(recorded, as->former) == 0)
    for (guint i = 0; as->former_entries && as->former_entries[i]; i++)
      if (g_ptr_array_find_with_equal_func(names, as->former_entries[i], g_str_equal, NULL))
        return TRUE;
  holds = kind_command(recorded);
  wanted = kind_command(as->kind);
  g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
              "output directory %s holds the output of %s (its %s says so), not of %s: give "
              "another %s%s",
              dir, holds, EMA_OUTPUT_MARKER, wanted, claim_option(as),
              claiming ? ", or remove the folder first" : "");
  return FALSE;
}

gboolean ema_output_claim_dir_full(const char *dir, const char *const *entries,
                                   EmaOutputClaimFlags flags, GError **error) {
  const EmaOutputClaimAs as = {0};
  return ema_output_claim_dir_as(dir, &as, entries, flags, error);
}

/* FALSE with an error where DIR cannot name an output folder, which OPTION named. */
static gboolean dir_named(const char *dir, const char *option, GError **error) {
  if (*dir == '\0') { /* (-o '': mkdir's "Invalid argument" named no folder) */
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                "the output directory's name is empty: give a folder (%s DIR)", option);
    return FALSE;
  }
  return TRUE;
}

gboolean ema_output_dir_named(const char *dir, GError **error) {
  return dir_named(dir, "-o", error);
}

gboolean ema_output_claim_dir_kind(const char *dir, const char *kind, const char *const *entries,
                                   EmaOutputClaimFlags flags, GError **error) {
  const EmaOutputClaimAs as = {.kind = kind};
  return ema_output_claim_dir_as(dir, &as, entries, flags, error);
}

gboolean ema_output_claim_dir_as(const char *dir, const EmaOutputClaimAs *as,
                                 const char *const *entries, EmaOutputClaimFlags flags,
                                 GError **error) {
  g_autofree char *marker = g_build_filename(dir, EMA_OUTPUT_MARKER, NULL);
  const char *option = claim_option(as);
  GStatBuf st;
  if (!dir_named(dir, option, error))
    return FALSE;
  if (g_file_test(dir, G_FILE_TEST_EXISTS) && !g_file_test(dir, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOTDIR,
                "cannot create output directory %s: it exists and is not a folder", dir);
    return FALSE;
  }
  if (!g_file_test(dir, G_FILE_TEST_EXISTS) && g_mkdir_with_parents(dir, 0755) != 0)
    return file_error(error, errno, "create output directory", dir);
  if (adopt_claim(dir))
    return TRUE;
  if (!part_of_another(dir, option, error))
    return FALSE;
  if (!(flags & EMA_OUTPUT_CLAIM_SHARED) && !lock_dir(dir, option, error))
    return FALSE;
  if (!same_kind(dir, as, TRUE, error))
    return FALSE;
  note_claimed(dir);
  if (flags & EMA_OUTPUT_CLAIM_SHARED)
    return claim_shared(dir, as->kind, entries, option, error);
  if (flags & EMA_OUTPUT_CLAIM_KEEP)
    return claim_keeping(dir, as->kind, entries, (flags & EMA_OUTPUT_CLAIM_PRUNE) != 0, option,
                         error);
  if (g_lstat(marker, &st) == 0) {
    if (!clear_listed(dir, error))
      return FALSE;
  } else {
    g_autoptr(GPtrArray) leftovers = g_ptr_array_new_with_free_func(g_free);
    if (!only_ours(dir, FALSE, leftovers, option, error))
      return FALSE;
    for (guint i = 0; i < leftovers->len; i++)
      if (!remove_entry(leftovers->pdata[i], error))
        return FALSE;
  }
  return write_marker(dir, as->kind, entries, TRUE, error);
}

gboolean ema_output_hold_dir(const char *dir, const EmaOutputClaimAs *as, GError **error) {
  const char *option = claim_option(as);
  if (!dir_named(dir, option, error))
    return FALSE;
  if (!g_file_test(dir, G_FILE_TEST_IS_DIR))
    return TRUE; /* nothing there to hold: its reader says what is missing */
  return part_of_another(dir, option, error) && lock_dir(dir, option, error) &&
         same_kind(dir, as, FALSE, error);
}

gboolean ema_output_remove_own(const char *path, GError **error) {
  return remove_entry(path, error);
}

gboolean ema_output_remove_entries(const char *dir, const char *const *names, GError **error) {
  g_autofree char *marker = g_build_filename(dir, EMA_OUTPUT_MARKER, NULL);
  g_autoptr(GPtrArray) listed = NULL;
  GStatBuf st;
  if (g_lstat(marker, &st) != 0)
    return TRUE; /* nothing listed (yet: a sharer of the folder writes its marker now) */
  if ((listed = read_marker(dir, NULL, error)) == NULL)
    return FALSE;
  for (guint i = 0; names[i]; i++)
    if (g_ptr_array_find_with_equal_func(listed, names[i], g_str_equal, NULL)) {
      g_autofree char *path = g_build_filename(dir, names[i], NULL);
      if (!remove_entry(path, error))
        return FALSE;
    }
  return TRUE;
}

gboolean ema_output_claim_run_dir_as(const char *dir, const EmaOutputClaimAs *as,
                                     const char *const *extra, GError **error) {
  g_autoptr(GPtrArray) entries = g_ptr_array_new();
  for (guint i = 0; run_entries[i]; i++)
    g_ptr_array_add(entries, (gpointer) run_entries[i]);
  for (guint i = 0; extra && extra[i]; i++)
    g_ptr_array_add(entries, (gpointer) extra[i]);
  g_ptr_array_add(entries, NULL);
  return ema_output_claim_dir_as(dir, as, (const char *const *) entries->pdata,
                                 EMA_OUTPUT_CLAIM_CLEAR, error);
}

gboolean ema_output_claim_dir(const char *dir, const char *const *extra, GError **error) {
  const EmaOutputClaimAs as = {.kind = "run"};
  return ema_output_claim_run_dir_as(dir, &as, extra, error);
}

char *ema_output_partial_dir(const char *dir, GError **error) {
  g_autofree char *partial = g_build_filename(dir, EMA_OUTPUT_PARTIAL, NULL);
  /* the claim removed one that a killed run left (the marker lists it); one there now was not
   * listed (a marker of an ema-sim before .ema-partial), is not ema-sim's, and stays */
  if (g_mkdir(partial, 0755) != 0) {
    int saved = errno;
    if (saved != EEXIST)
      file_error(error, saved, "create", partial);
    else
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                  "cannot create %s: it exists, and the folder's %s does not list it (not "
                  "ema-sim's): remove it, or give another -o",
                  partial, EMA_OUTPUT_MARKER);
    return NULL;
  }
  return g_steal_pointer(&partial);
}

/* Move NAME from PARTIAL into DIR. */
static gboolean publish_file(const char *partial, const char *dir, const char *name,
                             GError **error) {
  g_autofree char *from = g_build_filename(partial, name, NULL);
  g_autofree char *to = g_build_filename(dir, name, NULL);
  if (g_rename(from, to) != 0)
    return file_error(error, errno, "move into place", from);
  return TRUE;
}

gboolean ema_output_publish_run(const char *dir, GError **error) {
  g_autofree char *partial = g_build_filename(dir, EMA_OUTPUT_PARTIAL, NULL);
  g_autoptr(GDir) handle = g_dir_open(partial, 0, error);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  const char *name;
  gboolean summary = FALSE;
  if (handle == NULL)
    return FALSE;
  while ((name = g_dir_read_name(handle)) != NULL)
    if (strcmp(name, "summary.json") == 0)
      summary = TRUE;
    else
      g_ptr_array_add(names, g_strdup(name));
  for (guint i = 0; i < names->len; i++)
    if (!publish_file(partial, dir, names->pdata[i], error))
      return FALSE;
  if (summary && !publish_file(partial, dir, "summary.json", error))
    return FALSE;
  if (g_rmdir(partial) != 0)
    return file_error(error, errno, "remove", partial);
  return TRUE;
}

void ema_output_run_failed(const char *dir, const char *partial, GError **error) {
  char *message;
  g_return_if_fail(error != NULL && *error != NULL);
  /* a folder that cannot be removed stays hidden, and the next claim removes it */
  if (partial)
    (void) remove_entry(partial, NULL);
  message = g_strdup_printf("%s; no results written (%s/ keeps only the failed run's "
                            "resolved.yaml)",
                            (*error)->message, dir);
  g_free((*error)->message);
  (*error)->message = message;
}

static gboolean write_file(const char *dir, const char *name, const char *text, GError **error) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  return g_file_set_contents(path, text, -1, error);
}

gboolean ema_output_write_resolved(const char *dir, const EmaExperiment *experiment,
                                   GError **error) {
  g_autofree char *text = ema_experiment_to_yaml(experiment);
  return write_file(dir, "resolved.yaml", text, error);
}

static void add_op(JsonBuilder *builder, const EmaOpResult *result) {
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "name");
  json_builder_add_string_value(builder, result->name);
  json_builder_set_member_name(builder, "seconds");
  json_builder_add_double_value(builder, (double) result->seconds_ns / 1e9);
  json_builder_set_member_name(builder, "bandwidth_gbps");
  json_builder_add_double_value(builder, isfinite(result->bandwidth) ? result->bandwidth / 1e9 : 0);
  if (result->has_expect) {
    json_builder_set_member_name(builder, "expected");
    json_builder_add_double_value(builder, result->expect_is_time ? result->expected
                                                                  : result->expected / 1e9);
    json_builder_set_member_name(builder, "expected_metric");
    json_builder_add_string_value(builder, result->expect_is_time ? "seconds" : "bandwidth_gbps");
    json_builder_set_member_name(builder, "error_pct");
    json_builder_add_double_value(builder, result->error * 100);
    json_builder_set_member_name(builder, "tolerance_pct");
    json_builder_add_double_value(builder, result->tolerance * 100);
    json_builder_set_member_name(builder, "pass");
    json_builder_add_boolean_value(builder, result->pass);
  }
  json_builder_end_object(builder);
}

/* The SHA-256 of LENGTH bytes at DATA in lowercase hex (OpenSSL's, which uses the CPU's SHA
 * instructions where it has them), newly allocated. */
static char *sha256_hex(const void *data, gsize length) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  GString *hex;
  if (!EVP_Digest(data, length, digest, &size, EVP_sha256(), NULL))
    g_error("SHA-256 failed (OpenSSL's EVP_Digest)");
  hex = g_string_sized_new(2 * size);
  for (unsigned int i = 0; i < size; i++)
    g_string_append_printf(hex, "%02x", digest[i]);
  return g_string_free(hex, FALSE);
}

char *ema_output_file_sha256(const char *path) {
  /* a FIFO or device that a tampered provenance names is refused, not waited on */
  g_autoptr(GMappedFile) file = ema_file_map_regular(path, NULL);
  if (file == NULL)
    return NULL;
  return sha256_hex(g_mapped_file_get_contents(file), g_mapped_file_get_length(file));
}

static gint compare_strings(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* The distinct files the loaded policy modules came from, sorted. */
static GPtrArray *plugin_files(void) {
  GPtrArray *files = g_ptr_array_new();
  for (EmaPolicyKind kind = EMA_POLICY_BORROW; kind <= EMA_POLICY_RECLAIM; kind++) {
    g_autoptr(GPtrArray) infos = ema_policy_registry_list(kind);
    for (guint i = 0; i < infos->len; i++) {
      const EmaPolicyInfo *info = infos->pdata[i];
      gboolean seen = strcmp(info->origin, "built-in") == 0;
      for (guint j = 0; j < files->len && !seen; j++)
        seen = strcmp(files->pdata[j], info->origin) == 0;
      if (!seen)
        g_ptr_array_add(files, (gpointer) info->origin);
    }
  }
  g_ptr_array_sort(files, compare_strings);
  return files;
}

char *ema_output_build_id(const char *program) {
  g_autoptr(GString) hashes = g_string_new(NULL);
  g_autoptr(GPtrArray) plugins = plugin_files();
  g_autofree char *self = ema_output_file_sha256(program);
  g_string_append(hashes, self ? self : "?");
  for (guint i = 0; i < plugins->len; i++) {
    g_autofree char *hash = ema_output_file_sha256(plugins->pdata[i]);
    g_string_append(hashes, hash ? hash : "?");
  }
  /* the hash of the files' hashes, one after the other */
  return sha256_hex(hashes->str, hashes->len);
}

/* PATH and its hash, read once per summary: HASHES (path -> hash, "" for a
 * file that cannot be read) keeps those already read (tenants often replay
 * one trace). */
static void add_hashed_file(JsonBuilder *builder, const char *what, const char *path,
                            GHashTable *hashes) {
  const char *hash = g_hash_table_lookup(hashes, path);
  if (hash == NULL) {
    char *read = ema_output_file_sha256(path);
    hash = read ? read : g_strdup("");
    g_hash_table_insert(hashes, g_strdup(path), (gpointer) hash);
  }
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, what);
  json_builder_add_string_value(builder, path);
  json_builder_set_member_name(builder, "sha256");
  json_builder_add_string_value(builder, hash);
  json_builder_end_object(builder);
}

/* Which program made the results, with which plugins and from which files. */
static void add_provenance(JsonBuilder *builder, const EmaExperiment *experiment) {
  g_autoptr(GPtrArray) plugins = plugin_files();
  g_autofree char *build_id = ema_output_build_id("/proc/self/exe");
  g_autoptr(GHashTable) hashes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GPtrArray) inputs = ema_file_inputs();
  json_builder_set_member_name(builder, "provenance");
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "version");
  json_builder_add_string_value(builder, EMA_VERSION);
  json_builder_set_member_name(builder, "commit");
  json_builder_add_string_value(builder, EMA_VCS_COMMIT);
  json_builder_set_member_name(builder, "build_id");
  json_builder_add_string_value(builder, build_id);
  json_builder_set_member_name(builder, "plugins");
  json_builder_begin_array(builder);
  for (guint i = 0; i < plugins->len; i++)
    add_hashed_file(builder, "path", plugins->pdata[i], hashes);
  json_builder_end_array(builder);
  json_builder_set_member_name(builder, "traces");
  json_builder_begin_array(builder);
  for (guint i = 0; experiment->tenants && i < experiment->tenants->len; i++) {
    const EmaTenantSpec *tenant = &g_array_index(experiment->tenants, EmaTenantSpec, i);
    const char *files[] = {tenant->trace.file, tenant->trace.prompt.file,
                           tenant->trace.output.file};
    for (guint f = 0; f < G_N_ELEMENTS(files); f++)
      if (files[f] && *files[f])
        add_hashed_file(builder, "file", files[f], hashes);
  }
  json_builder_end_array(builder);
  /* every file the run read (experiment, includes, models, profiles,
   * traces): a sweep reruns a point when one of them changed */
  json_builder_set_member_name(builder, "inputs");
  json_builder_begin_array(builder);
  for (guint i = 0; i < inputs->len; i++)
    add_hashed_file(builder, "file", inputs->pdata[i], hashes);
  json_builder_end_array(builder);
  json_builder_end_object(builder);
}

/* The members every summary.json starts with. */
static void begin_summary(JsonBuilder *builder, const EmaExperiment *experiment) {
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "experiment");
  json_builder_add_string_value(builder, experiment->name);
  json_builder_set_member_name(builder, "version");
  json_builder_add_string_value(builder, EMA_VERSION);
  add_provenance(builder, experiment);
  json_builder_set_member_name(builder, "seed");
  json_builder_add_int_value(builder, experiment->seed);
  json_builder_set_member_name(builder, "server");
  json_builder_add_string_value(builder, experiment->server.name);
}

/* A result's real numbers are written with RESULT_DIGITS significant digits
 * (summary.json, tenants.csv): the simulation is not that exact, and
 * json-glib's round-trip 17 (563.08531149999999) hide what they say. */
#define RESULT_FORMAT "%.12g"

/* TEXT (JSON) with every number that has a fraction or an exponent
 * rewritten in RESULT_FORMAT; strings and integers are kept. */
static char *round_json_numbers(const char *text) {
  GString *out = g_string_sized_new(strlen(text));
  gboolean in_string = FALSE;
  for (const char *p = text; *p;) {
    if (in_string) {
      if (*p == '\\' && p[1])
        g_string_append_c(out, *p++);
      else if (*p == '"')
        in_string = FALSE;
      g_string_append_c(out, *p++);
    } else if (*p == '"') {
      in_string = TRUE;
      g_string_append_c(out, *p++);
    } else if (*p == '-' || g_ascii_isdigit(*p)) {
      gsize n = strspn(p, "-+0123456789.eE");
      g_autofree char *token = g_strndup(p, n);
      char buffer[G_ASCII_DTOSTR_BUF_SIZE];
      if (strpbrk(token, ".eE")) {
        /* still a real: 1.0 stays 1.0, not the integer 1 */
        g_string_append(out, g_ascii_formatd(buffer, sizeof buffer, RESULT_FORMAT,
                                             g_ascii_strtod(token, NULL)));
        if (!strpbrk(buffer, ".eE"))
          g_string_append(out, ".0");
      } else
        g_string_append(out, token);
      p += n;
    } else
      g_string_append_c(out, *p++);
  }
  return g_string_free(out, FALSE);
}

/* The "sim" member every summary.json ends with; then write DIR/summary.json. */
static gboolean end_summary(JsonBuilder *builder, guint64 events, EmaTime simulated, double wall_s,
                            const char *dir, GError **error) {
  g_autoptr(JsonGenerator) generator = json_generator_new();
  g_autoptr(JsonNode) root = NULL;
  g_autofree char *text = NULL;
  g_autofree char *with_newline = NULL;
  json_builder_set_member_name(builder, "sim");
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "events");
  json_builder_add_int_value(builder, (gint64) events);
  json_builder_set_member_name(builder, "simulated_s");
  json_builder_add_double_value(builder, (double) simulated / 1e9);
  json_builder_set_member_name(builder, "wall_s");
  json_builder_add_double_value(builder, wall_s);
  json_builder_end_object(builder);
  json_builder_end_object(builder);

  root = json_builder_get_root(builder);
  json_generator_set_root(generator, root);
  json_generator_set_pretty(generator, TRUE);
  json_generator_set_indent(generator, 2);
  {
    g_autofree char *exact = json_generator_to_data(generator, NULL);
    text = round_json_numbers(exact);
  }
  /* a failed allocation inside the C library's printf drops text silently
   * (an empty "events" value): what does not parse back is not written */
  {
    g_autoptr(JsonParser) check = json_parser_new();
    if (!json_parser_load_from_data(check, text, -1, NULL)) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOMEM,
                  "%s/summary.json: the generated JSON does not parse (out of memory?)", dir);
      return FALSE;
    }
  }
  with_newline = g_strconcat(text, "\n", NULL);
  return write_file(dir, "summary.json", with_newline, error);
}

gboolean ema_output_write_ops_summary(const char *dir, const EmaExperiment *experiment,
                                      const EmaOpsReport *report, double wall_s, GError **error) {
  g_autoptr(JsonBuilder) builder = json_builder_new();
  begin_summary(builder, experiment);
  json_builder_set_member_name(builder, "ops");
  json_builder_begin_array(builder);
  for (guint i = 0; i < report->ops->len; i++)
    add_op(builder, &g_array_index(report->ops, EmaOpResult, i));
  json_builder_end_array(builder);
  json_builder_set_member_name(builder, "expectations_missed");
  json_builder_add_int_value(builder, report->failed);
  return end_summary(builder, report->events, report->simulated, wall_s, dir, error);
}

/* The latency quantiles and moments every histogram reports (ms). */
static const double latency_quantiles[] = {0.5, 0.9, 0.95, 0.99};
static const char *const latency_names[] = {"p50", "p90", "p95", "p99", "mean", "std"};
#define N_LATENCY G_N_ELEMENTS(latency_names)

static void latency_values(const EmaHistogram *histogram, double values[N_LATENCY]) {
  for (guint i = 0; i < G_N_ELEMENTS(latency_quantiles); i++)
    values[i] = ema_histogram_quantile(histogram, latency_quantiles[i]) / 1e6;
  values[N_LATENCY - 2] = ema_histogram_mean(histogram) / 1e6;
  values[N_LATENCY - 1] = ema_histogram_std(histogram) / 1e6;
}

/* A tenant's flat fields, in summary.json's and tenants.csv's order: the
 * name of each and its value as a number (integers exact below 2^53). */
typedef struct {
  const char *name;
  double value;
  gboolean integer;
} Field;

#define MAX_FIELDS 64

static guint tenant_fields(const EmaTenantResult *result, Field *fields) {
  const EmaTenantMetrics *m = result->metrics;
  const struct {
    const char *name;
    const EmaHistogram *histogram;
  } latencies[] = {
      {"ttft_ms", m->ttft}, {"tpot_ms", m->tpot}, {"itl_ms", m->itl}, {"e2e_ms", m->e2e}};
  guint n = 0;
#define INT(key, v) fields[n++] = (Field){key, (double) (v), TRUE}
#define NUM(key, v)                                                                                \
  fields[n++] = (Field) {                                                                          \
    key, (v), FALSE                                                                                \
  }
  INT("gpu", result->spec->gpu);
  INT("tp", result->spec->tp);
  INT("arrived", result->arrived);
  INT("completed", m->completed);
  INT("rejected", result->rejected);
  INT("rejected_max_model_len", result->rejected_too_long);
  INT("unfinished", result->unfinished);
  INT("timed_out", result->timed_out);
  NUM("throughput_tok_s", ema_tenant_metrics_throughput_tok_s(m));
  NUM("total_tok_s", ema_tenant_metrics_total_tok_s(m));
  NUM("req_per_s", ema_tenant_metrics_req_per_s(m));
  NUM("goodput_req_s", ema_tenant_metrics_goodput_req_s(m));
  NUM("slo_attainment", ema_tenant_metrics_slo_attainment(m, result->timed_out));
  INT("prompt_tokens", m->prompt_tokens);
  INT("output_tokens", m->output_tokens);
  for (guint l = 0; l < G_N_ELEMENTS(latencies); l++) {
    double values[N_LATENCY];
    latency_values(latencies[l].histogram, values);
    for (guint q = 0; q < N_LATENCY; q++)
      NUM(NULL, values[q]);
  }
  INT("preemptions", result->preemptions);
  INT("preemptions_swapped", result->preemptions_swapped);
  INT("prefix_query_tokens", result->prefix.query_tokens);
  INT("prefix_hit_tokens", result->prefix.hit_tokens);
  NUM("prefix_hit_rate", result->prefix.query_tokens ? (double) result->prefix.hit_tokens /
                                                           (double) result->prefix.query_tokens
                                                     : 0);
  INT("prefix_evictions", result->prefix.evictions);
  NUM("kv_util_mean", ema_tenant_metrics_kv_util_mean(m));
  NUM("kv_util_usable_mean", ema_tenant_metrics_kv_util_usable_mean(m));
  INT("kv_blocks", result->plan.blocks);
  INT("kv_bytes_per_gpu", result->plan.kv_bytes);
  INT("weight_bytes_per_gpu", result->plan.weight_bytes);
  INT("activation_reserve_per_gpu", result->plan.activation_reserve);
  INT("borrowed_peak_bytes", result->peak_slices_borrowed * EMA_SLICE_BYTES);
  INT("lent_peak_bytes", result->peak_slices_lent * EMA_SLICE_BYTES);
  INT("steps", m->steps);
  NUM("busy_s", (double) m->busy / 1e9);
  NUM("slowed_by_peers_s", (double) result->slowed_by_peers / 1e9);
  NUM("last_finish_s", m->last_finish >= 0 ? (double) m->last_finish / 1e9 : 0);
#undef INT
#undef NUM
  g_assert(n <= MAX_FIELDS);
  return n;
}

/* The latency block names, in tenant_fields' order, for its NULL names. */
static const char *const latency_blocks[] = {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"};

static void add_tenant(JsonBuilder *builder, const EmaTenantResult *result,
                       const EmaFidelity *fidelity) {
  Field fields[MAX_FIELDS];
  guint n = tenant_fields(result, fields);
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "name");
  json_builder_add_string_value(builder, result->spec->name);
  json_builder_set_member_name(builder, "model");
  json_builder_add_string_value(builder, result->spec->model.name);
  for (guint i = 0, block = 0; i < n; i++) {
    if (fields[i].name == NULL) { /* a latency block: N_LATENCY values */
      json_builder_set_member_name(builder, latency_blocks[block++]);
      json_builder_begin_object(builder);
      for (guint q = 0; q < N_LATENCY; q++)
        ema_json_add_number(builder, latency_names[q], fields[i + q].value);
      json_builder_end_object(builder);
      i += N_LATENCY - 1;
    } else if (fields[i].integer)
      ema_json_add_count(builder, fields[i].name, (guint64) fields[i].value);
    else
      ema_json_add_number(builder, fields[i].name, fields[i].value);
  }
  ema_fidelity_add_json(builder, fidelity);
  json_builder_end_object(builder);
}

/* DIR/tenants.csv: one row per tenant, the fields of summary.json's
 * tenants flattened (ttft_ms.p99 -> ttft_p99_ms); the tenant's own name is
 * `name` there as in summary.json (the CSVs of requests and samples name
 * theirs in a `tenant` column). Real numbers as summary.json's; the last
 * column the tenant's fidelity (fidelity.h). */
static gboolean write_tenants_csv(const char *dir, const EmaServingReport *report,
                                  EmaFidelity *const *fidelity, GError **error) {
  g_autoptr(GString) csv = g_string_new("name,model");
  for (guint t = 0; t < report->tenants->len; t++) {
    const EmaTenantResult *result = report->tenants->pdata[t];
    Field fields[MAX_FIELDS];
    guint n = tenant_fields(result, fields);
    for (guint i = 0, block = 0; t == 0 && i < n; i++) {
      if (fields[i].name == NULL) {
        g_autofree char *stem = g_strndup(latency_blocks[block], strlen(latency_blocks[block]) - 3);
        for (guint q = 0; q < N_LATENCY; q++)
          g_string_append_printf(csv, ",%s_%s_ms", stem, latency_names[q]);
        block++;
        i += N_LATENCY - 1;
      } else
        g_string_append_printf(csv, ",%s", fields[i].name);
    }
    if (t == 0)
      g_string_append(csv, ",fidelity\n");
    ema_file_csv_field(csv, result->spec->name);
    g_string_append_c(csv, ',');
    ema_file_csv_field(csv, result->spec->model.name);
    for (guint i = 0; i < n; i++) {
      char buffer[G_ASCII_DTOSTR_BUF_SIZE];
      if (fields[i].integer)
        g_string_append_printf(csv, ",%" G_GUINT64_FORMAT, (guint64) fields[i].value);
      else
        g_string_append_printf(
            csv, ",%s", g_ascii_formatd(buffer, sizeof buffer, RESULT_FORMAT, fields[i].value));
    }
    g_string_append_c(csv, ',');
    ema_file_csv_field(csv, fidelity[t]->status);
    g_string_append_c(csv, '\n');
  }
  return write_file(dir, "tenants.csv", csv->str, error);
}

static void add_pool(JsonBuilder *builder, const EmaExperiment *experiment,
                     const EmaPoolStats *pool) {
  json_builder_set_member_name(builder, "pool");
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "policy");
  json_builder_add_string_value(builder, experiment->policy.name);
  ema_json_add_count(builder, "borrows", pool->borrows);
  ema_json_add_count(builder, "slices_borrowed", pool->slices_borrowed);
  ema_json_add_count(builder, "returns", pool->returns);
  ema_json_add_count(builder, "slices_returned", pool->slices_returned);
  ema_json_add_count(builder, "reclaims", pool->reclaims);
  ema_json_add_count(builder, "slices_reclaimed", pool->slices_reclaimed);
  ema_json_add_count(builder, "blocks_migrated", pool->blocks_migrated);
  ema_json_add_count(builder, "blocks_to_host", pool->blocks_to_host);
  ema_json_add_count(builder, "blocks_dropped", pool->blocks_dropped);
  ema_json_add_number(builder, "reclaim_wait_mean_ms",
                      pool->reclaims ? (double) pool->reclaim_wait / (double) pool->reclaims / 1e6
                                     : 0);
  ema_json_add_number(builder, "reclaim_wait_max_ms", (double) pool->reclaim_wait_max / 1e6);
  ema_json_add_count(builder, "plans_adjusted", pool->plans_adjusted);
  ema_json_add_count(builder, "remote_steps", pool->remote_steps);
  ema_json_add_number(builder, "exposed_remote_s", (double) pool->exposed_remote / 1e9);
  /* (only where a step offloaded: the summaries of every other run keep their fields) */
  if (pool->offload_steps > 0) {
    ema_json_add_count(builder, "offload_steps", pool->offload_steps);
    ema_json_add_count(builder, "offload_throttled_steps", pool->offload_throttled_steps);
    ema_json_add_number(builder, "offload_throttled_s", (double) pool->offload_throttled / 1e9);
    ema_json_add_count(builder, "offload_read_steps", pool->offload_read_steps);
  }
  /* (likewise only where a policy placed) */
  if (pool->placements > 0) {
    ema_json_add_count(builder, "placements", pool->placements);
    ema_json_add_count(builder, "blocks_placed", pool->blocks_placed);
  }
  json_builder_end_object(builder);
}

gboolean ema_output_write_serving_summary(const char *dir, const EmaExperiment *experiment,
                                          const EmaServingReport *report, GError **error) {
  g_autoptr(JsonBuilder) builder = json_builder_new();
  g_autoptr(GPtrArray) fidelity =
      g_ptr_array_new_with_free_func((GDestroyNotify) ema_fidelity_free);
  EmaTime makespan = 0;
  for (guint i = 0; i < report->tenants->len; i++) {
    const EmaTenantResult *result = report->tenants->pdata[i];
    EmaFidelity *f = ema_fidelity_of(result->spec, &experiment->server, error);
    if (!f)
      return FALSE;
    g_ptr_array_add(fidelity, f);
  }
  if (!write_tenants_csv(dir, report, (EmaFidelity *const *) fidelity->pdata, error))
    return FALSE;
  begin_summary(builder, experiment);
  json_builder_set_member_name(builder, "tenants");
  json_builder_begin_array(builder);
  for (guint i = 0; i < report->tenants->len; i++)
    add_tenant(builder, report->tenants->pdata[i], fidelity->pdata[i]);
  json_builder_end_array(builder);
  /* the GPUs without a tenant, each with what it may lend and lent at most at one sample (the
   * key only where the server has one: the summaries of every other run keep their fields) */
  if (report->idle_gpus && report->idle_gpus->len > 0) {
    json_builder_set_member_name(builder, "idle_gpus");
    json_builder_begin_array(builder);
    for (guint i = 0; i < report->idle_gpus->len; i++) {
      const EmaIdleGpuResult *idle = &g_array_index(report->idle_gpus, EmaIdleGpuResult, i);
      json_builder_begin_object(builder);
      ema_json_add_count(builder, "gpu", idle->gpu);
      ema_json_add_count(builder, "lendable_bytes", idle->slices * EMA_SLICE_BYTES);
      ema_json_add_count(builder, "lent_peak_bytes", idle->peak_slices_lent * EMA_SLICE_BYTES);
      json_builder_end_object(builder);
    }
    json_builder_end_array(builder);
  }
  add_pool(builder, experiment, &report->pool);
  /* the makespan: the last request's completion (simulated_s runs on to
   * the last event, a timeline sample) */
  for (guint i = 0; i < report->tenants->len; i++)
    makespan =
        MAX(makespan, ((const EmaTenantResult *) report->tenants->pdata[i])->metrics->last_finish);
  ema_json_add_number(builder, "makespan_s", (double) makespan / 1e9);
  /* a CSV file cut at its row cap says so here (the keys only where one was) */
  if (report->timeline_capped_at >= 0)
    ema_json_add_number(builder, "timeline_csv_capped_at_s",
                        (double) report->timeline_capped_at / 1e9);
  if (report->events_capped_at >= 0)
    ema_json_add_number(builder, "events_csv_capped_at_s", (double) report->events_capped_at / 1e9);
  if (report->steps_capped_at >= 0)
    ema_json_add_number(builder, "steps_csv_capped_at_s", (double) report->steps_capped_at / 1e9);
  return end_summary(builder, report->events, report->simulated, report->wall_s, dir, error);
}

/* The most tenant names a fidelity line lists whole: past it (a rack of 72 tenants of one
 * status), the first FIDELITY_NAMES_SHOWN - 1, "...", the last and the count; summary.json and
 * tenants.csv give every tenant's status. */
#define FIDELITY_NAMES_SHOWN 6

/* NAMES (char *) as a fidelity line lists them (FIDELITY_NAMES_SHOWN). */
static char *fidelity_names(GPtrArray *names) {
  GString *text = g_string_new(NULL);
  gboolean cut = names->len > FIDELITY_NAMES_SHOWN;
  guint shown = cut ? FIDELITY_NAMES_SHOWN - 1 : names->len;
  for (guint i = 0; i < shown; i++)
    g_string_append_printf(text, "%s%s", i ? ", " : "", (const char *) names->pdata[i]);
  if (cut)
    g_string_append_printf(text, ", ..., %s (%u tenants)",
                           (const char *) names->pdata[names->len - 1], names->len);
  return g_string_free(text, FALSE);
}

/* The tenants' fidelity statuses, tenants of one status on one line. */
static void print_fidelity(FILE *out, const EmaExperiment *experiment,
                           const EmaServingReport *report) {
  g_autoptr(GPtrArray) statuses = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func((GDestroyNotify) g_ptr_array_unref);
  for (guint i = 0; i < report->tenants->len; i++) {
    const EmaTenantResult *r = report->tenants->pdata[i];
    g_autoptr(GError) error = NULL;
    g_autoptr(EmaFidelity) f = ema_fidelity_of(r->spec, &experiment->server, &error);
    g_autofree char *status = f ? g_strdup(f->status) : g_strdup(error->message);
    guint at = 0;
    while (at < statuses->len && strcmp(statuses->pdata[at], status) != 0)
      at++;
    if (at == statuses->len) {
      g_ptr_array_add(statuses, g_steal_pointer(&status));
      g_ptr_array_add(names, g_ptr_array_new());
    }
    g_ptr_array_add(names->pdata[at], r->spec->name);
  }
  for (guint i = 0; i < statuses->len; i++) {
    g_autofree char *listed = fidelity_names(names->pdata[i]);
    fprintf(out, "fidelity %s: %s\n", listed, (const char *) statuses->pdata[i]);
  }
}

/* The simulated figure of R that vLLM's metric NAME (ema_trace_vllm_metric_names) measures. */
static double simulated_vllm_metric(const EmaTenantResult *r, const char *name) {
  const EmaTenantMetrics *m = r->metrics;
  const EmaHistogram *h = NULL;
  if (strcmp(name, "completed") == 0)
    return (double) m->completed;
  if (strcmp(name, "request_throughput") == 0)
    return ema_tenant_metrics_req_per_s(m);
  if (strcmp(name, "output_throughput") == 0)
    return ema_tenant_metrics_throughput_tok_s(m);
  h = strstr(name, "_ttft_")   ? m->ttft
      : strstr(name, "_tpot_") ? m->tpot
      : strstr(name, "_itl_")  ? m->itl
                               : m->e2e;
  if (g_str_has_prefix(name, "mean_"))
    return ema_histogram_mean(h) / 1e6;
  return ema_histogram_quantile(h, g_str_has_prefix(name, "median_") ? 0.5 : 0.99) / 1e6;
}

/* Whether TRACE replays the load of the vLLM benchmark BENCH as it ran (the load the reader takes
 * from the file where the trace gives none: tenant.c's vllm_load), every request of it. */
static gboolean vllm_bench_load(const EmaTraceSpec *trace, const EmaTraceVllmBench *bench) {
  gboolean arrivals = isfinite(bench->request_rate)
                          ? trace->arrivals == EMA_ARRIVALS_GAMMA &&
                                trace->rate == bench->request_rate &&
                                fabs(trace->cv - 1 / sqrt(bench->burstiness)) < 1e-12
                          : trace->arrivals == EMA_ARRIVALS_FILE;
  return arrivals && trace->concurrency == (gint64) bench->max_concurrency &&
         trace->rate_scale == 1 && trace->split == 0 && trace->requests == 0 &&
         trace->offset == 0 && trace->duration == 0 && trace->start == 0 && !trace->cycle;
}

/* A tenant replaying a vLLM benchmark result: the figures vLLM measured
 * beside the simulated ones (those the file has), with their errors where the
 * trace replays the benchmark's load (another load's figures are no error of
 * the simulation's). */
static void print_vllm_measured(FILE *out, const EmaTenantResult *r) {
  EmaTraceVllmBench bench;
  g_autoptr(GError) error = NULL;
  gboolean same_load;
  if (r->spec->trace.format != EMA_TRACE_FORMAT_VLLM_BENCH)
    return;
  if (!ema_trace_vllm_bench_read(r->spec->trace.file, &bench, &error)) {
    fprintf(out, "%s: vLLM's measured figures not read: %s\n", r->spec->name, error->message);
    return;
  }
  same_load = vllm_bench_load(&r->spec->trace, &bench);
  fprintf(out, "%s: vLLM benchmark %s (request_rate %g, burstiness %g, max_concurrency ",
          r->spec->name, r->spec->trace.file, bench.request_rate, bench.burstiness);
  if (bench.max_concurrency)
    fprintf(out, "%" G_GUINT64_FORMAT ")\n", bench.max_concurrency);
  else
    fprintf(out, "none)\n");
  if (!same_load)
    fprintf(out, "  (the trace changes the benchmark's load or its requests: vLLM's figures are "
                 "of another run, shown without errors)\n");
  fprintf(out, "  %-20s %12s %12s %8s\n", "metric", "vLLM", "simulated", "error");
  for (guint k = 0; k < EMA_TRACE_VLLM_N_METRICS; k++) {
    double measured = bench.measured[k];
    double simulated = simulated_vllm_metric(r, ema_trace_vllm_metric_names[k]);
    if (isnan(measured))
      continue;
    fprintf(out, "  %-20s %12.2f %12.2f", ema_trace_vllm_metric_names[k], measured, simulated);
    if (!same_load)
      fprintf(out, "\n");
    else if (measured != 0)
      fprintf(out, " %+7.1f%%\n", 100 * (simulated - measured) / measured);
    else
      fprintf(out, " %8s\n", "-");
  }
}

void ema_output_print_serving(FILE *out, const EmaExperiment *experiment,
                              const EmaServingReport *report) {
  guint width = 6;
  for (guint i = 0; i < report->tenants->len; i++) {
    const EmaTenantResult *r = report->tenants->pdata[i];
    width = MAX(width, (guint) strlen(r->spec->name));
  }
  fprintf(out, "%-*s %5s %-15s %8s %6s %9s %19s %17s %9s %7s %6s\n", (int) width, "tenant", "gpus",
          "model", "done", "left", "tok/s", "TTFT p50/p99 ms", "TPOT p50/p99 ms", "E2E p99 s",
          "preempt", "KV use");
  for (guint i = 0; i < report->tenants->len; i++) {
    const EmaTenantResult *r = report->tenants->pdata[i];
    const EmaTenantMetrics *m = r->metrics;
    g_autofree char *gpus = r->spec->tp == 1
                                ? g_strdup_printf("%" G_GINT64_FORMAT, r->spec->gpu)
                                : g_strdup_printf("%" G_GINT64_FORMAT "-%" G_GINT64_FORMAT,
                                                  r->spec->gpu, r->spec->gpu + r->spec->tp - 1);
    g_autofree char *ttft = g_strdup_printf("%.1f/%.1f", ema_histogram_quantile(m->ttft, 0.5) / 1e6,
                                            ema_histogram_quantile(m->ttft, 0.99) / 1e6);
    g_autofree char *tpot = g_strdup_printf("%.2f/%.2f", ema_histogram_quantile(m->tpot, 0.5) / 1e6,
                                            ema_histogram_quantile(m->tpot, 0.99) / 1e6);
    fprintf(out,
            "%-*s %5s %-15s %8" G_GUINT64_FORMAT " %6" G_GUINT64_FORMAT " %9.0f %19s %17s %9.2f "
            "%7" G_GUINT64_FORMAT " %5.1f%%\n",
            (int) width, r->spec->name, gpus, r->spec->model.name, m->completed,
            r->unfinished + r->rejected + r->timed_out, ema_tenant_metrics_throughput_tok_s(m),
            ttft, tpot, ema_histogram_quantile(m->e2e, 0.99) / 1e9, r->preemptions,
            100 * ema_tenant_metrics_kv_util_mean(m));
  }
  print_fidelity(out, experiment, report);
  fprintf(out, "simulated %.1f s in %.2f s (%" G_GUINT64_FORMAT " events)\n",
          (double) report->simulated / 1e9, report->wall_s, report->events);
  for (guint i = 0; i < report->tenants->len; i++)
    print_vllm_measured(out, report->tenants->pdata[i]);
}

/* A tenant that left more than this share of its requests unfinished,
 * rejected or timed out ran past its capacity (or its run ended in a burst,
 * or its clients' timeout is shorter than its requests take): its
 * latencies, of completed requests only, understate it. (A run cut by its
 * duration leaves the requests in flight then: a tenth of a short run's,
 * which is no overload.) */
#define LEFT_WARN_PERCENT 25
#define LEFT_WARN_SHARE (LEFT_WARN_PERCENT / 100.0)

/* A tenant that, at one sample, borrowed more than this many times the
 * remote room its prefetch plan admitted or its blocks used (and at least
 * IDLE_BORROW_MIN_SLICES, 1 GiB) held borrowed slices it could not use: the borrow policy outruns
 * the plan's remote limit, and the lenders lost the room for nothing. */
#define IDLE_BORROW_FACTOR 10
#define IDLE_BORROW_MIN_SLICES 512

/* The warnings a run gives per tenant, in the order they are printed. */
typedef enum {
  WARN_IDLE_BORROW,    /* borrowed far more than its prefetch plan admitted */
  WARN_OUTPUTS_RAISED, /* requests asking for 0 output tokens */
  WARN_TRACE_SKIPPED,  /* failed requests its trace's reader left out */
  WARN_NO_ARRIVAL,     /* no request arrived */
  WARN_ALL_REJECTED,   /* every request rejected */
  WARN_LEFT,           /* more than LEFT_WARN_SHARE of its requests left */
  N_TENANT_WARNINGS,
} TenantWarning;

static guint64 tenant_left(const EmaTenantResult *r) {
  return r->unfinished + r->rejected + r->timed_out;
}

/* Whether R has warning KIND. */
static gboolean tenant_warns(const EmaTenantResult *r, TenantWarning kind) {
  switch (kind) {
  case WARN_IDLE_BORROW:
    return r->idle_borrowed_slices >= IDLE_BORROW_MIN_SLICES &&
           r->idle_borrowed_slices > IDLE_BORROW_FACTOR * r->idle_admitted_slices;
  case WARN_OUTPUTS_RAISED:
    return r->outputs_raised > 0;
  case WARN_TRACE_SKIPPED:
    return r->trace_skipped > 0;
  case WARN_NO_ARRIVAL:
    return r->arrived == 0;
  case WARN_ALL_REJECTED:
    return r->arrived > 0 && r->rejected == r->arrived;
  case WARN_LEFT:
    return r->arrived > 0 && r->rejected < r->arrived &&
           (double) tenant_left(r) > LEFT_WARN_SHARE * (double) r->arrived;
  default:
    g_assert_not_reached();
  }
}

/* R's figures for warning KIND (tenant_warns() TRUE): what a line of R's alone says after
 * "tenant NAME: ", and, SHARED, what follows R's name on a line shared with other tenants. */
static char *tenant_warning(const EmaTenantResult *r, TenantWarning kind, gboolean shared) {
  switch (kind) {
  case WARN_IDLE_BORROW: {
    g_autofree char *borrowed =
        ema_units_format_size_human(r->idle_borrowed_slices * EMA_SLICE_BYTES);
    g_autofree char *admitted =
        ema_units_format_size_human(r->idle_admitted_slices * EMA_SLICE_BYTES);
    /* (none admitted: no ratio, all of it idle) */
    g_autofree char *times = r->idle_admitted_slices > 0
                                 ? g_strdup_printf("%.3gx", (double) r->idle_borrowed_slices /
                                                                (double) r->idle_admitted_slices)
                                 : NULL;
    if (shared)
      return g_strdup_printf("%s against %s (%s)", borrowed, admitted, times ? times : "none used");
    return g_strdup_printf("borrowed %s while its prefetch plan admitted (or its blocks used) %s "
                           "of KV on peers: its borrow policy takes %s%s; %s, out of its lenders' "
                           "reach (policy.borrow vs policy.prefetch; most-idle's within_limit "
                           "holds borrowing to the limit)",
                           borrowed, admitted, times ? times : "room",
                           times ? " what the plan's remote limit lets it use"
                                 : " the plan's remote limit lets it use none of",
                           times ? "the rest sat idle" : "it sat idle");
  }
  case WARN_OUTPUTS_RAISED:
    if (shared)
      return g_strdup_printf("%" G_GUINT64_FORMAT, r->outputs_raised);
    return g_strdup_printf("%" G_GUINT64_FORMAT " request%s of its trace ask%s for 0 output "
                           "tokens: each ran with 1, as vLLM generates at least one",
                           r->outputs_raised, r->outputs_raised == 1 ? "" : "s",
                           r->outputs_raised == 1 ? "s" : "");
  case WARN_TRACE_SKIPPED:
    if (shared)
      return g_strdup_printf("%" G_GUINT64_FORMAT, r->trace_skipped);
    return g_strdup_printf("%" G_GUINT64_FORMAT " failed request%s of its trace (0 response "
                           "tokens) left out (trace.keep_failed: true replays them)",
                           r->trace_skipped, r->trace_skipped == 1 ? "" : "s");
  case WARN_NO_ARRIVAL:
    return shared ? g_strdup("")
                  : g_strdup(r->trace_skipped > 0
                                 ? "no request arrived but failed ones left out (its trace holds "
                                   "no other, or none before the run's end): its row is empty"
                                 : "no request arrived (its trace holds none, or none before the "
                                   "run's end): its row is empty");
  case WARN_ALL_REJECTED: {
    /* why, from the counts: over max_model_len, over the KV cache, or both */
    guint64 too_long = r->rejected_too_long, too_big = r->rejected - r->rejected_too_long;
    g_autofree char *why =
        too_big == 0 ? g_strdup("prompt + output longer than the engine's max_model_len")
        : too_long == 0
            ? g_strdup("prompt + output larger than its KV cache")
            : g_strdup_printf("%" G_GUINT64_FORMAT " longer than max_model_len, %" G_GUINT64_FORMAT
                              " larger than its KV cache",
                              too_long, too_big);
    return g_strdup_printf("%s%" G_GUINT64_FORMAT "%s (%s)", shared ? "" : "all ", r->arrived,
                           shared ? "" : " requests were rejected", why);
  }
  case WARN_LEFT: {
    g_autofree char *counts = g_strdup_printf(
        "%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT "%s (%" G_GUINT64_FORMAT
        " unfinished at the end, %" G_GUINT64_FORMAT " rejected, %" G_GUINT64_FORMAT " timed out)",
        tenant_left(r), r->arrived, shared ? "" : " requests left", r->unfinished, r->rejected,
        r->timed_out);
    if (shared)
      return g_steal_pointer(&counts);
    return g_strdup_printf(
        "%s: past its capacity%s, its latencies are of the %" G_GUINT64_FORMAT
        " completed request%s only and understate it (compare completed too)",
        counts,
        r->timed_out > 0 ? ", cut by the run's end or its clients' trace.timeout shorter than its "
                           "requests take"
                         : " or cut by the run's end",
        r->metrics->completed, r->metrics->completed == 1 ? "" : "s");
  }
  default:
    g_assert_not_reached();
  }
}

/* Warning KIND of REPORT's tenants to ERR, each line after the prefix W: a line per tenant
 * where at most EMA_WARN_ALIKE_APART have it, else one line naming each with its figures. */
static void warn_tenants(FILE *err, const char *w, const EmaServingReport *report,
                         TenantWarning kind) {
  static const char *const shared_head[] = {
      [WARN_IDLE_BORROW] = "tenants borrowed more than " G_STRINGIFY(
          IDLE_BORROW_FACTOR) "x the KV on peers that their prefetch plans admitted (or their "
                              "blocks used): ",
      [WARN_OUTPUTS_RAISED] = "tenants' traces hold requests asking for 0 output tokens: ",
      [WARN_TRACE_SKIPPED] = "tenants' traces hold failed requests (0 response tokens), left "
                             "out: ",
      [WARN_NO_ARRIVAL] = "tenants saw no request arrive: ",
      [WARN_ALL_REJECTED] = "tenants had every request rejected: ",
      [WARN_LEFT] =
          "tenants left more than " G_STRINGIFY(LEFT_WARN_PERCENT) "% of their requests: ",
  };
  static const char *const shared_tail[] = {
      [WARN_IDLE_BORROW] = "; the rest sat idle, out of the lenders' reach (policy.borrow vs "
                           "policy.prefetch; most-idle's within_limit holds borrowing to the "
                           "limit)",
      [WARN_OUTPUTS_RAISED] = " requests; each ran with 1, as vLLM generates at least one",
      [WARN_TRACE_SKIPPED] = " requests (trace.keep_failed: true replays them)",
      [WARN_NO_ARRIVAL] = " (their traces hold none, or none before the run's end): their rows "
                          "are empty",
      [WARN_ALL_REJECTED] = "",
      [WARN_LEFT] = "; past their capacity or cut by the run's end (or by their clients' "
                    "trace.timeout, where they timed requests out), their latencies are of "
                    "their completed requests only and understate them (compare completed too)",
  };
  g_autoptr(GString) line = g_string_new(NULL);
  guint count = 0;
  for (guint i = 0; i < report->tenants->len; i++)
    count += tenant_warns(report->tenants->pdata[i], kind);
  for (guint i = 0; i < report->tenants->len; i++) {
    const EmaTenantResult *r = report->tenants->pdata[i];
    g_autofree char *text = NULL;
    if (!tenant_warns(r, kind))
      continue;
    text = tenant_warning(r, kind, count > EMA_WARN_ALIKE_APART);
    if (count <= EMA_WARN_ALIKE_APART) {
      fprintf(err, "%stenant %s: %s\n", w, r->spec->name, text);
      continue;
    }
    g_string_append_printf(line, "%s%s%s%s", line->len > 0 ? ", " : "", r->spec->name,
                           *text ? " " : "", text);
  }
  if (count > EMA_WARN_ALIKE_APART)
    fprintf(err, "%s%u %s%s%s\n", w, count, shared_head[kind], line->str, shared_tail[kind]);
}

void ema_output_warn_before(FILE *err, const char *variant, const EmaExperiment *experiment) {
  g_autoptr(GPtrArray) warnings = ema_experiment_warnings(experiment);
  g_autofree char *timeline =
      ema_experiment_is_serving(experiment) ? ema_serving_timeline_warning(experiment) : NULL;
  if (timeline)
    g_ptr_array_add(warnings, g_steal_pointer(&timeline));
  for (guint i = 0; i < warnings->len; i++)
    fprintf(err, EMA_OUTPUT_WARNING "%s%s%s\n", variant ? variant : "", variant ? ": " : "",
            (const char *) warnings->pdata[i]);
}

void ema_output_warn_serving(FILE *err, const char *variant, const EmaExperiment *experiment,
                             const EmaServingReport *report) {
  /* each line says whose run it is about under compare: (VARIANT) */
  g_autofree char *w =
      variant ? g_strdup_printf(EMA_OUTPUT_WARNING "%s: ", variant) : g_strdup(EMA_OUTPUT_WARNING);
  if (report->timeline_capped_at >= 0)
    fprintf(err,
            "%stimeline.csv stopped at %" G_GUINT64_FORMAT
            " rows (timeline_max_rows %" G_GUINT64_FORMAT
            ": whole samples only), at %.6g s (raise sample_period for all of the run)\n",
            w, report->timeline_rows, (guint64) experiment->timeline_rows,
            (double) report->timeline_capped_at / 1e9);
  if (report->events_capped_at >= 0)
    fprintf(err,
            "%sevents.csv stopped at %" G_GUINT64_FORMAT
            " rows, at %.6g s (raise events_max_rows, or keep fewer kinds: events, events_tier)\n",
            w, (guint64) experiment->events_rows, (double) report->events_capped_at / 1e9);
  if (report->steps_capped_at >= 0)
    fprintf(err,
            "%ssteps.csv stopped at %" G_GUINT64_FORMAT " rows, at %.6g s (raise steps_max_rows)\n",
            w, (guint64) experiment->steps_rows, (double) report->steps_capped_at / 1e9);
  for (guint kind = 0; kind < N_TENANT_WARNINGS; kind++)
    warn_tenants(err, w, report, kind);
}

static char *format_seconds(double seconds) {
  if (seconds >= 1)
    return g_strdup_printf("%.4f s", seconds);
  if (seconds >= 1e-3)
    return g_strdup_printf("%.4f ms", seconds * 1e3);
  return g_strdup_printf("%.3f us", seconds * 1e6);
}

void ema_output_print_ops(FILE *out, const EmaOpsReport *report) {
  guint width = 2;
  gboolean any_expect = FALSE;
  for (guint i = 0; i < report->ops->len; i++) {
    const EmaOpResult *r = &g_array_index(report->ops, EmaOpResult, i);
    width = MAX(width, (guint) strlen(r->name));
    any_expect |= r->has_expect;
  }
  fprintf(out, "%-*s %13s %10s", (int) width, "op", "time", "GB/s");
  if (any_expect)
    fprintf(out, " %13s %8s", "expected", "error");
  fputc('\n', out);
  for (guint i = 0; i < report->ops->len; i++) {
    const EmaOpResult *r = &g_array_index(report->ops, EmaOpResult, i);
    g_autofree char *time = format_seconds((double) r->seconds_ns / 1e9);
    g_autofree char *expected = NULL;
    fprintf(out, "%-*s %13s %10.2f", (int) width, r->name, time, r->bandwidth / 1e9);
    if (!r->has_expect) {
      fputc('\n', out);
      continue;
    }
    expected = r->expect_is_time ? format_seconds(r->expected)
                                 : g_strdup_printf("%.2f GB/s", r->expected / 1e9);
    fprintf(out, " %13s %+7.2f%%%s\n", expected, r->error * 100, r->pass ? "" : "  MISSED");
  }
}
