/* sweep.c: sweep files (variants, swept paths, repeats) and the runner that
 * runs their points as separate ema-sim processes (sweep.h has the file
 * format and the rules).
 *
 * Invariants: the points and their names depend only on the sweep file;
 * every point is loaded and checked (ema_sweep_resolve), and the plot
 * settings against them, before any runs; a
 * point directory's summary.json is removed before the point runs, so a
 * summary.json next to a resolved.yaml always belongs to it; sweep.csv is
 * written from the records in point order and from nothing else (no
 * times, no completion order); a summary.json counts as a finished point
 * only when it has the shape ema-sim run writes (a "sim" object and a list
 * of tenant or op objects), every file its provenance hashed (binary,
 * plugins, every input the run read) still has that hash and the search
 * paths that decide which file a name finds (its run.env: search_variables
 * and --plugin-dir, each folder absolute) are the sweep's now;
 * the points' folders are named by absolute paths, so that what a run
 * records does not depend on the working directory; sweep.csv, plot.yaml
 * and plots/ are removed before any point runs (again), so that they never
 * describe other results than the points beside them; a point
 * counts as ok only when its process exited (a death by a signal is a
 * failure, and its summary.json goes); each point runs in its own process
 * group, killed with its point on a timeout, and dies with the sweep
 * (PR_SET_PDEATHSIG: a sweep killed by SIGKILL leaves no point running to
 * write into a folder a resumed sweep owns); SIGINT, SIGTERM and SIGHUP are
 * forwarded to the running points' groups, which are waited for before the
 * sweep dies of the same signal. The sweep's folder and each point's are
 * claimed (output.h), the sweep's as a sweep's (a run's or frontier's
 * folder is refused): a point's lock passes to the run that writes it; the
 * processes that share a sweep's folder (--part, MPI ranks) hold a shared
 * lock on it, which excludes a sweep without --part there, and run one
 * sweep (SHARERS_FILE: its points and shares). A summary.json counts only
 * where its provenance lists a file with the hash of the point's
 * resolved.yaml (not one copied from another point). A resolved sweep keeps a digest of each
 * point's resolved.yaml, not the text, which is made again when the point starts; the points' names
 * must fit the folder's marker (names_fit). */
#include "ema/cli/sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <math.h>

#include <glib-unix.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "ema/cli/plot.h"
#include "ema/core/file.h"
#include "ema/run/json.h"
#include "ema/run/output.h"
#include "ema/traces/trace.h"

#define MAX_POINTS 1000000
#define MAX_REPEATS 100000
#define NAME_VALUE_MAX 24
/* A point's name is its folder's: one path component (NAME_MAX), past which no point could
 * start; its number keeps a name cut there unique. */
#define POINT_NAME_MAX 255
#define PROGRESS_INTERVAL_MS 500
/* A point's record of where its run found files by name (run_env_text). */
#define RUN_ENV "run.env"

void ema_sweep_describe_keys(GString *out) {
  g_string_append(
      out,
      "\nSweep and comparison keys (the keys of ema-sim sweep files, and compare for ema-sim "
      "run):\n"
      "compare                  map       optional (ema-sim run only; with repeats)\n"
      "    named variants run one after another and set side by side: NAME: {dot.path: value, "
      "...}\n"
      "    or a partial tree merged over the experiment (the syntax of variants); DIR/NAME/ per\n"
      "    variant, compare.csv, the borrower/lender table\n"
      "variants                 map       optional (ema-sim sweep)\n"
      "    named changes merged over the base experiment, as compare; the outermost loop\n"
      "sweep                    map       optional (ema-sim sweep)\n"
      "    dot.path: [values], ...: the cartesian product in file order (the first path varies\n"
      "    slowest), each value applied like --set\n"
      "repeats                  int       default 1, range [1, 100000] (sweep, compare)\n"
      "    runs of each point: repeat 0 keeps the seed, repeat r the seed derived from (seed,\n"
      "    \"repeat r\"), the same in every variant (common random numbers)\n"
      "plot                     map       optional (ema-sim sweep, ema-sim plot)\n"
      "    the sweep's figures; each key as ema-sim plot's option of that name\n"
      "  x                        string    default: the first swept path\n"
      "      the swept path (or sweep.csv column) on the x axis\n"
      "  by                       string    default: variant, or a policy path; none: one line\n"
      "      the sweep.csv column whose values make the lines\n"
      "  tenant                   string    default: the only tenant, or all\n"
      "      whose throughput and latency are drawn\n"
      "  title                    string    default: the experiment's name\n"
      "      the figures' title\n"
      "  xlabel                   string    default: the x path\n"
      "      the x axis' label\n");
}

/* The SHA-256 of a point's resolved.yaml, what a sweep keeps of it (the text, some 9 KB a
 * point, is made again when the point starts): 10^6 points held 10 GB in every process of a
 * sweep (each --part, each MPI rank). */
typedef struct {
  guint8 bytes[32];
} Digest;

typedef struct {
  char *path;            /* "tenants.0.trace.rate" */
  char *canonical;       /* the path as canonical_path() spells it */
  const EmaNode *key;    /* the path's key in the sweep file */
  const EmaNode *values; /* its list of values */
} Axis;

typedef struct {
  gint variant; /* index into the variants map; -1 without variants */
  guint *value; /* per axis: index into its values */
  guint repeat;
  char *name;
} Point;

struct _EmaSweep {
  char *path;
  EmaNode *root;           /* the file as loaded */
  EmaNode *base;           /* without the sweep keys, overrides applied, names expanded */
  const EmaNode *variants; /* inside root; NULL without variants */
  GPtrArray *axes;         /* Axis * */
  guint repeats;
  const EmaNode *plot; /* inside root; NULL without plot settings */
  GArray *points;      /* Point */
  char *name;
  gboolean compare; /* an experiment's compare: variants, not a sweep file */
  GArray *digests;  /* Digest: each point's resolved.yaml's, after ema_sweep_resolve */
  GArray *seeds;    /* gint64 per point, after ema_sweep_resolve */
};

static void axis_free(Axis *axis) {
  g_free(axis->path);
  g_free(axis->canonical);
  g_free(axis);
}

static void point_clear(Point *point) {
  g_free(point->value);
  g_free(point->name);
}

void ema_sweep_free(EmaSweep *sweep) {
  if (sweep == NULL)
    return;
  g_free(sweep->path);
  ema_node_free(sweep->root);
  ema_node_free(sweep->base);
  g_ptr_array_unref(sweep->axes);
  g_array_unref(sweep->points);
  g_free(sweep->name);
  if (sweep->digests)
    g_array_unref(sweep->digests);
  if (sweep->seeds)
    g_array_unref(sweep->seeds);
  g_free(sweep);
}

/* ---- node helpers ---------------------------------------------------------- */

/* Take KEY and its value out of MAP (if there). */
static void map_remove(EmaNode *map, const char *key) {
  for (guint i = 0; i < map->keys->len; i++)
    if (g_strcmp0(((EmaNode *) map->keys->pdata[i])->value, key) == 0) {
      g_ptr_array_remove_index(map->keys, i);
      g_ptr_array_remove_index(map->items, i);
      return;
    }
}

/* NODE as one line of flow YAML, for names, descriptions and sweep.csv: a scalar with a control
 * character (a newline) double-quoted with escapes, so that --list keeps a line per point and
 * sweep.csv a line per row (a quoted field over two lines is one ema-sim plot refuses). */
static void append_flow(GString *out, const EmaNode *node) {
  if (node->kind == EMA_NODE_SCALAR) {
    const char *value = node->value ? node->value : "~";
    if (ema_file_control_char(value))
      ema_params_append_quoted(out, value);
    else
      g_string_append(out, value);
    return;
  }
  g_string_append_c(out, node->kind == EMA_NODE_MAP ? '{' : '[');
  for (guint i = 0; i < node->items->len; i++) {
    if (i)
      g_string_append(out, ", ");
    if (node->keys) {
      append_flow(out, node->keys->pdata[i]);
      g_string_append(out, ": ");
    }
    append_flow(out, node->items->pdata[i]);
  }
  g_string_append_c(out, node->kind == EMA_NODE_MAP ? '}' : ']');
}

static char *flow_text(const EmaNode *node) {
  GString *out = g_string_new(NULL);
  append_flow(out, node);
  return g_string_free(out, FALSE);
}

static gboolean parse_index(const char *text, guint *index) {
  guint64 value;
  if (!g_ascii_string_to_unsigned(text, 10, 0, G_MAXUINT, &value, NULL))
    return FALSE;
  *index = (guint) value;
  return TRUE;
}

/* PATH with its list indices written plainly ("tenants.00.trace" is "tenants.0.trace", as
 * set_path reads both), so that two spellings of one place compare equal. */
static char *canonical_path(const char *path) {
  g_auto(GStrv) parts = g_strsplit(path, ".", -1);
  guint index;
  for (guint i = 0; parts[i]; i++)
    if (parse_index(parts[i], &index)) {
      g_free(parts[i]);
      parts[i] = g_strdup_printf("%u", index);
    }
  return g_strjoinv(".", parts);
}

static gboolean set_path(EmaNode *root, const char *path, const EmaNode *where, EmaNode *value,
                         gboolean merge, GError **error);

/* Merge the map FROM into the map INTO, key by key (each key a path). */
static gboolean merge_map(EmaNode *into, const EmaNode *from, GError **error) {
  for (guint k = 0; k < from->keys->len; k++) {
    const EmaNode *key = from->keys->pdata[k];
    if (!set_path(into, key->value, key, ema_node_copy(from->items->pdata[k]), TRUE, error))
      return FALSE;
  }
  return TRUE;
}

/* Put VALUE (taken) at the dot-path PATH under ROOT, like --set: missing
 * map keys are added, list indices must exist. With MERGE, a map given
 * where a map is merges into it key by key (each key again a path). Errors
 * point at WHERE (the path's key in the sweep file), and so do new keys. */
static gboolean set_path(EmaNode *root, const char *path, const EmaNode *where, EmaNode *value,
                         gboolean merge, GError **error) {
  g_autoptr(EmaNode) owned = value;
  g_auto(GStrv) parts = g_strsplit(path, ".", -1);
  EmaNode *node = root;
  /* an empty path splits into no parts at all: it would set nothing, silently */
  if (parts[0] == NULL) {
    ema_node_error(error, EMA_CONFIG_ERROR_SYNTAX, where, path, "empty key in path");
    return FALSE;
  }
  for (guint i = 0; parts[i]; i++) {
    const char *part = parts[i];
    gboolean last = parts[i + 1] == NULL;
    EmaNode *child = NULL;
    guint index = 0;
    if (part[0] == '\0') {
      ema_node_error(error, EMA_CONFIG_ERROR_SYNTAX, where, path, "empty key in path");
      return FALSE;
    }
    if (node->kind == EMA_NODE_MAP) {
      child = ema_node_get(node, part);
      if (child == NULL || (child->kind == EMA_NODE_SCALAR && child->value == NULL && !last)) {
        /* a new key (or a null one on the way): a map, or the value at the end */
        EmaNode *fresh =
            last ? g_steal_pointer(&owned) : ema_node_new_map(where->file, where->line, where->col);
        if (child == NULL) {
          g_ptr_array_add(node->keys,
                          ema_node_new_scalar(part, where->file, where->line, where->col));
          g_ptr_array_add(node->items, fresh);
        } else
          ema_node_set(node, part, fresh);
        if (last)
          return TRUE;
        node = fresh;
        continue;
      }
      if (last) {
        if (merge && child->kind == EMA_NODE_MAP && owned->kind == EMA_NODE_MAP)
          return merge_map(child, owned, error);
        ema_node_set(node, part, g_steal_pointer(&owned));
        return TRUE;
      }
    } else if (node->kind == EMA_NODE_SEQ) {
      if (!parse_index(part, &index) || index >= node->items->len) {
        ema_node_error(error, EMA_CONFIG_ERROR_KEY, where, path,
                       "'%s' is not an index of this list (it has %u items)", part,
                       node->items->len);
        return FALSE;
      }
      child = node->items->pdata[index];
      if (last) {
        if (merge && child->kind == EMA_NODE_MAP && owned->kind == EMA_NODE_MAP)
          return merge_map(child, owned, error);
        ema_node_free(child);
        node->items->pdata[index] = g_steal_pointer(&owned);
        return TRUE;
      }
    }
    if (child->kind == EMA_NODE_SCALAR) {
      g_autofree char *quoted = ema_file_quote_cut(child->value ? child->value : "~", -1);
      ema_node_error(error, EMA_CONFIG_ERROR_TYPE, where, path,
                     "'%s' holds the plain value '%s', not a map or list", part, quoted);
      return FALSE;
    }
    node = child;
  }
  return TRUE;
}

/* ---- loading --------------------------------------------------------------- */

