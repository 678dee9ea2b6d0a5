/* node.h: a YAML document as a small tree of nodes that remember where they
 * came from (file, line, column), so that every later error can point at the
 * text. Loading handles the `!include PATH` tag (PATH relative to the file
 * that includes it; include cycles are errors). Command-line overrides
 * (`--set a.b.c=value`) edit the tree before it is bound to structs.
 *
 * Errors use EMA_CONFIG_ERROR and start with "file:line:col: ". */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The deepest a tree may be (maps and lists within one another, across
 * includes); deeper input is a syntax error, not a deep recursion. */
#define EMA_NODE_MAX_DEPTH 64

/* The most nodes one load builds (a file, its includes and theirs, each key and value counted;
 * about 100 bytes each), and the most `!include`s it expands (each time one is met: a file
 * included twice counts twice). EMA's largest file has a few thousand nodes and an experiment 72
 * includes; a generated 60 MB list took 62 s and 3.3 GB to load, and ten files each including
 * the next ten times expanded 10^10 includes: errors at the node or include past the limit. */
#define EMA_NODE_MAX_NODES (1u << 20)
#define EMA_NODE_MAX_INCLUDES 1024

#define EMA_CONFIG_ERROR (ema_config_error_quark())
GQuark ema_config_error_quark(void);

typedef enum {
  EMA_CONFIG_ERROR_SYNTAX,  /* malformed YAML */
  EMA_CONFIG_ERROR_IO,      /* file missing or unreadable */
  EMA_CONFIG_ERROR_KEY,     /* unknown or missing key */
  EMA_CONFIG_ERROR_TYPE,    /* wrong kind of node or value */
  EMA_CONFIG_ERROR_RANGE,   /* value outside its allowed range */
  EMA_CONFIG_ERROR_INVALID, /* inconsistent values */
} EmaConfigError;

typedef enum {
  EMA_NODE_SCALAR,
  EMA_NODE_MAP,
  EMA_NODE_SEQ,
} EmaNodeKind;

typedef struct _EmaNode EmaNode;
struct _EmaNode {
  EmaNodeKind kind;
  char *value;      /* SCALAR: the text; NULL for a YAML null (~ or empty) */
  GPtrArray *keys;  /* MAP: key nodes (scalars), parallel to items */
  GPtrArray *items; /* MAP: values; SEQ: elements */
  char *file;       /* GRefString */
  guint line, col;  /* 1-based */
};

EmaNode *ema_node_new_scalar(const char *value, const char *file, guint line, guint col);
EmaNode *ema_node_new_map(const char *file, guint line, guint col);
EmaNode *ema_node_new_seq(const char *file, guint line, guint col);
EmaNode *ema_node_copy(const EmaNode *node);
void ema_node_free(EmaNode *node);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaNode, ema_node_free)

/* Parse a whole file (one document). */
EmaNode *ema_node_load_file(const char *path, GError **error);
/* Parse TEXT; errors and node locations name it NAME; includes are relative
 * to BASE_DIR (NULL: the current directory). */
EmaNode *ema_node_load_string(const char *text, const char *name, const char *base_dir,
                              GError **error);

/* MAP lookups: KEY's value (or key node), NULL when MAP has no KEY or is
 * not a map (NULL, a scalar such as an empty `engine:`, a sequence). */
EmaNode *ema_node_get(const EmaNode *map, const char *key);
const EmaNode *ema_node_get_key(const EmaNode *map, const char *key);
/* Replace or add KEY's value (takes VALUE). */
void ema_node_set(EmaNode *map, const char *key, EmaNode *value);

/* Whether the key path of override INNER ("a.b.c=value", or a bare path) names a place strictly
 * inside the one of OUTER ("a.b=..."): OUTER, applied after INNER, replaces what INNER set. List
 * indices compare as numbers ("tenants.00" is "tenants.0"). */
gboolean ema_node_override_within(const char *inner, const char *outer);
/* Whether overrides A and B name the same key path (indices as numbers, as above). */
gboolean ema_node_override_same(const char *a, const char *b);
/* TRUE, with ERROR at "--set:I+1:1", where override I of OVERRIDES names the key path of an
 * earlier one ("--set duration=10s --set duration=20s" kept the last, silently); a key inside
 * an earlier one's (a map, then one of its keys) is not one. */
gboolean ema_node_override_repeated(const char *const *overrides, guint i, GError **error);

/* Apply one override "a.b.c=value" (value is parsed as YAML, so lists and
 * maps are allowed). Map keys that do not exist are added (binding then
 * rejects unknown ones); list indices must exist. ORDINAL numbers the
 * override on the command line; its errors read "--set:ORDINAL:COL: ...". */
gboolean ema_node_apply_override(EmaNode *root, const char *assignment, guint ordinal,
                                 GError **error);

/* Set ERROR to "file:line:col: PATH: message" for NODE. PATH may be NULL. */
void ema_node_error(GError **error, gint code, const EmaNode *node, const char *path,
                    const char *format, ...) G_GNUC_PRINTF(5, 6);

G_END_DECLS
