/* params.h: the one parameter-table mechanism. A table lists a struct's
 * fields (key, type, offset, default, range, help); the same table binds a
 * YAML map to the struct (defaults, unit parsing, range checks, unknown keys
 * rejected with the list of valid ones), writes the struct back as YAML with
 * every value explicit (resolved.yaml), and describes the parameters for
 * `describe` commands. Defaults are text parsed by the same parsers as the
 * YAML, so a bad default is caught by the tests, not at a user's run. */
#pragma once

#include <glib.h>

#include "ema/core/node.h"

G_BEGIN_DECLS

typedef enum {
  EMA_PARAM_BOOL,      /* gboolean: true/false */
  EMA_PARAM_INT,       /* gint64 */
  EMA_PARAM_DOUBLE,    /* double, no unit */
  EMA_PARAM_SIZE,      /* guint64 bytes ("2MiB") */
  EMA_PARAM_BANDWIDTH, /* double B/s ("397GB/s") */
  EMA_PARAM_DURATION,  /* gint64 ns ("6.5us") */
  EMA_PARAM_FLOPS,     /* double FLOP/s ("989TFLOP/s") */
  EMA_PARAM_FRACTION,  /* double ("5%" or "0.05") */
  EMA_PARAM_STRING,    /* char *, owned by the struct */
  EMA_PARAM_ENUM,      /* int: index into choices */
  EMA_PARAM_STRUCT,    /* an embedded struct bound by `table` */
  EMA_PARAM_LIST,      /* GArray * of structs bound by `table` */
  EMA_PARAM_OBJECT,    /* gpointer to a struct whose table `table_for` picks from the
                          fields bound before it (e.g. a policy's parameters, chosen by
                          the policy's name); NULL when that table is NULL */
} EmaParamType;

typedef enum {
  EMA_PARAM_REQUIRED = 1 << 0,  /* must be given (no default) */
  EMA_PARAM_OPTIONAL = 1 << 1,  /* may be absent: the field stays zero and is not written (a map:
                                    all of it zero, then not written) */
  EMA_PARAM_KEEP_ZERO = 1 << 2, /* with OPTIONAL: written even when zero, as its absence is filled
                                   from elsewhere (an engine profile's default) after binding, so
                                   a zero given is a value of its own that a written file keeps */
} EmaParamFlags;

typedef struct _EmaParamTable EmaParamTable;

/* Turns a scalar given where a STRUCT is expected (a name such as
 * `server: h200x2`) into the node tree to bind; AT is the scalar, PATH its
 * dotted key path (for messages). */
typedef EmaNode *(*EmaParamResolveFunc)(const EmaNode *at, const char *path, GError **error);

/* OBJECT: the table of the field, from OBJECT (the enclosing struct, whose
 * earlier fields are bound); NULL when there is nothing to bind. */
typedef const struct _EmaParamTable *(*EmaParamTableForFunc)(gconstpointer object);

typedef struct {
  const char *key;
  EmaParamType type;
  gsize offset;
  const char *default_value; /* NULL for REQUIRED, OPTIONAL, STRUCT and LIST */
  double min, max;           /* inclusive range, checked when min < max */
  const char *help;
  const char *const *choices;  /* ENUM: NULL-terminated */
  const EmaParamTable *table;  /* STRUCT and LIST */
  EmaParamResolveFunc resolve; /* STRUCT: optional, for names */
  guint flags;
  EmaParamTableForFunc table_for; /* OBJECT */
} EmaParam;

/* Cross-field check after a struct is bound, before its OBJECT parameters (whose tables follow
 * the values it checks); NODE is its map. */
typedef gboolean (*EmaParamCheckFunc)(gpointer object, const EmaNode *node, const char *path,
                                      GError **error);

struct _EmaParamTable {
  const char *name; /* what the struct is, for messages ("server", "op") */
  gsize size;       /* sizeof the struct */
  const EmaParam *params;
  guint n_params;
  EmaParamCheckFunc check;
};

/* Expand resolvable names (STRUCT params with a resolve function given as a
 * scalar) in NODE in place, so that overrides can reach inside them. */
gboolean ema_params_expand(const EmaParamTable *table, EmaNode *node, GError **error);

/* Bind NODE (a map, or NULL for "all defaults") into OBJECT, which must be
 * zeroed. PATH is the dotted key path of NODE for messages (NULL at the
 * root). On failure OBJECT may be half-filled: clear it. */
gboolean ema_params_bind(const EmaParamTable *table, gpointer object, const EmaNode *node,
                         const char *path, GError **error);
/* Load the YAML file PATH and bind it into a newly allocated struct of
 * TABLE->size bytes; NULL with a located error. Free it with
 * ema_params_free(). */
gpointer ema_params_load_file(const EmaParamTable *table, const char *path, GError **error);
/* The same of the tree ROOT (taken: freed here; NULL: ERROR already set, NULL returned). */
gpointer ema_params_load_tree(const EmaParamTable *table, EmaNode *root, GError **error);
/* Clear and free a struct from ema_params_load_file() (NULL is fine). */
void ema_params_free(const EmaParamTable *table, gpointer object);

/* Free what bind allocated inside OBJECT (strings, lists, objects) and zero
 * it. Fields are cleared last to first, so an OBJECT's table_for still sees
 * the fields before it. */
void ema_params_clear(const EmaParamTable *table, gpointer object);

/* Append OBJECT as a YAML block map at INDENT spaces, every value explicit. */
void ema_params_write_yaml(const EmaParamTable *table, gconstpointer object, GString *out,
                           guint indent);
/* Append TEXT as a YAML double-quoted scalar that the loader reads back as
 * TEXT: quotes and backslashes escaped, control characters as \n or \xNN,
 * every other byte (UTF-8 included) as it is. */
void ema_params_append_quoted(GString *out, const char *text);
/* Append one line per parameter: key, type, default, range, help. */
void ema_params_describe(const EmaParamTable *table, GString *out, guint indent);

/* Check that every default in TABLE (and its sub-tables) parses and is in
 * range; for tests and plugin loading. */
gboolean ema_params_check_defaults(const EmaParamTable *table, GError **error);

/* The bytes PARAM's field takes in its struct (a STRUCT: its table's size;
 * 0 if that table is missing or PARAM's type is unknown). */
gsize ema_params_field_size(const EmaParam *param);

/* Parse one scalar value of a given type, as bind does (no location in the
 * error). */
gboolean ema_params_parse_value(const EmaParam *param, const char *text, gpointer field,
                                GError **error);

#define EMA_PARAMS_N(array) ((guint) G_N_ELEMENTS(array))

G_END_DECLS