/* The variants under KEY ("variants", or "compare" for ema-sim run). */
static gboolean load_variants(EmaSweep *sweep, const char *key_name, GError **error) {
  const EmaNode *variants = ema_node_get(sweep->root, key_name);
  if (variants == NULL)
    return TRUE;
  if (variants->kind != EMA_NODE_MAP || variants->items->len == 0) {
    ema_node_error(error, EMA_CONFIG_ERROR_TYPE, variants, key_name,
                   "give a map of named variants, e.g. {static: {}, ema: {policy: ema}}");
    return FALSE;
  }
  for (guint i = 0; i < variants->items->len; i++) {
    const EmaNode *key = variants->keys->pdata[i];
    const EmaNode *variant = variants->items->pdata[i];
    const char *c;
    g_autofree char *path = g_strconcat(key_name, ".", key->value, NULL);
    if (key->value == NULL || key->value[0] == '\0') {
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, key, key_name, "a variant needs a name");
      return FALSE;
    }
    /* its name is a column's value and part of column names (sweep.csv, compare.csv) and a
     * figure's label: a newline made sweep.csv a file ema-sim plot refuses, and --list's
     * lines more than one per point (as a tenant's name, experiment.c) */
    if ((c = ema_file_control_char(key->value)) != NULL) {
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, key, key_name,
                     "a variant's name holds no control character (0x%02x at byte %u)", (guchar) *c,
                     (guint) (c - key->value));
      return FALSE;
    }
    if (variant->kind == EMA_NODE_SCALAR && variant->value == NULL)
      continue; /* `name:` or `name: ~`: the base itself */
    if (variant->kind != EMA_NODE_MAP) {
      ema_node_error(error, EMA_CONFIG_ERROR_TYPE, variant, path,
                     "a variant is a map of settings (key.path: value, or a partial tree)");
      return FALSE;
    }
  }
  sweep->variants = variants;
  return TRUE;
}

static gboolean load_axes(EmaSweep *sweep, GError **error) {
  const EmaNode *axes = ema_node_get(sweep->root, "sweep");
  if (axes == NULL)
    return TRUE;
  if (axes->kind != EMA_NODE_MAP || axes->items->len == 0) {
    ema_node_error(error, EMA_CONFIG_ERROR_TYPE, axes, "sweep",
                   "give a map of key.path: [values], e.g. {tenants.0.trace.rate: [1, 2, 4]}");
    return FALSE;
  }
  for (guint i = 0; i < axes->items->len; i++) {
    const EmaNode *key = axes->keys->pdata[i];
    const EmaNode *values = axes->items->pdata[i];
    g_autofree char *canonical = NULL;
    Axis *axis;
    if (key->value == NULL || key->value[0] == '\0' || strstr(key->value, "..") ||
        key->value[0] == '.' || g_str_has_suffix(key->value, ".")) {
      g_autofree char *quoted = ema_file_quote_cut(key->value ? key->value : "", -1);
      ema_node_error(error, EMA_CONFIG_ERROR_SYNTAX, key, "sweep",
                     "'%s' is not a key path (keys and list indices joined by dots)", quoted);
      return FALSE;
    }
    if (g_strv_contains(ema_experiment_sweep_keys, key->value)) {
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, key, "sweep", "'%s' cannot be swept", key->value);
      return FALSE;
    }
    if (values->kind != EMA_NODE_SEQ || values->items->len == 0) {
      g_autofree char *path = g_strconcat("sweep.", key->value, NULL);
      ema_node_error(error, EMA_CONFIG_ERROR_TYPE, values, path,
                     "give a non-empty list of values, e.g. [1, 2, 4]");
      return FALSE;
    }
    canonical = canonical_path(key->value);
    /* another spelling of a path already swept: its values would silently replace the first's */
    for (guint a = 0; a < sweep->axes->len; a++) {
      const Axis *first = sweep->axes->pdata[a];
      if (strcmp(first->canonical, canonical) == 0) {
        g_autofree char *quoted = ema_file_quote_cut(key->value, -1);
        g_autofree char *first_quoted = ema_file_quote_cut(first->path, -1);
        ema_node_error(error, EMA_CONFIG_ERROR_KEY, key, "sweep",
                       "'%s' is the path '%s' (%s:%u:%u) again: sweep each path once", quoted,
                       first_quoted, first->key->file, first->key->line, first->key->col);
        return FALSE;
      }
    }
    axis = g_new0(Axis, 1);
    axis->path = g_strdup(key->value);
    axis->canonical = g_steal_pointer(&canonical);
    axis->key = key;
    axis->values = values;
    g_ptr_array_add(sweep->axes, axis);
  }
  return TRUE;
}

static gboolean load_repeats_and_plot(EmaSweep *sweep, GError **error) {
  const EmaNode *repeats = ema_node_get(sweep->root, "repeats");
  const EmaNode *plot = ema_node_get(sweep->root, "plot");
  guint64 n = 1;
  if (repeats && (repeats->kind != EMA_NODE_SCALAR || repeats->value == NULL ||
                  !g_ascii_string_to_unsigned(repeats->value, 10, 1, MAX_REPEATS, &n, NULL))) {
    ema_node_error(error, EMA_CONFIG_ERROR_RANGE, repeats, "repeats",
                   "give a whole number of runs per point, 1 to %u", MAX_REPEATS);
    return FALSE;
  }
  sweep->repeats = (guint) n;
  if (plot == NULL)
    return TRUE;
  if (!ema_plot_check_settings(plot, "plot", error))
    return FALSE;
  sweep->plot = plot;
  return TRUE;
}

/* Keep letters, digits and ._+-; the rest becomes '_'; at most MAX chars. */
static void append_slug(GString *out, const char *text, guint max) {
  for (guint i = 0; text[i] && i < max; i++) {
    char c = text[i];
    g_string_append_c(out, g_ascii_isalnum(c) || strchr("._+-", c) ? c : '_');
  }
}

static const char *variant_name(const EmaSweep *sweep, const Point *point) {
  return point->variant < 0
             ? ""
             : ((const EmaNode *) sweep->variants->keys->pdata[point->variant])->value;
}

/* The last key of PATH that is not a list index ("rate" of tenants.0.trace.rate). */
static const char *path_leaf(const char *path) {
  const char *end = path + strlen(path);
  for (;;) {
    const char *dot = g_strrstr_len(path, end - path, ".");
    const char *start = dot ? dot + 1 : path;
    gboolean number = start < end;
    for (const char *c = start; c < end; c++)
      number = number && g_ascii_isdigit(*c);
    if (!number || dot == NULL)
      return start;
    end = dot;
  }
}

static void name_points(EmaSweep *sweep) {
  guint n = sweep->points->len;
  guint width = 3;
  for (guint limit = 1000; n > limit && width < 7; limit *= 10)
    width++;
  for (guint p = 0; p < n; p++) {
    Point *point = &g_array_index(sweep->points, Point, p);
    GString *name = g_string_new(NULL);
    g_string_append_printf(name, "%0*u", (int) width, p);
    if (point->variant >= 0) {
      g_string_append_c(name, '-');
      append_slug(name, variant_name(sweep, point), NAME_VALUE_MAX);
    }
    for (guint a = 0; a < sweep->axes->len; a++) {
      const Axis *axis = sweep->axes->pdata[a];
      const EmaNode *value = axis->values->items->pdata[point->value[a]];
      const char *leaf = path_leaf(axis->path);
      g_string_append_c(name, '-');
      append_slug(name, leaf, NAME_VALUE_MAX);
      g_string_append_c(name, '=');
      if (value->kind == EMA_NODE_SCALAR && value->value && value->value[0])
        append_slug(name, value->value, NAME_VALUE_MAX);
      else
        g_string_append_printf(name, "v%u", point->value[a]);
    }
    g_autofree char *repeat =
        sweep->repeats > 1 ? g_strdup_printf("-r%u", point->repeat) : g_strdup("");
    g_string_truncate(name, MIN(name->len, POINT_NAME_MAX - strlen(repeat)));
    g_string_append(name, repeat);
    point->name = g_string_free(name, FALSE);
  }
}

/* The bytes a sweep folder's marker (.ema-output) takes besides its points' names: its comment,
 * its kind and the sweep's own entries, with room to spare. */
#define MARKER_OVERHEAD 4096

/* The points' names fit the list of a sweep's folder: its marker names every point's folder, one
 * a line, and a marker past EMA_FILE_MAX_TEXT is refused when read, so that a sweep whose names
 * took more could run once (a first claim writes the marker) but never resume, nor run a second
 * --part or MPI rank there. An error at WHERE otherwise. */
static gboolean names_fit(const EmaSweep *sweep, const EmaNode *where, GError **error) {
  guint64 bytes = MARKER_OVERHEAD;
  for (guint p = 0; p < sweep->points->len; p++)
    bytes += strlen(g_array_index(sweep->points, Point, p).name) + 1;
  if (bytes <= EMA_FILE_MAX_TEXT)
    return TRUE;
  ema_node_error(error, EMA_CONFIG_ERROR_RANGE, where, "sweep",
                 "the names of its %u points take %" G_GUINT64_FORMAT
                 " MiB, more than the %" G_GSIZE_FORMAT
                 " MiB the list of a sweep's folder may hold (%s names each "
                 "point's folder): sweep fewer points, or shorter variant names and values",
                 sweep->points->len, bytes >> 20, EMA_FILE_MAX_TEXT >> 20, EMA_OUTPUT_MARKER);
  return FALSE;
}

static gboolean enumerate_points(EmaSweep *sweep, const EmaNode *where, GError **error) {
  guint n_variants = sweep->variants ? sweep->variants->items->len : 1;
  guint n_axes = sweep->axes->len;
  double total = (double) n_variants * sweep->repeats;
  g_autofree guint *value = g_new0(guint, n_axes + 1);
  for (guint a = 0; a < n_axes; a++)
    total *= ((const Axis *) sweep->axes->pdata[a])->values->items->len;
  if (total > MAX_POINTS) {
    ema_node_error(error, EMA_CONFIG_ERROR_RANGE, where, "sweep",
                   "%.0f points is more than the %u a sweep may have", total, MAX_POINTS);
    return FALSE;
  }
  for (guint v = 0; v < n_variants; v++) {
    memset(value, 0, sizeof(guint) * (n_axes + 1));
    for (;;) {
      for (guint r = 0; r < sweep->repeats; r++) {
        Point point = {sweep->variants ? (gint) v : -1, NULL, r, NULL};
        point.value = g_memdup2(value, sizeof(guint) * (n_axes + 1));
        g_array_append_val(sweep->points, point);
      }
      /* the next combination: the last path varies fastest */
      guint a = n_axes;
      while (a > 0) {
        const Axis *axis = sweep->axes->pdata[a - 1];
        if (++value[a - 1] < axis->values->items->len)
          break;
        value[a - 1] = 0;
        a--;
      }
      if (a == 0)
        break;
    }
  }
  name_points(sweep);
  return names_fit(sweep, where, error);
}

/* A --set changes the base, which a variant may then replace whole (`policy: static` over
 * `--set policy.borrow_params.KEY=...`), so that no point would check it. Where the file's base
 * loads as an experiment by itself (BARE), the base with the --sets (BASE) must load too, its
 * errors those a single run of the file gives; a base that needs its variants or swept values
 * to load leaves the --sets to the points. */
static gboolean check_sets(const EmaNode *bare, const EmaNode *base, GError **error) {
  g_autoptr(EmaNode) tree = ema_node_copy(base);
  g_autoptr(GError) local = NULL;
  g_autoptr(EmaExperiment) set = ema_experiment_load_tree(tree, NULL, &local);
  g_autoptr(EmaNode) bare_tree = NULL;
  g_autoptr(EmaExperiment) alone = NULL;
  if (set != NULL)
    return TRUE; /* the common case: one load */
  /* the base with the --sets fails: theirs to answer for only where the base alone loads */
  bare_tree = ema_node_copy(bare);
  alone = ema_experiment_load_tree(bare_tree, NULL, NULL);
  if (alone == NULL)
    return TRUE;
  g_propagate_error(error, g_steal_pointer(&local));
  return FALSE;
}

/* Whether the variant map VARIANT, set over the base as point_tree() does,
 * replaces what the canonical dot-path PATH holds there: it sets PATH itself,
 * or a key on PATH's way whose value is not a map (a map merges key by key). */
static gboolean variant_replaces(const EmaNode *variant, const char *path) {
  for (guint k = 0; variant->kind == EMA_NODE_MAP && k < variant->keys->len; k++) {
    g_autofree char *key = canonical_path(((const EmaNode *) variant->keys->pdata[k])->value);
    const EmaNode *value = variant->items->pdata[k];
    if (strcmp(key, path) == 0)
      return TRUE;
    if (ema_node_override_within(path, key)) /* (both canonical: PATH starts with KEY.) */
      return value->kind != EMA_NODE_MAP || variant_replaces(value, path + strlen(key) + 1);
  }
  return FALSE;
}

/* The --set OVERRIDE (the ORDINAL-th) against the swept paths and the
 * variants of SWEEP (under KEY_NAME): an error where every point sets its
 * path over it (a swept path that is it or holds it, or every variant: it
 * would change nothing, silently), a warning naming the variants that do
 * where only some do (it reaches the others only). */
static gboolean check_shadowed(const EmaSweep *sweep, const char *key_name, const char *override,
                               guint ordinal, GError **error) {
  const EmaNode *variants = sweep->variants;
  g_autofree char *path = g_strndup(override, strcspn(override, "="));
  g_autofree char *canonical = canonical_path(path);
  g_autoptr(GString) names = g_string_new(NULL);
  guint shadowing = 0;
  for (guint a = 0; a < sweep->axes->len; a++) {
    const Axis *axis = sweep->axes->pdata[a];
    if (strcmp(canonical, axis->canonical) == 0 ||
        ema_node_override_within(canonical, axis->canonical)) {
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                  "--set:%u:1: %s: the sweep sets %s in every point (%s:%u:%u), so this --set "
                  "would change nothing: change the swept values instead",
                  ordinal, path, axis->path, axis->key->file, axis->key->line, axis->key->col);
      return FALSE;
    }
  }
  for (guint i = 0; variants && i < variants->items->len; i++)
    if (variant_replaces(variants->items->pdata[i], canonical)) {
      g_string_append_printf(names, "%s%s", shadowing ? ", " : "",
                             ((const EmaNode *) variants->keys->pdata[i])->value);
      shadowing++;
    }
  if (shadowing == 0)
    return TRUE;
  if (shadowing == variants->items->len) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "--set:%u:1: %s: every variant of %s sets it over the base (%s), so this "
                "--set would change nothing: set it in the variants (or run a file without %s)",
                ordinal, path, key_name, names->str, key_name);
    return FALSE;
  }
  g_printerr("ema-sim: warning: --set %s: %s's %s set%s %s %s; the --set reaches the other "
             "variants only\n",
             override, key_name, names->str, shadowing == 1 ? "s" : "", path,
             shadowing == 1 ? "itself" : "themselves");
  return TRUE;
}

/* An error where a variant of SWEEP sets a swept path, or a key within one:
 * a point's swept value is set over its variant (point_tree()), so the
 * variant's would change nothing there, silently (as a --set of a swept path
 * is refused, check_shadowed()). */
static gboolean check_variants_swept(const EmaSweep *sweep, GError **error) {
  const EmaNode *variants = sweep->variants;
  for (guint a = 0; variants && a < sweep->axes->len; a++) {
    const Axis *axis = sweep->axes->pdata[a];
    for (guint i = 0; i < variants->items->len; i++) {
      const EmaNode *variant = variants->items->pdata[i];
      for (guint k = 0; variant->kind == EMA_NODE_MAP && k < variant->keys->len; k++) {
        const EmaNode *key = variant->keys->pdata[k];
        g_autofree char *canonical = canonical_path(key->value);
        if (strcmp(canonical, axis->canonical) != 0 &&
            !ema_node_override_within(canonical, axis->canonical))
          continue;
        ema_node_error(error, EMA_CONFIG_ERROR_INVALID, axis->key, "sweep",
                       "%s: variant %s sets %s (%s:%u:%u), and each point's swept value is set "
                       "over its variant's, so the variant would change nothing there: sweep it "
                       "in the variant's place, or leave it out of the variant",
                       axis->path, ((const EmaNode *) variants->keys->pdata[i])->value, key->value,
                       key->file, key->line, key->col);
        return FALSE;
      }
    }
  }
  return TRUE;
}

/* A sweep file, or with COMPARE an experiment file's `compare:` variants
 * (ema_sweep_load_compare). */
static EmaSweep *sweep_load(const char *path, const char *const *overrides, gboolean compare,
                            GError **error) {
  g_autoptr(EmaSweep) sweep = g_new0(EmaSweep, 1);
  const EmaNode *name;
  g_autoptr(EmaNode) bare = NULL; /* the base before the --sets */
  gboolean sets_base = FALSE;
  sweep->path = g_strdup(path);
  sweep->compare = compare;
  sweep->axes = g_ptr_array_new_with_free_func((GDestroyNotify) axis_free);
  sweep->points = g_array_new(FALSE, TRUE, sizeof(Point));
  g_array_set_clear_func(sweep->points, (GDestroyNotify) point_clear);
  sweep->root = ema_node_load_file(path, error);
  if (sweep->root == NULL)
    return NULL;
  if (sweep->root->kind != EMA_NODE_MAP) {
    ema_node_error(error, EMA_CONFIG_ERROR_TYPE, sweep->root, NULL,
                   "a sweep file must be a map of settings");
    return NULL;
  }
  /* a comparison's variants may be repeated (paired by repeat), not swept */
  for (guint i = 0; compare && ema_experiment_sweep_keys[i]; i++) {
    const EmaNode *key = ema_node_get_key(sweep->root, ema_experiment_sweep_keys[i]);
    if (key && strcmp(key->value, "repeats") != 0) {
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, key, key->value,
                     "an experiment with compare is not a sweep file (a sweep has variants)");
      return NULL;
    }
  }
  if (!compare && ema_node_get_key(sweep->root, EMA_EXPERIMENT_COMPARE_KEY)) {
    const EmaNode *key = ema_node_get_key(sweep->root, EMA_EXPERIMENT_COMPARE_KEY);
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, key, key->value,
                   "compare is for ema-sim run; a sweep file gives variants");
    return NULL;
  }
  /* --set repeats=N sets the sweep's own key (of a comparison too), not the experiment's */
  for (guint i = 0; overrides && overrides[i]; i++)
    if (g_str_has_prefix(overrides[i], "repeats=") &&
        (ema_node_override_repeated(overrides, i, error) ||
         !ema_node_apply_override(sweep->root, overrides[i], i + 1, error)))
      return NULL;
  if (!load_variants(sweep, compare ? EMA_EXPERIMENT_COMPARE_KEY : "variants", error) ||
      !load_axes(sweep, error) || !check_variants_swept(sweep, error) ||
      !load_repeats_and_plot(sweep, error))
    return NULL;
  sweep->base = ema_node_copy(sweep->root);
  for (guint i = 0; ema_experiment_sweep_keys[i]; i++)
    map_remove(sweep->base, ema_experiment_sweep_keys[i]);
  map_remove(sweep->base, EMA_EXPERIMENT_COMPARE_KEY);
  if (!ema_params_expand(&ema_experiment_params, sweep->base, error))
    return NULL;
  bare = overrides ? ema_node_copy(sweep->base) : NULL;
  for (guint i = 0; overrides && overrides[i]; i++) {
    const char *key = compare ? EMA_EXPERIMENT_COMPARE_KEY : "variants";
    if (g_str_has_prefix(overrides[i], "repeats="))
      continue;
    if (g_str_has_prefix(overrides[i], key) &&
        (overrides[i][strlen(key)] == '.' || overrides[i][strlen(key)] == '=')) {
      /* the variants are the file's: a --set reaches every one through the base */
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY,
                  "--set:%u:1: %s: the %s are the file's, not --set's: edit them there (a --set "
                  "of another key changes it in every variant)",
                  i + 1, key, compare ? "compare variants" : "variants");
      return NULL;
    }
    for (guint k = 0; !compare && ema_experiment_sweep_keys[k]; k++) {
      /* the swept values and the figures' settings too: no experiment has them, and "unknown
       * key in experiment" named no reason */
      const char *own = ema_experiment_sweep_keys[k];
      if (g_str_has_prefix(overrides[i], own) &&
          (overrides[i][strlen(own)] == '.' || overrides[i][strlen(own)] == '=')) {
        g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY,
                    "--set:%u:1: %s: a key of the sweep file, not of its experiment: edit it "
                    "there (--set sets the experiment's keys in every point, and repeats)",
                    i + 1, own);
        return NULL;
      }
    }
    if (ema_node_override_repeated(overrides, i, error) ||
        !ema_node_apply_override(sweep->base, overrides[i], i + 1, error) ||
        !ema_params_expand(&ema_experiment_params, sweep->base, error))
      return NULL;
    sets_base = TRUE;
  }
  if (sets_base && !check_sets(bare, sweep->base, error))
    return NULL;
  /* (after the values' own checks: a bad value is refused as a single run refuses it) */
  for (guint i = 0; overrides && overrides[i]; i++)
    if (!g_str_has_prefix(overrides[i], "repeats=") &&
        !check_shadowed(sweep, compare ? EMA_EXPERIMENT_COMPARE_KEY : "variants", overrides[i],
                        i + 1, error))
      return NULL;
  name = ema_node_get(sweep->base, "name");
  sweep->name =
      g_strdup(name && name->kind == EMA_NODE_SCALAR && name->value ? name->value : "sweep");
  /* an error about the number of points is at the key of the sweep's product, else the file's */
  if (!enumerate_points(sweep,
                        ema_node_get_key(sweep->root, "sweep")
                            ? ema_node_get_key(sweep->root, "sweep")
                            : sweep->root,
                        error))
    return NULL;
  return g_steal_pointer(&sweep);
}

EmaSweep *ema_sweep_load(const char *path, const char *const *overrides, GError **error) {
  return sweep_load(path, overrides, FALSE, error);
}

EmaSweep *ema_sweep_load_compare(const char *path, const char *const *overrides, GError **error) {
  return sweep_load(path, overrides, TRUE, error);
}

const char *ema_sweep_variant_name(const EmaSweep *sweep, guint point) {
  g_return_val_if_fail(point < sweep->points->len, NULL);
  return variant_name(sweep, &g_array_index(sweep->points, Point, point));
}

const EmaNode *ema_sweep_variant_key(const EmaSweep *sweep, guint point) {
  const Point *p;
  g_return_val_if_fail(point < sweep->points->len, NULL);
  p = &g_array_index(sweep->points, Point, point);
  return p->variant < 0 ? NULL : sweep->variants->keys->pdata[p->variant];
}

guint ema_sweep_point_repeat(const EmaSweep *sweep, guint point) {
  g_return_val_if_fail(point < sweep->points->len, 0);
  return g_array_index(sweep->points, Point, point).repeat;
}

guint ema_sweep_n_repeats(const EmaSweep *sweep) {
  return sweep->repeats;
}

const char *ema_sweep_name(const EmaSweep *sweep) {
  return sweep->name;
}

guint ema_sweep_n_points(const EmaSweep *sweep) {
  return sweep->points->len;
}

const char *ema_sweep_point_name(const EmaSweep *sweep, guint point) {
  g_return_val_if_fail(point < sweep->points->len, NULL);
  return g_array_index(sweep->points, Point, point).name;
}

char *ema_sweep_point_describe(const EmaSweep *sweep, guint p) {
  const Point *point = &g_array_index(sweep->points, Point, p);
  GString *out = g_string_new(NULL);
  if (point->variant >= 0)
    g_string_append_printf(out, "variant=%s", variant_name(sweep, point));
  for (guint a = 0; a < sweep->axes->len; a++) {
    const Axis *axis = sweep->axes->pdata[a];
    g_string_append_printf(out, "%s%s=", out->len ? " " : "", axis->path);
    append_flow(out, axis->values->items->pdata[point->value[a]]);
  }
  if (sweep->repeats > 1)
    g_string_append_printf(out, "%srepeat=%u", out->len ? " " : "", point->repeat);
  if (out->len == 0)
    g_string_append(out, "(the base experiment)");
  return g_string_free(out, FALSE);
}

/* The tree of point P: the base, its variant, its swept values. */
static EmaNode *point_tree(const EmaSweep *sweep, const Point *point, GError **error) {
  g_autoptr(EmaNode) tree = ema_node_copy(sweep->base);
  if (point->variant >= 0) {
    const EmaNode *variant = sweep->variants->items->pdata[point->variant];
    for (guint i = 0; variant->kind == EMA_NODE_MAP && i < variant->keys->len; i++) {
      const EmaNode *key = variant->keys->pdata[i];
      if (!set_path(tree, key->value, key, ema_node_copy(variant->items->pdata[i]), TRUE, error) ||
          !ema_params_expand(&ema_experiment_params, tree, error))
        return NULL;
    }
  }
  for (guint a = 0; a < sweep->axes->len; a++) {
    const Axis *axis = sweep->axes->pdata[a];
    const EmaNode *value = axis->values->items->pdata[point->value[a]];
    if (!set_path(tree, axis->path, axis->key, ema_node_copy(value), FALSE, error) ||
        !ema_params_expand(&ema_experiment_params, tree, error))
      return NULL;
  }
  return g_steal_pointer(&tree);
}

EmaExperiment *ema_sweep_load_point(const EmaSweep *sweep, guint p, GError **error) {
  const Point *point;
  g_autoptr(EmaNode) tree = NULL;
  EmaExperiment *experiment = NULL;
  GError *inner = NULL;
  g_return_val_if_fail(p < sweep->points->len, NULL);
  point = &g_array_index(sweep->points, Point, p);
  tree = point_tree(sweep, point, &inner);
  if (tree)
    experiment = ema_experiment_load_tree(tree, NULL, &inner);
  if (experiment == NULL) {
    /* the located message first, then which point (a comparison's: which variant) it is */
    g_autofree char *repeat =
        point->repeat > 0 ? g_strdup_printf(", repeat %u", point->repeat) : g_strdup("");
    char *message = sweep->compare ? g_strdup_printf("%s (variant %s%s)", inner->message,
                                                     variant_name(sweep, point), repeat)
                                   : g_strdup_printf("%s (point %s)", inner->message, point->name);
    g_free(inner->message);
    inner->message = message;
    g_propagate_error(error, inner);
    return NULL;
  }
  if (sweep->repeats > 1 && !ema_experiment_is_serving(experiment)) {
    /* ops and decode scenarios draw nothing at random: every repeat would be the same run */
    ema_node_error(error, EMA_CONFIG_ERROR_RANGE, ema_node_get(sweep->root, "repeats"), "repeats",
                   "%u repeats of ops or decode scenarios would be %u times the same run (they "
                   "draw nothing at random): give 1",
                   sweep->repeats, sweep->repeats);
    ema_experiment_free(experiment);
    return NULL;
  }
  if (point->repeat > 0) {
    g_autofree char *stream = g_strdup_printf("repeat %u", point->repeat);
    experiment->seed = (gint64) (ema_trace_seed_derive((guint64) experiment->seed, stream) >> 2);
  }
  return experiment;
}

static void add_metric_columns(GHashTable *columns, GHashTable *tenants,
                               const EmaExperiment *experiment);
static gboolean check_plot(const EmaSweep *sweep, GHashTable *columns, GHashTable *tenants,
                           GError **error);

/* The SHA-256 of TEXT into *DIGEST. */
static void text_digest(const char *text, Digest *digest) {
  g_autoptr(GChecksum) checksum = g_checksum_new(G_CHECKSUM_SHA256);
  gsize length = sizeof digest->bytes;
  g_checksum_update(checksum, (const guchar *) text, (gssize) strlen(text));
  g_checksum_get_digest(checksum, digest->bytes, &length);
}

/* Load the points i with i % RANKS == RANK one at a time, then check the
 * plot settings against them (check_plot); DIGESTS and SEEDS (NULL: not
 * kept) get each point's resolved.yaml's digest and seed. */
static gboolean load_points(const EmaSweep *sweep, guint rank, guint ranks, GArray *digests,
                            GArray *seeds, GError **error) {
  g_autoptr(GHashTable) columns = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GHashTable) tenants = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint p = rank; p < sweep->points->len; p += ranks) {
    g_autoptr(EmaExperiment) experiment = ema_sweep_load_point(sweep, p, error);
    if (experiment == NULL)
      return FALSE;
    if (sweep->plot)
      add_metric_columns(columns, tenants, experiment);
    if (digests) {
      g_autofree char *text = ema_experiment_to_yaml(experiment);
      Digest digest;
      text_digest(text, &digest);
      g_array_append_val(digests, digest);
      g_array_append_val(seeds, experiment->seed);
    }
  }
  return check_plot(sweep, columns, tenants, error);
}

gboolean ema_sweep_resolve(EmaSweep *sweep, GError **error) {
  g_autoptr(GArray) digests = g_array_sized_new(FALSE, FALSE, sizeof(Digest), sweep->points->len);
  g_autoptr(GArray) seeds = g_array_sized_new(FALSE, FALSE, sizeof(gint64), sweep->points->len);
  if (sweep->digests)
    return TRUE;
  if (!load_points(sweep, 0, 1, digests, seeds, error))
    return FALSE;
  sweep->digests = g_steal_pointer(&digests);
  sweep->seeds = g_steal_pointer(&seeds);
  return TRUE;
}

/* TEXT is the resolved.yaml of POINT as ema_sweep_resolve found it. */
static gboolean is_resolved_text(const EmaSweep *sweep, guint point, const char *text) {
  Digest digest;
  text_digest(text, &digest);
  return memcmp(&digest, &g_array_index(sweep->digests, Digest, point), sizeof digest) == 0;
}

/* The resolved.yaml of POINT of a resolved sweep, made again (the sweep keeps its digest); an
 * error where it comes out other than when the sweep checked it: a file it reads (a model, a
 * profile, an !include) changed since, and the point would run what was never checked. */
static char *resolved_text(const EmaSweep *sweep, guint point, GError **error) {
  g_autoptr(EmaExperiment) experiment = ema_sweep_load_point(sweep, point, error);
  char *text;
  if (experiment == NULL)
    return NULL;
  text = ema_experiment_to_yaml(experiment);
  if (!is_resolved_text(sweep, point, text)) {
    g_free(text);
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "its experiment resolves otherwise now than when the sweep checked it (a file "
                "it reads changed meanwhile): run the sweep again");
    return NULL;
  }
  return text;
}

gboolean ema_sweep_check(const EmaSweep *sweep, guint rank, guint ranks, GError **error) {
  g_return_val_if_fail(ranks >= 1 && rank < ranks, FALSE);
  return load_points(sweep, rank, ranks, NULL, NULL, error);
}

/* ---- records ---------------------------------------------------------------- */

const char *ema_sweep_status_name(EmaSweepStatus status) {
  static const char *const names[] = {"ok", "missed", "failed", "not-run"};
  return names[status];
}

static EmaSweepRecord *record_new(guint point, EmaSweepStatus status) {
  EmaSweepRecord *record = g_new0(EmaSweepRecord, 1);
  record->point = point;
  record->status = status;
  record->names = g_ptr_array_new_with_free_func(g_free);
  record->values = g_ptr_array_new_with_free_func(g_free);
  return record;
}

void ema_sweep_record_free(EmaSweepRecord *record) {
  if (record == NULL)
    return;
  g_ptr_array_unref(record->names);
  g_ptr_array_unref(record->values);
  g_free(record);
}

static void record_add(EmaSweepRecord *record, const char *prefix, const char *name,
                       const char *value) {
  g_ptr_array_add(record->names, prefix ? g_strconcat(prefix, ".", name, NULL) : g_strdup(name));
  g_ptr_array_add(record->values, g_strdup(value));
}

/* MEMBER of OBJECT (MEMBER may be "a.b": a member of a member) as sweep.csv
 * writes it; NULL when absent or not a plain value. */
static char *json_text(JsonObject *object, const char *member) {
  g_auto(GStrv) parts = g_strsplit(member, ".", -1);
  JsonNode *node = NULL;
  char buffer[G_ASCII_DTOSTR_BUF_SIZE];
  for (guint i = 0; parts[i]; i++) {
    if (object == NULL || !json_object_has_member(object, parts[i]))
      return NULL;
    node = json_object_get_member(object, parts[i]);
    object = JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
  }
  if (node == NULL || !JSON_NODE_HOLDS_VALUE(node))
    return NULL;
  switch (json_node_get_value_type(node)) {
  case G_TYPE_INT64:
    return g_strdup_printf("%" G_GINT64_FORMAT, json_node_get_int(node));
  case G_TYPE_DOUBLE:
    return g_strdup(g_ascii_formatd(buffer, sizeof buffer, "%.9g", json_node_get_double(node)));
  case G_TYPE_BOOLEAN:
    return g_strdup(json_node_get_boolean(node) ? "true" : "false");
  case G_TYPE_STRING:
    return g_strdup(json_node_get_string(node));
  default:
    return NULL;
  }
}

/* Columns of sweep.csv per tenant: summary.json members (a latency block
 * "ttft_ms" gives ttft_p50_ms .. ttft_std_ms). */
/* a borrower's and a lender's columns: what each took (borrowed_peak_bytes, the most borrowed
 * at one sample) and gave (lent_peak_bytes), its KV and its load (arrived, rejected) */
static const char *const tenant_columns[] = {
    "throughput_tok_s",  "total_tok_s",
    "req_per_s",         "goodput_req_s",
    "slo_attainment",    "arrived",
    "completed",         "rejected",
    "unfinished",        "timed_out",
    "preemptions",       "kv_blocks",
    "kv_util_mean",      "kv_util_usable_mean",
    "slowed_by_peers_s", "borrowed_peak_bytes",
    "lent_peak_bytes",
};
static const char *const latency_columns[] = {"ttft", "tpot", "itl", "e2e"};
static const char *const latency_stats[] = {"p50", "p90", "p95", "p99", "mean", "std"};
/* the run's own: summary.json member, column (after "sim.") */
static const char *const sim_columns[][2] = {
    {"makespan_s", "makespan_s"}, {"sim.simulated_s", "simulated_s"}, {"sim.events", "events"}};

/* The column of statistic Q of latency L: "ttft_p99_ms". */
static char *latency_column(guint l, guint q) {
  return g_strdup_printf("%s_%s_ms", latency_columns[l], latency_stats[q]);
}
/* slices_borrowed: all slices lent over the run (cumulative, not a peak); the offload columns
 * only where a step offloaded */
static const char *const pool_columns[] = {
    "borrows",
    "slices_borrowed",
    "returns",
    "slices_returned",
    "reclaims",
    "slices_reclaimed",
    "reclaim_wait_mean_ms",
    "exposed_remote_s",
    "offload_steps",
    "offload_throttled_steps",
    "offload_throttled_s",
    "offload_read_steps",
};
static const char *const op_columns[] = {"seconds", "bandwidth_gbps"};

static void record_add_json(EmaSweepRecord *record, JsonObject *object, const char *prefix,
                            const char *member, const char *column) {
  g_autofree char *text = json_text(object, member);
  if (text)
    record_add(record, prefix, column, text);
}

/* The record of a point from DIR/summary.json; NULL when there is none (or
 * it does not parse: a run cut short). */
/* MEMBER of ROOT is a list of objects (or absent); every tenant or op
 * object has a string "name". */
static gboolean is_list_of_named(JsonObject *root, const char *member) {
  JsonNode *node = json_object_get_member(root, member);
  JsonArray *array;
  if (node == NULL)
    return TRUE;
  if (!JSON_NODE_HOLDS_ARRAY(node))
    return FALSE;
  array = json_node_get_array(node);
  for (guint i = 0; i < json_array_get_length(array); i++) {
    JsonNode *item = json_array_get_element(array, i);
    JsonNode *name;
    if (!JSON_NODE_HOLDS_OBJECT(item))
      return FALSE;
    name = json_object_get_member(json_node_get_object(item), "name");
    if (name == NULL || !JSON_NODE_HOLDS_VALUE(name) ||
        json_node_get_value_type(name) != G_TYPE_STRING)
      return FALSE;
  }
  return TRUE;
}

/* ROOT has the shape of a summary.json that ema-sim run writes: a "sim"
 * object, tenants (with a "pool" object) or ops, each a list of named
 * objects. */
static gboolean is_summary(JsonObject *root) {
  JsonNode *sim = json_object_get_member(root, "sim");
  JsonNode *pool = json_object_get_member(root, "pool");
  gboolean tenants = json_object_has_member(root, "tenants");
  gboolean ops = json_object_has_member(root, "ops");
  return sim != NULL && JSON_NODE_HOLDS_OBJECT(sim) && tenants != ops &&
         is_list_of_named(root, "tenants") && is_list_of_named(root, "ops") &&
         (!tenants || (pool != NULL && JSON_NODE_HOLDS_OBJECT(pool)));
}

static EmaSweepRecord *record_read(guint point, const char *dir) {
  g_autofree char *path = g_build_filename(dir, "summary.json", NULL);
  g_autoptr(JsonParser) parser = json_parser_new();
  JsonObject *root = ema_json_load_object(parser, path, NULL);
  EmaSweepRecord *record;
  JsonArray *array;
  if (root == NULL || !is_summary(root))
    return NULL;
  record = record_new(point, EMA_SWEEP_OK);
  if (json_object_has_member(root, "tenants")) {
    array = json_object_get_array_member(root, "tenants");
    for (guint i = 0; array && i < json_array_get_length(array); i++) {
      JsonObject *tenant = json_array_get_object_element(array, i);
      const char *name = json_object_get_string_member_with_default(tenant, "name", "?");
      for (guint c = 0; c < G_N_ELEMENTS(tenant_columns); c++)
        record_add_json(record, tenant, name, tenant_columns[c], tenant_columns[c]);
      for (guint l = 0; l < G_N_ELEMENTS(latency_columns); l++)
        for (guint q = 0; q < G_N_ELEMENTS(latency_stats); q++) {
          g_autofree char *member =
              g_strdup_printf("%s_ms.%s", latency_columns[l], latency_stats[q]);
          g_autofree char *column = latency_column(l, q);
          record_add_json(record, tenant, name, member, column);
        }
    }
    for (guint c = 0; c < G_N_ELEMENTS(pool_columns); c++) {
      g_autofree char *member = g_strconcat("pool.", pool_columns[c], NULL);
      record_add_json(record, root, "pool", member, pool_columns[c]);
    }
  }
  if (json_object_has_member(root, "ops")) {
    array = json_object_get_array_member(root, "ops");
    for (guint i = 0; array && i < json_array_get_length(array); i++) {
      JsonObject *op = json_array_get_object_element(array, i);
      const char *name = json_object_get_string_member_with_default(op, "name", "?");
      for (guint c = 0; c < G_N_ELEMENTS(op_columns); c++)
        record_add_json(record, op, name, op_columns[c], op_columns[c]);
    }
    record_add_json(record, root, NULL, "expectations_missed", "expectations_missed");
    if (json_object_get_int_member_with_default(root, "expectations_missed", 0) > 0)
      record->status = EMA_SWEEP_MISSED;
  }
  for (guint c = 0; c < G_N_ELEMENTS(sim_columns); c++)
    record_add_json(record, root, "sim", sim_columns[c][0], sim_columns[c][1]);
  return record;
}

char *ema_sweep_records_to_text(const GPtrArray *records) {
  GString *out = g_string_new(NULL);
  for (guint i = 0; i < records->len; i++) {
    const EmaSweepRecord *record = records->pdata[i];
    g_string_append_printf(out, "P\t%u\t%d\t%d\n", record->point, (int) record->status,
                           record->resumed);
    for (guint m = 0; m < record->names->len; m++) {
      g_autofree char *name = g_strescape(record->names->pdata[m], NULL);
      g_autofree char *value = g_strescape(record->values->pdata[m], NULL);
      g_string_append_printf(out, "M\t%s\t%s\n", name, value);
    }
  }
  return g_string_free(out, FALSE);
}

GPtrArray *ema_sweep_records_from_text(const char *text, GError **error) {
  g_autoptr(GPtrArray) records =
      g_ptr_array_new_with_free_func((GDestroyNotify) ema_sweep_record_free);
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  EmaSweepRecord *record = NULL;
  for (guint i = 0; lines[i]; i++) {
    g_auto(GStrv) fields = NULL;
    if (lines[i][0] == '\0')
      continue;
    fields = g_strsplit(lines[i], "\t", -1);
    if (g_strv_length(fields) == 4 && strcmp(fields[0], "P") == 0) {
      guint64 point, status, resumed;
      if (!g_ascii_string_to_unsigned(fields[1], 10, 0, G_MAXUINT, &point, NULL) ||
          !g_ascii_string_to_unsigned(fields[2], 10, 0, EMA_SWEEP_NOT_RUN, &status, NULL) ||
          !g_ascii_string_to_unsigned(fields[3], 10, 0, 1, &resumed, NULL))
        break;
      record = record_new((guint) point, (EmaSweepStatus) status);
      record->resumed = resumed != 0;
      g_ptr_array_add(records, record);
    } else if (g_strv_length(fields) == 3 && strcmp(fields[0], "M") == 0 && record) {
      g_ptr_array_add(record->names, g_strcompress(fields[1]));
      g_ptr_array_add(record->values, g_strcompress(fields[2]));
    } else {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "bad sweep record line %u: %s", i + 1,
                  lines[i]);
      return NULL;
    }
  }
  return g_steal_pointer(&records);
}

/* ---- running ------------------------------------------------------------------ */

typedef struct {
  EmaSweep *sweep;
  const char *dir;
  const EmaSweepRunOptions *options;
  GArray *queue;      /* guint: points to run, in point order */
  GPtrArray *records; /* by point; NULL until known */
  guint next;         /* in queue */
  guint running;
  guint total;   /* this rank's points */
  guint done;    /* finished or resumed */
  guint resumed; /* of which found complete */
  guint ran;     /* of which run now */
  guint failed;
  guint warned;        /* points that ran and printed warnings (run.err) */
  guint other_build;   /* complete points made by another build, run again */
  guint stale;         /* complete points made from files changed since, run again */
  char *stale_file;    /* the first such file (or search path: run_env_change) */
  guint not_own;       /* points whose summary.json another run made (summary_not_own), run again */
  char *not_own_first; /* the first: "POINT: made from ..." */
  char *build_id;      /* ema_output_build_id of the program that runs the points */
  char *run_env;       /* what each point's RUN_ENV holds (run_env_text) */
  gboolean stop;
  int signal;           /* the signal that stopped the sweep; 0: none */
  GHashTable *children; /* GPid -> Child *: the point processes running */
  guint progress_width; /* of the progress line on the terminal; 0: none */
  gint64 start;
  GMainLoop *loop;
} Runner;

typedef struct {
  Runner *runner;
  guint point;
  GPid pid;
  guint timeout;      /* its timeout source; 0: none */
  gboolean timed_out; /* killed at the timeout */
} Child;

static char *point_dir(const Runner *runner, guint point) {
  return g_build_filename(runner->dir, ema_sweep_point_name(runner->sweep, point), NULL);
}

static void clear_progress(Runner *runner) {
  if (runner->progress_width)
    fprintf(stderr, "\r%*s\r", (int) runner->progress_width, "");
  runner->progress_width = 0;
}

static void draw_progress(Runner *runner) {
  double elapsed = (double) (g_get_monotonic_time() - runner->start) / 1e6;
  double rate = elapsed > 0 ? runner->ran / elapsed : 0;
  guint left = runner->total - runner->done;
  g_autoptr(GString) line = g_string_new(NULL);
  if (!runner->options->progress)
    return;
  g_string_append_printf(line, "  points %u/%u", runner->done, runner->total);
  if (runner->resumed)
    g_string_append_printf(line, " (%u resumed)", runner->resumed);
  if (runner->failed)
    g_string_append_printf(line, "  %u failed", runner->failed);
  g_string_append_printf(line, "  running %u", runner->running);
  if (runner->ran > 0) {
    gint64 eta = (gint64) (left / rate + 0.5);
    g_string_append_printf(line, "  %.2f points/s  ETA ", rate);
    if (eta >= 3600)
      g_string_append_printf(line, "%" G_GINT64_FORMAT "h%02dm", eta / 3600,
                             (int) (eta % 3600 / 60));
    else
      g_string_append_printf(line, "%d:%02d", (int) (eta / 60), (int) (eta % 60));
  }
  /* over the previous line, padded where it was longer */
  fprintf(stderr, "\r%-*s", (int) MAX(runner->progress_width, line->len), line->str);
  runner->progress_width = (guint) line->len;
}

static gboolean on_progress_tick(gpointer data) {
  draw_progress(data);
  return G_SOURCE_CONTINUE;
}

/* The last non-empty line of DIR/run.err (the run's error), else of
 * DIR/run.out, for the failure message (after the sweep's own "ema-sim
 * sweep: ...", without the run's "ema-sim: " before an error of no place). */
static char *last_log_line(const char *dir) {
  static const char *const names[] = {"run.err", "run.out"};
  for (guint n = 0; n < G_N_ELEMENTS(names); n++) {
    g_autofree char *path = g_build_filename(dir, names[n], NULL);
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    if (!ema_file_read_regular(path, EMA_FILE_MAX_TEXT, &text, NULL, NULL))
      continue;
    lines = g_strsplit(text, "\n", -1);
    for (guint i = g_strv_length(lines); i-- > 0;) {
      g_strstrip(lines[i]);
      if (lines[i][0])
        return g_strdup(g_str_has_prefix(lines[i], "ema-sim: ") ? lines[i] + strlen("ema-sim: ")
                                                                : lines[i]);
    }
  }
  return g_strdup("(it printed nothing)");
}

/* Open DIR/NAME for a child's output; -1 with an error. The open never
 * waits (a FIFO without a reader is refused) and what it opened must be a
 * regular file. */
static int open_log(const char *dir, const char *name, GError **error) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, 0666);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    /* a FIFO without a reader answers ENXIO to a write open that won't wait */
    int saved = fd < 0 ? errno : EINVAL;
    if (fd >= 0)
      close(fd);
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved), "cannot write %s: %s", path,
                saved == ENXIO || saved == EINVAL ? "not a regular file" : g_strerror(saved));
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

static void report_failure(Runner *runner, guint point, const char *how, const char *message) {
  clear_progress(runner);
  fprintf(stderr, "ema-sim sweep: point %s failed (%s): %s\n",
          ema_sweep_point_name(runner->sweep, point), how, message);
}

/* Points whose warnings are named one by one; past them, one line when the sweep ends. */
#define WARNED_POINTS_SHOWN 20

/* LINE (a run's warning) says one of the warnings the sweep printed before running. */
static gboolean said(const Runner *runner, const char *line) {
  const GPtrArray *texts = runner->options->said_warnings;
  const char *text = line + strlen(EMA_OUTPUT_WARNING);
  for (guint i = 0; texts && i < texts->len; i++)
    if (strcmp(text, texts->pdata[i]) == 0)
      return TRUE;
  return FALSE;
}

/* A point that ran and warned (lines of DIR/run.err that start
 * EMA_OUTPUT_WARNING, as a single run prints them; not those the sweep
 * printed before running, options->said_warnings, nor the loader's "ema:
 * warning:" lines, such as public data absent, which every point repeats
 * and its summary.json's fidelity states): its first warning and how many
 * more, on stderr, for the first WARNED_POINTS_SHOWN such points. */
static void report_warnings(Runner *runner, guint point, const char *dir) {
  g_autofree char *path = g_build_filename(dir, "run.err", NULL);
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;
  const char *first = NULL;
  guint count = 0;
  if (!ema_file_read_regular(path, EMA_FILE_MAX_TEXT, &text, NULL, NULL))
    return;
  lines = g_strsplit(text, "\n", -1);
  for (guint i = 0; lines[i]; i++)
    if (g_str_has_prefix(lines[i], EMA_OUTPUT_WARNING) && !said(runner, lines[i]) && count++ == 0)
      first = lines[i] + strlen(EMA_OUTPUT_WARNING);
  if (count == 0 || runner->warned++ >= WARNED_POINTS_SHOWN)
    return;
  clear_progress(runner);
  fprintf(stderr, "ema-sim sweep: point %s warned: %s", ema_sweep_point_name(runner->sweep, point),
          first);
  if (count > 1)
    fprintf(stderr, " (and %u more in its run.err)", count - 1);
  fputc('\n', stderr);
}

static void launch_more(Runner *runner);

static void finish_point(Runner *runner, guint point, EmaSweepRecord *record) {
  g_assert(runner->records->pdata[point] == NULL);
  runner->records->pdata[point] = record;
  runner->done++;
  if (record->status == EMA_SWEEP_FAILED) {
    runner->failed++;
    if (runner->options->fail_fast)
      runner->stop = TRUE;
  }
}

/* The point process's WAIT_STATUS as words; NULL when it exited 0. */
static char *exit_how(const Child *child, gint wait_status) {
  if (child->timed_out)
    return g_strdup_printf("killed at the --timeout of %u s", child->runner->options->timeout_s);
  if (WIFSIGNALED(wait_status))
    return g_strdup_printf("killed by signal %d", WTERMSIG(wait_status));
  if (WEXITSTATUS(wait_status) != 0)
    return g_strdup_printf("exit %d", WEXITSTATUS(wait_status));
  return NULL;
}

/* A point's record from its summary.json and its process's exit: ok only
 * for a process that exited 0 (or 1 for an ops expectation missed, which
 * summary.json says); anything else fails, and its summary.json is removed
 * so that no resume counts it done. */
static void on_child_exit(GPid pid, gint wait_status, gpointer data) {
  Child *child = data;
  Runner *runner = child->runner;
  g_autofree char *dir = point_dir(runner, child->point);
  g_autofree char *how = exit_how(child, wait_status);
  EmaSweepRecord *record = record_read(child->point, dir);
  gboolean missed = record && record->status == EMA_SWEEP_MISSED && WIFEXITED(wait_status) &&
                    WEXITSTATUS(wait_status) == 1 && !child->timed_out;
  g_hash_table_remove(runner->children, GINT_TO_POINTER(pid));
  if (child->timeout)
    g_source_remove(child->timeout);
  g_spawn_close_pid(pid);
  runner->running--;
  runner->ran++;
  if (how && !missed) {
    g_autofree char *message = last_log_line(dir);
    g_autofree char *summary = g_build_filename(dir, "summary.json", NULL);
    (void) g_remove(summary);
    ema_sweep_record_free(record);
    record = record_new(child->point, EMA_SWEEP_FAILED);
    report_failure(runner, child->point, how, message);
  } else {
    report_warnings(runner, child->point, dir);
  }
  finish_point(runner, child->point, record);
  g_free(child);
  launch_more(runner);
  draw_progress(runner);
}

/* The point ran past --timeout: its process group goes (SIGKILL: a point
 * that loops in a plugin may not heed SIGTERM). */
static gboolean on_point_timeout(gpointer data) {
  Child *child = data;
  child->timed_out = TRUE;
  child->timeout = 0;
  kill(-(pid_t) child->pid, SIGKILL);
  return G_SOURCE_REMOVE;
}

/* In the point's process, before exec: a process group of its own (so the
 * sweep can end all of it) and a SIGKILL when the sweep dies, however it
 * dies. DATA is the sweep's pid: a sweep gone before the prctl took effect
 * ends the point at once. */
static void point_child_setup(gpointer data) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != (pid_t) GPOINTER_TO_INT(data))
    _exit(127);
}

/* Claim the point's directory (which removes an earlier run's summary.json
 * and the rest it wrote), write its resolved.yaml and RUN_ENV and start
 * ema-sim run on it. */
static gboolean start_point(Runner *runner, guint point, GError **error) {
  g_autofree char *dir = point_dir(runner, point);
  g_autofree char *resolved = g_build_filename(dir, "resolved.yaml", NULL);
  g_autofree char *run_env = g_build_filename(dir, RUN_ENV, NULL);
  g_autoptr(GPtrArray) argv = g_ptr_array_new();
  g_autofree char *text = resolved_text(runner->sweep, point, error);
  static const char *const point_logs[] = {"run.out", "run.err", RUN_ENV, NULL};
  const int lock_target = 3;
  const char *lock_target_text = "3";
  g_auto(GStrv) env = NULL;
  Child *child;
  GPid pid;
  int out, err, lock_fd;
  gboolean ok;
  /* the point's folder is a run's (output.h): what an earlier run wrote
   * goes; the claim (its lock) passes to the run started on it */
  if (text == NULL || !ema_output_claim_dir(dir, point_logs, error))
    return FALSE;
  if (!g_file_set_contents(resolved, text, -1, error) ||
      !g_file_set_contents(run_env, runner->run_env, -1, error))
    return FALSE;
  if ((out = open_log(dir, "run.out", error)) < 0)
    return FALSE;
  if ((err = open_log(dir, "run.err", error)) < 0) {
    close(out);
    return FALSE;
  }
  g_ptr_array_add(argv, (gpointer) runner->options->program);
  for (guint i = 0; runner->options->program_args && runner->options->program_args[i]; i++)
    g_ptr_array_add(argv, (gpointer) runner->options->program_args[i]);
  g_ptr_array_add(argv, (gpointer) "run");
  g_ptr_array_add(argv, resolved);
  g_ptr_array_add(argv, (gpointer) "-o");
  g_ptr_array_add(argv, dir);
  g_ptr_array_add(argv, (gpointer) "--no-plot");
  g_ptr_array_add(argv, NULL);
  lock_fd = ema_output_lock_fd(dir);
  env = g_environ_setenv(g_get_environ(), EMA_OUTPUT_CLAIMED_ENV, lock_target_text, TRUE);
  ok = g_spawn_async_with_pipes_and_fds(
      NULL, (const char *const *) argv->pdata, (const char *const *) env,
      G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDIN_FROM_DEV_NULL, point_child_setup,
      GINT_TO_POINTER(getpid()), -1, out, err, &lock_fd, &lock_target, lock_fd >= 0 ? 1 : 0, &pid,
      NULL, NULL, NULL, error);
  close(out);
  close(err);
  ema_output_release_dir(dir); /* the run holds it now */
  if (!ok)
    return FALSE;
  setpgid(pid, pid); /* as the child does, so that no kill(-pid) can miss */
  child = g_new0(Child, 1);
  child->runner = runner;
  child->point = point;
  child->pid = pid;
  if (runner->options->timeout_s > 0)
    child->timeout = g_timeout_add_seconds(runner->options->timeout_s, on_point_timeout, child);
  runner->running++;
  g_hash_table_insert(runner->children, GINT_TO_POINTER(pid), child);
  g_child_watch_add(pid, on_child_exit, child);
  return TRUE;
}

static void launch_more(Runner *runner) {
  while (!runner->stop && runner->running < runner->options->jobs &&
         runner->next < runner->queue->len) {
    guint point = g_array_index(runner->queue, guint, runner->next++);
    GError *error = NULL;
    if (!start_point(runner, point, &error)) {
      report_failure(runner, point, "not started", error->message);
      g_error_free(error);
      finish_point(runner, point, record_new(point, EMA_SWEEP_FAILED));
    }
  }
  if (runner->running == 0 && (runner->stop || runner->next >= runner->queue->len))
    g_main_loop_quit(runner->loop);
}

/* SIGINT, SIGTERM or SIGHUP: start no more points and pass the signal on
 * to the running ones; the loop ends when the last has exited. */
static gboolean on_signal(Runner *runner, int signo) {
  GHashTableIter iter;
  gpointer pid;
  runner->stop = TRUE;
  runner->signal = signo;
  g_hash_table_iter_init(&iter, runner->children);
  while (g_hash_table_iter_next(&iter, &pid, NULL))
    kill(-(pid_t) GPOINTER_TO_INT(pid), signo); /* the point's process group */
  return G_SOURCE_CONTINUE;
}

static gboolean on_sigint(gpointer data) {
  return on_signal(data, SIGINT);
}

static gboolean on_sigterm(gpointer data) {
  return on_signal(data, SIGTERM);
}

static gboolean on_sighup(gpointer data) {
  return on_signal(data, SIGHUP);
}

/* The "provenance" object of DIR/summary.json, kept alive by *PARSER; NULL
 * when there is none. */
static JsonObject *summary_provenance(const char *dir, JsonParser **parser) {
  g_autofree char *path = g_build_filename(dir, "summary.json", NULL);
  JsonObject *root;
  JsonNode *provenance;
  *parser = json_parser_new();
  if ((root = ema_json_load_object(*parser, path, NULL)) == NULL ||
      (provenance = json_object_get_member(root, "provenance")) == NULL ||
      !JSON_NODE_HOLDS_OBJECT(provenance))
    return NULL;
  return json_node_get_object(provenance);
}

/* A string member NAME of OBJECT, NULL when absent or not a string. */
static const char *string_member(JsonObject *object, const char *name) {
  JsonNode *node = object ? json_object_get_member(object, name) : NULL;
  return node && JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_STRING
             ? json_node_get_string(node)
             : NULL;
}

/* The first file PROVENANCE hashed (its plugins, traces and inputs) whose
 * SHA-256 is not the recorded one now (changed, or gone); NULL when none. */
static char *changed_input(JsonObject *provenance) {
  static const char *const lists[][2] = {
      {"plugins", "path"}, {"traces", "file"}, {"inputs", "file"}};
  for (guint l = 0; l < G_N_ELEMENTS(lists); l++) {
    JsonNode *node = json_object_get_member(provenance, lists[l][0]);
    JsonArray *array = node && JSON_NODE_HOLDS_ARRAY(node) ? json_node_get_array(node) : NULL;
    for (guint i = 0; array && i < json_array_get_length(array); i++) {
      JsonNode *item = json_array_get_element(array, i);
      JsonObject *file = JSON_NODE_HOLDS_OBJECT(item) ? json_node_get_object(item) : NULL;
      const char *path = string_member(file, lists[l][1]);
      const char *recorded = string_member(file, "sha256");
      g_autofree char *now = path ? ema_output_file_sha256(path) : NULL;
      if (path == NULL || recorded == NULL)
        continue;
      if (g_strcmp0(now, recorded) != 0)
        return g_strdup(path);
    }
  }
  return NULL;
}

/* The variables that move which file a name finds (server models, LLM
 * shapes, engine profiles, GPU profiles and the public data they import, the
 * validation table, policy modules): a point run under other values may
 * have read other files under the same names, which its inputs' hashes
 * cannot tell. */
static const char *const search_variables[] = {
    "EMA_HWMODEL_PATH", "EMA_LLM_PATH",      "EMA_ENGINE_PATH", "EMA_PROFILE_PATH",
    "EMA_SHARED_DIR",   "EMA_FIDELITY_FILE", "EMA_PLUGIN_PATH", NULL};

/* VALUE (folders joined by ':') with each folder absolute, as this process
 * finds it (a relative one is the working directory's): "" for none. */
static char *absolute_search_path(const char *value) {
  g_auto(GStrv) parts = g_strsplit(value ? value : "", G_SEARCHPATH_SEPARATOR_S, -1);
  g_autoptr(GPtrArray) folders = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; parts[i]; i++)
    if (parts[i][0])
      g_ptr_array_add(folders, g_canonicalize_filename(parts[i], NULL));
  g_ptr_array_add(folders, NULL);
  return g_strjoinv(G_SEARCHPATH_SEPARATOR_S, (char **) folders->pdata);
}

/* What each point's RUN_ENV holds: every search variable's value (absolute)
 * and the arguments its run gets before `run` (--plugin-dir DIR), a line
 * each. A finished point whose RUN_ENV differs runs again. */
static char *run_env_text(const EmaSweepRunOptions *options) {
  GString *text = g_string_new("# where this point's run found files by name: ema-sim sweep runs "
                               "it again when one differs\n");
  for (guint i = 0; search_variables[i]; i++) {
    g_autofree char *value = absolute_search_path(g_getenv(search_variables[i]));
    g_string_append_printf(text, "%s=%s\n", search_variables[i], value);
  }
  g_string_append(text, "arguments=");
  for (guint i = 0; options->program_args && options->program_args[i]; i++)
    g_string_append_printf(text, "%s%s", i ? " " : "", options->program_args[i]);
  g_string_append_c(text, '\n');
  return g_string_free(text, FALSE);
}

static const char *or_none(const char *value) {
  return value[0] ? value : "none";
}

/* What changed between the RUN_ENV texts WAS (NULL: the point has none) and
 * NOW: "EMA_ENGINE_PATH is now /x/engines, was none", for the first line
 * NAME=VALUE that differs. */
static char *run_env_change(const char *was, const char *now) {
  g_auto(GStrv) old_lines = g_strsplit(was ? was : "", "\n", -1);
  g_auto(GStrv) new_lines = g_strsplit(now, "\n", -1);
  if (was == NULL)
    return g_strdup("no " RUN_ENV ": the search paths it ran with are not known");
  for (guint i = 0; new_lines[i]; i++) {
    gsize n = strcspn(new_lines[i], "="); /* the length of NAME in NAME=VALUE */
    const char *old = NULL;
    if (new_lines[i][n] != '=')
      continue; /* the comment, the end */
    for (guint j = 0; old_lines[j] && old == NULL; j++)
      if (strncmp(old_lines[j], new_lines[i], n + 1) == 0)
        old = old_lines[j] + n + 1;
    if (g_strcmp0(old, new_lines[i] + n + 1) != 0)
      return g_strdup_printf("%.*s is now %s, was %s", (int) n, new_lines[i],
                             or_none(new_lines[i] + n + 1), old ? or_none(old) : "not recorded");
  }
  return g_strdup(RUN_ENV " differs");
}

/* NULL where PROVENANCE (of DIR/summary.json) lists among the files its run read one whose
 * recorded SHA-256 is that of TEXT, DIR/resolved.yaml's now: the summary is a run of this
 * experiment (made here, or in a copy of the sweep's folder). Otherwise what it names instead,
 * for a note: a summary.json copied from another point (whose resolved.yaml is unchanged, so no
 * input "changed") or written by hand would put another point's metrics in this point's row. */
static char *summary_not_own(JsonObject *provenance, const char *text) {
  g_autofree char *own = g_compute_checksum_for_string(G_CHECKSUM_SHA256, text, -1);
  JsonNode *node = provenance ? json_object_get_member(provenance, "inputs") : NULL;
  JsonArray *inputs = node && JSON_NODE_HOLDS_ARRAY(node) ? json_node_get_array(node) : NULL;
  const char *other = NULL;
  if (provenance == NULL)
    return g_strdup("no provenance");
  for (guint i = 0; inputs && i < json_array_get_length(inputs); i++) {
    JsonNode *item = json_array_get_element(inputs, i);
    JsonObject *file = JSON_NODE_HOLDS_OBJECT(item) ? json_node_get_object(item) : NULL;
    const char *path = string_member(file, "file");
    if (g_strcmp0(string_member(file, "sha256"), own) == 0)
      return NULL;
    if (other == NULL && path && g_str_has_suffix(path, "/resolved.yaml"))
      other = path;
  }
  return other ? g_strdup_printf("made from %s", other)
               : g_strdup("its provenance lists no resolved.yaml");
}

/* ema_sweep_point_done, with *NOT_OWN (when not NULL) set to what summary_not_own() said of a
 * summary.json that is not this point's run (and *STALE left NULL). */
static EmaSweepRecord *point_done(const EmaSweep *sweep, guint point, const char *dir,
                                  const char *build_id, const char *run_env,
                                  gboolean reuse_other_builds, char **stale, char **not_own) {
  g_autofree char *path = g_build_filename(dir, "resolved.yaml", NULL);
  g_autofree char *env_path = g_build_filename(dir, RUN_ENV, NULL);
  g_autofree char *text = NULL;
  g_autofree char *env_text = NULL;
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *provenance;
  const char *made_by;
  EmaSweepRecord *record;
  g_return_val_if_fail(sweep->digests != NULL && point < sweep->points->len, NULL);
  *stale = NULL;
  if (!ema_file_read_regular(path, EMA_FILE_MAX_TEXT, &text, NULL, NULL))
    return NULL;
  provenance = summary_provenance(dir, &parser);
  made_by = string_member(provenance, "build_id");
  if (!reuse_other_builds && made_by && g_strcmp0(made_by, build_id) != 0) {
    *stale = g_strdup("");
    return NULL;
  }
  /* the search paths before the resolved.yaml, which another EMA_SHARED_DIR changes too: the
   * note names what changed */
  if (provenance && (!ema_file_read_regular(env_path, EMA_FILE_MAX_TEXT, &env_text, NULL, NULL) ||
                     strcmp(env_text, run_env) != 0)) {
    *stale = run_env_change(env_text, run_env);
    return NULL;
  }
  if (!is_resolved_text(sweep, point, text))
    return NULL;
  if (provenance && (*stale = changed_input(provenance)) != NULL)
    return NULL;
  record = record_read(point, dir);
  if (record) {
    g_autofree char *why = summary_not_own(provenance, text);
    if (why) {
      ema_sweep_record_free(record);
      if (not_own)
        *not_own = g_steal_pointer(&why);
      return NULL;
    }
    record->resumed = TRUE;
  }
  return record;
}

EmaSweepRecord *ema_sweep_point_done(const EmaSweep *sweep, guint point, const char *dir,
                                     const char *build_id, const char *run_env,
                                     gboolean reuse_other_builds, char **stale) {
  return point_done(sweep, point, dir, build_id, run_env, reuse_other_builds, stale, NULL);
}

/* The record of a point complete in the runner's folder (ema_sweep_point_done),
 * counting those that are not, from another build, stale inputs or another run's summary. */
static EmaSweepRecord *complete_record(Runner *runner, guint point) {
  g_autofree char *dir = point_dir(runner, point);
  g_autofree char *stale = NULL;
  g_autofree char *not_own = NULL;
  EmaSweepRecord *record = point_done(runner->sweep, point, dir, runner->build_id, runner->run_env,
                                      runner->options->reuse_other_builds, &stale, &not_own);
  if (stale && *stale == '\0')
    runner->other_build++;
  else if (stale && runner->stale++ == 0)
    runner->stale_file = g_steal_pointer(&stale);
  if (not_own && runner->not_own++ == 0)
    runner->not_own_first =
        g_strdup_printf("%s: %s", ema_sweep_point_name(runner->sweep, point), not_own);
  return record;
}

/* What the sweep writes into its folder besides the points' folders, once
 * every point is done: what it writes describes their results. */
static const char *const sweep_results[] = {"sweep.csv", "plot.yaml", "plots", NULL};

/* The file in a sweep's folder that says which sweep the processes sharing it (--part, MPI
 * ranks) run: written by the first of them, while no other process holds the folder. */
#define SHARERS_FILE "sweep.parts"

/* How long a sharer waits for the folder's lock where another holds it alone: another sharer
 * writing SHARERS_FILE holds it a moment; a sweep without --part, for its whole run. */
#define SHARE_WAIT_S 10

/* The descriptor of the shared lock on the folder this process shares; held until it exits. */
static int shared_fd = -1;

/* What SHARERS_FILE says of this sweep: the points (their names and resolved.yaml), where their
 * runs find files by name (RUN_ENV), and the shares they are split into. Two processes that
 * write one folder together run the same sweep only where these are equal. */
static char *sharers_text(const EmaSweep *sweep, const EmaSweepRunOptions *options,
                          const char *run_env) {
  g_autoptr(GChecksum) checksum = g_checksum_new(G_CHECKSUM_SHA256);
  g_autofree char *file = g_canonicalize_filename(sweep->path, NULL);
  for (guint p = 0; p < sweep->points->len; p++) {
    const char *name = ema_sweep_point_name(sweep, p);
    g_checksum_update(checksum, (const guchar *) name, (gssize) strlen(name) + 1);
    g_checksum_update(checksum, g_array_index(sweep->digests, Digest, p).bytes, sizeof(Digest));
  }
  g_checksum_update(checksum, (const guchar *) run_env, (gssize) strlen(run_env));
  return g_strdup_printf("# the sweep that the processes writing this folder together run now\n"
                         "file=%s\nparts=%u\npoints=%u\ndefinition=%s\n",
                         file, options->ranks, sweep->points->len, g_checksum_get_string(checksum));
}

/* The value of KEY in a SHARERS_FILE TEXT; "?" where it has none. */
static char *sharers_value(const char *text, const char *key) {
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (guint i = 0; lines[i]; i++)
    if (g_str_has_prefix(lines[i], key) && lines[i][strlen(key)] == '=')
      return g_strdup(lines[i] + strlen(key) + 1);
  return g_strdup("?");
}

/* The SHARERS_FILE texts A and B name one sweep in the same shares (the sweep file's path may
 * differ: a copy of it, or another spelling of its path, defines the same points). */
static gboolean same_sharers(const char *a, const char *b) {
  static const char *const keys[] = {"parts", "points", "definition"};
  for (guint k = 0; k < G_N_ELEMENTS(keys); k++) {
    g_autofree char *x = sharers_value(a, keys[k]);
    g_autofree char *y = sharers_value(b, keys[k]);
    if (strcmp(x, y) != 0)
      return FALSE;
  }
  return TRUE;
}

/* DIR's marker lists NAME (a folder an ema-sim of before SHARERS_FILE claimed does not). */
static gboolean marker_lists(const char *dir, const char *name) {
  g_autofree char *marker = g_build_filename(dir, EMA_OUTPUT_MARKER, NULL);
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;
  if (!ema_file_read_regular(marker, EMA_FILE_MAX_TEXT, &text, NULL, NULL))
    return FALSE;
  lines = g_strsplit(text, "\n", -1);
  return g_strv_contains((const char *const *) lines, name);
}

/* Share DIR, claimed without its lock (SHARED), with the other processes of this sweep for as
 * long as this one lives: a shared flock on it, which a sweep without --part (its claim's
 * exclusive lock) refuses and is refused by, so that neither removes or reruns points under
 * the other, nor writes a sweep.csv the other's runs then contradict. The first to share it
 * (finding no other process there) writes SHARERS_FILE; a later one is refused where that
 * names another sweep: other points (another sweep file, --set or search paths) or other
 * shares (--part R/K with another K), whose points would be mixed with these or run twice. */
static gboolean share_sweep_dir(const EmaSweep *sweep, const char *dir,
                                const EmaSweepRunOptions *options, const char *run_env,
                                GError **error) {
  g_autofree char *path = g_build_filename(dir, SHARERS_FILE, NULL);
  g_autofree char *mine = sharers_text(sweep, options, run_env);
  g_autofree char *theirs = NULL;
  gboolean listed = marker_lists(dir, SHARERS_FILE);
  gint64 deadline = g_get_monotonic_time() + SHARE_WAIT_S * G_USEC_PER_SEC;
  int fd;
  if (shared_fd >= 0)
    return TRUE;
  fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int saved = errno;
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved),
                "cannot open output directory %s: %s", dir, g_strerror(saved));
    return FALSE;
  }
  /* alone there: no other process runs another sweep in it, and this one's is the sharers' */
  if (flock(fd, LOCK_EX | LOCK_NB) == 0 && listed && !g_file_set_contents(path, mine, -1, error)) {
    close(fd);
    return FALSE;
  }
  while (flock(fd, LOCK_SH | LOCK_NB) != 0) {
    if (errno == EINTR)
      continue;
    if (errno == ENOSYS || errno == EOPNOTSUPP || errno == ENOLCK) {
      /* a file system that takes no locks (Lustre mounted without flock): shared as before,
       * unguarded, and said so */
      g_printerr("ema-sim sweep: %s: the file system takes no locks (%s): this part is not "
                 "guarded against a sweep of the folder without --part, or of another sweep\n",
                 dir, g_strerror(errno));
      close(fd);
      return TRUE;
    }
    if (errno != EWOULDBLOCK || g_get_monotonic_time() > deadline) {
      int saved = errno;
      close(fd);
      if (saved == EWOULDBLOCK)
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                    "output directory %s is in use by another process of ema-sim or "
                    "ema-validate (a sweep of it without --part, writing there now): wait for "
                    "it to end, then run this one again",
                    dir);
      else
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved),
                    "cannot lock output directory %s: %s", dir, g_strerror(saved));
      return FALSE;
    }
    g_usleep(20000);
  }
  if (listed && ema_file_read_regular(path, EMA_FILE_MAX_TEXT, &theirs, NULL, NULL) &&
      !same_sharers(theirs, mine)) {
    g_autofree char *their_file = sharers_value(theirs, "file");
    g_autofree char *their_parts = sharers_value(theirs, "parts");
    g_autofree char *my_parts = sharers_value(mine, "parts");
    close(fd);
    if (strcmp(their_parts, my_parts) != 0)
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                  "output directory %s is written now by processes that split the sweep into %s "
                  "parts (--part R/%s, or %s MPI ranks), not %u: their shares and this one's "
                  "overlap; wait for them to end, or give the same K",
                  dir, their_parts, their_parts, their_parts, options->ranks);
    else
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                  "output directory %s is written now by processes of another sweep (from %s): "
                  "its points differ from this one's (another sweep file, --set or search "
                  "paths), and the two would be mixed there; wait for them to end, or give "
                  "another -o",
                  dir, their_file);
    return FALSE;
  }
  shared_fd = fd;
  return TRUE;
}

/* Claim the sweep's folder (output.h) as a sweep's, keeping the points an
 * earlier run of it finished and removing those of another definition of
 * it: it lists sweep_results, SHARERS_FILE and the points' folders. Shared by
 * the ranks (or --part processes) of one sweep (share_sweep_dir). */
static gboolean claim_sweep_dir(const EmaSweep *sweep, const char *dir,
                                const EmaSweepRunOptions *options, const char *run_env,
                                GError **error) {
  g_autoptr(GPtrArray) entries = g_ptr_array_new();
  for (guint i = 0; sweep_results[i]; i++)
    g_ptr_array_add(entries, (gpointer) sweep_results[i]);
  g_ptr_array_add(entries, (gpointer) SHARERS_FILE);
  for (guint p = 0; p < sweep->points->len; p++)
    g_ptr_array_add(entries, (gpointer) ema_sweep_point_name(sweep, p));
  g_ptr_array_add(entries, NULL);
  if (!ema_output_claim_dir_kind(dir, "sweep", (const char *const *) entries->pdata,
                                 EMA_OUTPUT_CLAIM_KEEP | EMA_OUTPUT_CLAIM_PRUNE |
                                     (options->ranks > 1 ? EMA_OUTPUT_CLAIM_SHARED : 0),
                                 error))
    return FALSE;
  return options->ranks == 1 || share_sweep_dir(sweep, dir, options, run_env, error);
}

GPtrArray *ema_sweep_run(EmaSweep *sweep, const char *dir, const EmaSweepRunOptions *options,
                         GError **error) {
  g_autoptr(GPtrArray) records = g_ptr_array_new_full(sweep->points->len, NULL);
  g_autoptr(GArray) queue = g_array_new(FALSE, FALSE, sizeof(guint));
  /* absolute: each point's run records its resolved.yaml's path in its provenance, which a
   * resume from another working directory must find again */
  g_autofree char *absolute = g_canonicalize_filename(dir, NULL);
  g_autofree char *build_id = NULL;
  g_autofree char *run_env = run_env_text(options);
  GPtrArray *mine;
  Runner runner = {0};
  guint tick = 0, signals[3];
  g_return_val_if_fail(sweep->digests != NULL, NULL);
  g_return_val_if_fail(options->jobs >= 1 && options->ranks >= 1, NULL);
  if (!claim_sweep_dir(sweep, dir, options, run_env, error))
    return NULL;
  g_ptr_array_set_size(records, (gint) sweep->points->len);
  runner.sweep = sweep;
  runner.dir = absolute;
  runner.options = options;
  runner.records = records;
  runner.queue = queue;
  runner.start = g_get_monotonic_time();
  runner.build_id = build_id = ema_output_build_id(options->program);
  runner.run_env = run_env;
  for (guint p = options->rank; p < sweep->points->len; p += options->ranks) {
    EmaSweepRecord *record = complete_record(&runner, p);
    runner.total++;
    if (record) {
      runner.resumed++;
      finish_point(&runner, p, record);
    } else
      g_array_append_val(runner.queue, p);
  }
  /* points run again: the sweep.csv and figures of the earlier results go now (all are written
   * again when every point is done), so that a sweep stopped halfway leaves none beside them */
  if (runner.queue->len > 0 && !ema_output_remove_entries(absolute, sweep_results, error)) {
    for (guint p = 0; p < records->len; p++)
      ema_sweep_record_free(records->pdata[p]);
    g_free(runner.stale_file);
    g_free(runner.not_own_first);
    return NULL;
  }
  if (runner.other_build > 0)
    fprintf(stderr,
            "ema-sim sweep: %u finished point%s made by another build of ema-sim or of its "
            "plugins: running %s again (--reuse keeps them)\n",
            runner.other_build, runner.other_build == 1 ? " was" : "s were",
            runner.other_build == 1 ? "it" : "them");
  if (runner.stale > 0)
    fprintf(stderr,
            "ema-sim sweep: %u finished point%s made from files that changed since (%s): "
            "running %s again\n",
            runner.stale, runner.stale == 1 ? " was" : "s were", runner.stale_file,
            runner.stale == 1 ? "it" : "them");
  if (runner.not_own > 0)
    fprintf(stderr,
            "ema-sim sweep: %u point%s a summary.json that %s resolved.yaml did not make "
            "(%s): running %s again\n",
            runner.not_own, runner.not_own == 1 ? " has" : "s have",
            runner.not_own == 1 ? "its" : "their", runner.not_own_first,
            runner.not_own == 1 ? "it" : "them");
  /* the default main context: child watches and the progress tick */
  runner.loop = g_main_loop_new(NULL, FALSE);
  if (options->progress) {
    tick = g_timeout_add(PROGRESS_INTERVAL_MS, on_progress_tick, &runner);
    draw_progress(&runner);
  }
  runner.children = g_hash_table_new(NULL, NULL);
  signals[0] = g_unix_signal_add(SIGINT, on_sigint, &runner);
  signals[1] = g_unix_signal_add(SIGTERM, on_sigterm, &runner);
  signals[2] = g_unix_signal_add(SIGHUP, on_sighup, &runner);
  launch_more(&runner);
  if (runner.running > 0)
    g_main_loop_run(runner.loop);
  for (guint i = 0; i < G_N_ELEMENTS(signals); i++)
    g_source_remove(signals[i]);
  g_hash_table_unref(runner.children);
  if (runner.signal) {
    /* every point process has exited: die of the signal, as without a
     * handler (the point directories are left for a resume) */
    clear_progress(&runner);
    fprintf(stderr,
            "ema-sim sweep: stopped by signal %d after waiting for the running points; "
            "run the same command to resume\n",
            runner.signal);
    signal(runner.signal, SIG_DFL);
    raise(runner.signal);
  }
  if (tick)
    g_source_remove(tick);
  clear_progress(&runner);
  if (runner.warned > WARNED_POINTS_SHOWN)
    fprintf(stderr, "ema-sim sweep: %u more points warned (their run.err)\n",
            runner.warned - WARNED_POINTS_SHOWN);
  g_main_loop_unref(runner.loop);
  for (guint i = runner.next; i < runner.queue->len; i++) {
    guint p = g_array_index(runner.queue, guint, i);
    records->pdata[p] = record_new(p, EMA_SWEEP_NOT_RUN);
  }
  g_free(runner.stale_file);
  g_free(runner.not_own_first);
  mine = g_ptr_array_new_with_free_func((GDestroyNotify) ema_sweep_record_free);
  for (guint p = options->rank; p < sweep->points->len; p += options->ranks)
    g_ptr_array_add(mine, g_steal_pointer(&records->pdata[p]));
  return mine;
}

/* ---- results ---------------------------------------------------------------- */

/* The metrics a variant's point is compared on with the baseline's point of the same swept
 * values and repeat (sweep.csv's *_vs_BASE_pct columns). */
static const char *const paired_suffixes[] = {".throughput_tok_s", ".ttft_p50_ms", ".ttft_p99_ms",
                                              ".tpot_p99_ms", ".e2e_p99_ms"};

/* The baseline variant: the one named static, else the first; -1 without variants. */
static gint baseline_variant(const EmaSweep *sweep) {
  if (sweep->variants == NULL)
    return -1;
  for (guint v = 0; v < sweep->variants->keys->len; v++)
    if (strcmp(((const EmaNode *) sweep->variants->keys->pdata[v])->value, "static") == 0)
      return (gint) v;
  return 0;
}

/* COLUMN (a metric) is one compared with the baseline's (paired_suffixes). */
static gboolean is_paired(const char *column) {
  for (guint k = 0; k < G_N_ELEMENTS(paired_suffixes); k++)
    if (g_str_has_suffix(column, paired_suffixes[k]))
      return TRUE;
  return FALSE;
}

/* The name of COLUMN's change over the baseline's point: COLUMN_vs_BASELINE_pct. */
static char *paired_column(const EmaSweep *sweep, const char *column) {
  return g_strdup_printf(
      "%s_vs_%s_pct", column,
      ((const EmaNode *) sweep->variants->keys->pdata[baseline_variant(sweep)])->value);
}

/* COLUMN's value in RECORD as a number; NAN where absent. */
static double record_number(const EmaSweepRecord *record, const char *column) {
  for (guint m = 0; record && m < record->names->len; m++)
    if (strcmp(record->names->pdata[m], column) == 0)
      return g_ascii_strtod(record->values->pdata[m], NULL);
  return NAN;
}

/* Append to CSV, for point P, each paired column's change over the
 * baseline's point (empty where either lacks it or the baseline is 0). */
static void append_paired(GString *csv, const EmaSweep *sweep, EmaSweepRecord **by_point, guint p,
                          GPtrArray *paired) {
  guint per_variant = sweep->points->len / sweep->variants->items->len;
  guint q = (guint) baseline_variant(sweep) * per_variant + p % per_variant;
  for (guint c = 0; c < paired->len; c++) {
    double x = record_number(by_point[p], paired->pdata[c]);
    double b = record_number(by_point[q], paired->pdata[c]);
    g_string_append_c(csv, ',');
    if (isfinite(x) && isfinite(b) && b != 0)
      g_string_append_printf(csv, "%.6g", 100 * (x / b - 1));
  }
}

/* KEY: VALUE, quoted as the loader reads it back (g_strescape's octal escapes of non-ASCII
 * bytes are no YAML: a title in UTF-8 left a plot.yaml that ema-sim plot refused) */
static void yaml_string(GString *out, const char *key, const char *value) {
  g_string_append_printf(out, "%s: ", key);
  ema_params_append_quoted(out, value);
  g_string_append_c(out, '\n');
}

gboolean ema_sweep_write_results(const EmaSweep *sweep, const char *dir, GPtrArray *all,
                                 GError **error) {
  guint n = sweep->points->len;
  g_autofree EmaSweepRecord **by_point = g_new0(EmaSweepRecord *, n);
  g_autoptr(GPtrArray) columns = g_ptr_array_new();
  g_autoptr(GPtrArray) paired = g_ptr_array_new(); /* the columns compared with the baseline */
  g_autoptr(GHashTable) known = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GString) csv = g_string_new(NULL);
  g_autoptr(GString) plot = g_string_new(NULL);
  g_autofree char *csv_path = g_build_filename(dir, "sweep.csv", NULL);
  g_autofree char *plot_path = g_build_filename(dir, "plot.yaml", NULL);
  const EmaNode *plot_title = sweep->plot ? ema_node_get(sweep->plot, "title") : NULL;
  for (guint i = 0; i < all->len; i++) {
    EmaSweepRecord *record = all->pdata[i];
    g_return_val_if_fail(record->point < n && by_point[record->point] == NULL, FALSE);
    by_point[record->point] = record;
  }
  /* metric columns in the order they first appear, points in order */
  for (guint p = 0; p < n; p++)
    for (guint m = 0; by_point[p] && m < by_point[p]->names->len; m++) {
      const char *name = by_point[p]->names->pdata[m];
      if (!g_hash_table_contains(known, name)) {
        g_hash_table_add(known, (gpointer) name);
        g_ptr_array_add(columns, (gpointer) name);
      }
    }
  g_string_append(csv, "point,variant");
  for (guint a = 0; a < sweep->axes->len; a++) {
    g_string_append_c(csv, ',');
    ema_file_csv_field(csv, ((const Axis *) sweep->axes->pdata[a])->path);
  }
  g_string_append(csv, ",repeat,seed,status");
  for (guint c = 0; c < columns->len; c++) {
    g_string_append_c(csv, ',');
    ema_file_csv_field(csv, columns->pdata[c]);
  }
  /* with variants, each point against the baseline's of the same values and repeat */
  for (guint c = 0; sweep->variants && sweep->variants->items->len > 1 && c < columns->len; c++)
    if (is_paired(columns->pdata[c])) {
      g_autofree char *name = paired_column(sweep, columns->pdata[c]);
      g_ptr_array_add(paired, columns->pdata[c]);
      g_string_append_c(csv, ',');
      ema_file_csv_field(csv, name);
    }
  g_string_append_c(csv, '\n');
  for (guint p = 0; p < n; p++) {
    const Point *point = &g_array_index(sweep->points, Point, p);
    const EmaSweepRecord *record = by_point[p];
    g_autoptr(GHashTable) values = g_hash_table_new(g_str_hash, g_str_equal);
    ema_file_csv_field(csv, point->name);
    g_string_append_c(csv, ',');
    ema_file_csv_field(csv, variant_name(sweep, point));
    for (guint a = 0; a < sweep->axes->len; a++) {
      const Axis *axis = sweep->axes->pdata[a];
      g_autofree char *text = flow_text(axis->values->items->pdata[point->value[a]]);
      g_string_append_c(csv, ',');
      ema_file_csv_field(csv, text);
    }
    g_string_append_printf(csv, ",%u,%" G_GINT64_FORMAT ",%s", point->repeat,
                           g_array_index(sweep->seeds, gint64, p),
                           ema_sweep_status_name(record ? record->status : EMA_SWEEP_NOT_RUN));
    for (guint m = 0; record && m < record->names->len; m++)
      g_hash_table_insert(values, record->names->pdata[m], record->values->pdata[m]);
    for (guint c = 0; c < columns->len; c++) {
      const char *value = g_hash_table_lookup(values, columns->pdata[c]);
      g_string_append_c(csv, ',');
      ema_file_csv_field(csv, value ? value : "");
    }
    if (paired->len)
      append_paired(csv, sweep, by_point, p, paired);
    g_string_append_c(csv, '\n');
  }
  if (!g_file_set_contents(csv_path, csv->str, (gssize) csv->len, error))
    return FALSE;

  g_string_append(plot, "# How `ema-sim plot` draws sweep.csv (from the sweep file's plot: key;\n"
                        "# edit it and run ema-sim plot again).\n");
  yaml_string(plot, "title", plot_title ? plot_title->value : sweep->name);
  for (guint i = 0; sweep->plot && i < sweep->plot->keys->len; i++) {
    const EmaNode *key = sweep->plot->keys->pdata[i];
    const EmaNode *value = sweep->plot->items->pdata[i];
    if (strcmp(key->value, "title") != 0)
      yaml_string(plot, key->value, value->value);
  }
  return g_file_set_contents(plot_path, plot->str, (gssize) plot->len, error);
}

/* ---- the plot settings, checked before any point runs ----------------------------- */

/* sweep.csv's columns before the metrics (ema_sweep_write_results), besides the swept paths */
static const char *const fixed_columns[] = {"point", "variant", "repeat", "seed", "status", NULL};

static void add_column(GHashTable *columns, const char *prefix, const char *name) {
  g_hash_table_add(columns, prefix ? g_strconcat(prefix, ".", name, NULL) : g_strdup(name));
}

/* Into COLUMNS, the columns of the op (or decode scenario) NAME. */
static void add_op_columns(GHashTable *columns, const char *name) {
  for (guint c = 0; c < G_N_ELEMENTS(op_columns); c++)
    add_column(columns, name, op_columns[c]);
  add_column(columns, NULL, "expectations_missed");
}

/* Into COLUMNS, every metric column that record_read() may take from the summary.json of a point
 * of EXPERIMENT; into TENANTS, its tenants' names. */
static void add_metric_columns(GHashTable *columns, GHashTable *tenants,
                               const EmaExperiment *experiment) {
  guint n_tenants = experiment->tenants ? experiment->tenants->len : 0;
  for (guint t = 0; t < n_tenants; t++) {
    const char *name = g_array_index(experiment->tenants, EmaTenantSpec, t).name;
    g_hash_table_add(tenants, g_strdup(name));
    for (guint c = 0; c < G_N_ELEMENTS(tenant_columns); c++)
      add_column(columns, name, tenant_columns[c]);
    for (guint l = 0; l < G_N_ELEMENTS(latency_columns); l++)
      for (guint q = 0; q < G_N_ELEMENTS(latency_stats); q++) {
        g_autofree char *column = latency_column(l, q);
        add_column(columns, name, column);
      }
  }
  for (guint c = 0; n_tenants > 0 && c < G_N_ELEMENTS(pool_columns); c++)
    add_column(columns, "pool", pool_columns[c]);
  for (guint o = 0; experiment->ops && o < experiment->ops->len; o++)
    add_op_columns(columns, g_array_index(experiment->ops, EmaOpSpec, o).name);
  for (guint d = 0; experiment->decode && d < experiment->decode->len; d++)
    add_op_columns(columns, g_array_index(experiment->decode, EmaDecodeScenarioSpec, d).name);
  for (guint c = 0; c < G_N_ELEMENTS(sim_columns); c++)
    add_column(columns, "sim", sim_columns[c][1]);
}

static gint compare_text(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* The keys of the set SET, sorted and joined by ", ". */
static char *joined_keys(GHashTable *set) {
  g_autoptr(GPtrArray) keys = g_ptr_array_new();
  GHashTableIter iter;
  gpointer key;
  g_hash_table_iter_init(&iter, set);
  while (g_hash_table_iter_next(&iter, &key, NULL))
    g_ptr_array_add(keys, key);
  g_ptr_array_sort(keys, compare_text);
  g_ptr_array_add(keys, NULL);
  return g_strjoinv(", ", (char **) keys->pdata);
}

/* NAME is a column sweep.csv will have, of a sweep whose points give the metric COLUMNS. */
static gboolean is_column(const EmaSweep *sweep, GHashTable *columns, const char *name) {
  GHashTableIter iter;
  gpointer column;
  if (g_strv_contains(fixed_columns, name) || g_hash_table_contains(columns, name))
    return TRUE;
  for (guint a = 0; a < sweep->axes->len; a++)
    if (strcmp(((const Axis *) sweep->axes->pdata[a])->path, name) == 0)
      return TRUE;
  g_hash_table_iter_init(&iter, columns);
  while (sweep->variants && sweep->variants->items->len > 1 &&
         g_hash_table_iter_next(&iter, &column, NULL))
    if (is_paired(column)) {
      g_autofree char *paired = paired_column(sweep, column);
      if (strcmp(paired, name) == 0)
        return TRUE;
    }
  return FALSE;
}

/* The sweep file's plot settings against the points (add_metric_columns: the metric COLUMNS and
 * the TENANTS they have): x and by name a column of sweep.csv (by may be none), tenant a tenant
 * or all, as ema-sim plot needs them once every point has run. */
static gboolean check_plot(const EmaSweep *sweep, GHashTable *columns, GHashTable *tenants,
                           GError **error) {
  for (guint i = 0; sweep->plot && i < sweep->plot->keys->len; i++) {
    const char *key = ((const EmaNode *) sweep->plot->keys->pdata[i])->value;
    const EmaNode *node = sweep->plot->items->pdata[i];
    const char *value = node->value;
    g_autofree char *path = g_strconcat("plot.", key, NULL);
    if (strcmp(key, "tenant") == 0 && strcmp(value, "all") != 0 &&
        !g_hash_table_contains(tenants, value)) {
      g_autofree char *known = g_hash_table_size(tenants) > 0
                                   ? joined_keys(tenants)
                                   : g_strdup("none, its points run ops");
      g_autofree char *quoted = ema_file_quote_cut(value, -1);
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, node, path,
                     "no tenant '%s' in the sweep's points (tenants: %s; or all)", quoted, known);
      return FALSE;
    }
    if ((strcmp(key, "x") == 0 || (strcmp(key, "by") == 0 && strcmp(value, "none") != 0)) &&
        !is_column(sweep, columns, value)) {
      g_autoptr(GString) swept = g_string_new(NULL);
      for (guint a = 0; a < sweep->axes->len; a++)
        g_string_append_printf(swept, "%s%s", a ? ", " : "a swept path: ",
                               ((const Axis *) sweep->axes->pdata[a])->path);
      g_autofree char *quoted = ema_file_quote_cut(value, -1);
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, node, path,
                     "'%s' is not a column of sweep.csv (give %s%svariant, repeat, seed, or a "
                     "metric column such as %s)",
                     quoted, swept->str, swept->len ? "; or " : "",
                     g_hash_table_size(tenants) > 0 ? "TENANT.throughput_tok_s" : "OP.seconds");
      return FALSE;
    }
  }
  return TRUE;
}
