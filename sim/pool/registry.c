/* registry.c: the process-wide registry of policies and named compositions
 * (registry.h). The first call of any public function registers the
 * built-in table (policies/builtin.c) with origin "built-in"; external
 * modules are added by path or by directory and stay loaded for the life of
 * the process.
 *
 * Invariants:
 *   - a module is checked as a whole before any of its policies is
 *     registered: either all of them are registered or none is (and a
 *     refused shared object is closed again);
 *   - within a kind, names are unique: a plugin can never shadow a built-in
 *     or another plugin;
 *   - every list handed out, and every list of names in a message, is sorted
 *     by name (strcmp, so independent of the locale); the hash tables are
 *     used for lookups only, never iterated;
 *   - loading the same shared object twice (the same directory given twice,
 *     or by path and by directory) registers it once;
 *   - a module symbol whose size the dynamic symbol table gives (st_size)
 *     is refused when smaller than EmaPolicyModule, before it is read;
 *     every parameter field lies inside its struct (offset + size). */
/* dladdr1 (the size of the module symbol) is a GNU extension: meson builds with _GNU_SOURCE */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include <gmodule.h>

#include "ema/core/file.h"
#include "ema/pool/guard.h"
#include "ema/pool/registry.h"

#define EMA_POLICY_KINDS 3
#define MAX_STATE_SIZE ((gsize) 1 << 20) /* state_size and parameter structs */
#define MAX_POLICIES_PER_KIND 1024       /* guards a list without its NULL */
#define MODULE_SYMBOL "ema_policy_module"

typedef struct {
  GPtrArray *policies[EMA_POLICY_KINDS]; /* EmaPolicyInfo *, sorted by name */
  GHashTable *names[EMA_POLICY_KINDS];   /* name -> EmaPolicyInfo * (lookup only) */
  GPtrArray *compositions;               /* const EmaPolicyComposition *, sorted by name */
  GHashTable *composition_names;         /* name -> composition (lookup only) */
  GPtrArray *modules;                    /* GModule * accepted, never closed */
} Registry;

static Registry *registry;

GQuark ema_policy_error_quark(void) {
  return g_quark_from_static_string("ema-policy-error-quark");
}

const char *ema_policy_kind_name(EmaPolicyKind kind) {
  switch (kind) {
  case EMA_POLICY_BORROW:
    return "borrow";
  case EMA_POLICY_PREFETCH:
    return "prefetch";
  case EMA_POLICY_RECLAIM:
    return "reclaim";
  }
  g_return_val_if_reached("unknown");
}

/* The members every ops struct shares, read through its own type. */
typedef struct {
  guint abi_version;
  const char *name;
  const char *summary;
  const EmaParamTable *params;
  gsize state_size;
  gboolean has_decide;
  const gpointer *reserved;
  guint n_reserved; /* slots still reserved in its kind's layout */
} OpsFields;

/* The ops of KIND at INDEX of MODULE's list, or NULL at the end. */
static gconstpointer module_ops(const EmaPolicyModule *module, EmaPolicyKind kind, guint index) {
  switch (kind) {
  case EMA_POLICY_BORROW:
    return module->borrow ? module->borrow[index] : NULL;
  case EMA_POLICY_PREFETCH:
    return module->prefetch ? module->prefetch[index] : NULL;
  case EMA_POLICY_RECLAIM:
    return module->reclaim ? module->reclaim[index] : NULL;
  }
  return NULL;
}

static guint ops_abi_version(gconstpointer ops) {
  /* every ops struct starts with abi_version, whatever its version */
  return *(const guint *) ops;
}

/* The shared members of O, an ops struct of any kind. */
#define OPS_FIELDS(o)                                                                              \
  (OpsFields) {                                                                                    \
    .abi_version = (o)->abi_version, .name = (o)->name, .summary = (o)->summary,                   \
    .params = (o)->params, .state_size = (o)->state_size, .has_decide = (o)->decide != NULL,       \
    .reserved = (o)->reserved, .n_reserved = G_N_ELEMENTS((o)->reserved)                           \
  }

/* Only valid once the ABI version is known to match. */
static OpsFields ops_fields(EmaPolicyKind kind, gconstpointer ops) {
  switch (kind) {
  case EMA_POLICY_BORROW:
    return OPS_FIELDS((const EmaBorrowPolicyOps *) ops);
  case EMA_POLICY_PREFETCH:
    return OPS_FIELDS((const EmaPrefetchPolicyOps *) ops);
  case EMA_POLICY_RECLAIM:
    return OPS_FIELDS((const EmaReclaimPolicyOps *) ops);
  }
  g_return_val_if_reached((OpsFields){0});
}

static gboolean name_is_valid(const char *name) {
  /* a letter or digit first: "-" or "-x" would read as an option on a command line */
  if (name == NULL || !((*name >= 'a' && *name <= 'z') || (*name >= '0' && *name <= '9')))
    return FALSE;
  for (const char *c = name; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-'))
      return FALSE;
  return TRUE;
}

static int compare_info(gconstpointer a, gconstpointer b) {
  const EmaPolicyInfo *x = *(const EmaPolicyInfo *const *) a;
  const EmaPolicyInfo *y = *(const EmaPolicyInfo *const *) b;
  return strcmp(x->name, y->name);
}

static int compare_composition(gconstpointer a, gconstpointer b) {
  const EmaPolicyComposition *x = *(const EmaPolicyComposition *const *) a;
  const EmaPolicyComposition *y = *(const EmaPolicyComposition *const *) b;
  return strcmp(x->name, y->name);
}

/* Prefix of every message about one policy: "ORIGIN: KIND policy 'NAME'";
 * a name that is not valid is shown escaped, so the message stays one line. */
static char *policy_label(const char *origin, EmaPolicyKind kind, const char *name) {
  g_autofree char *shown = g_strescape(name, NULL);
  return g_strdup_printf("%s: %s policy '%s'", origin, ema_policy_kind_name(kind), shown);
}

/* How deep parameter structs may nest in a plugin's table (a table that
 * contains itself would otherwise be walked forever). */
#define MAX_PARAM_NESTING 8

/* TABLE's size, and every field's type and extent (offset + size within the
 * struct), down its nested STRUCT and LIST tables. */
static gboolean check_param_layout(const char *label, const EmaParamTable *table, guint depth,
                                   GError **error) {
  if (depth > MAX_PARAM_NESTING) {
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                "%s: parameter structs nested deeper than %d levels", label, MAX_PARAM_NESTING);
    return FALSE;
  }
  if (table->size == 0 || table->size >= MAX_STATE_SIZE) {
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                "%s: parameter struct size %" G_GSIZE_FORMAT " is not between 1 byte and 1 MiB",
                label, table->size);
    return FALSE;
  }
  if (table->n_params > 0 && table->params == NULL) {
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                "%s: parameter table lists %u parameters but has none", label, table->n_params);
    return FALSE;
  }
  for (guint i = 0; i < table->n_params; i++) {
    const EmaParam *param = &table->params[i];
    gsize field_size;
    if (param->key == NULL || *param->key == '\0') {
      g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID, "%s: parameter %u has no key",
                  label, i + 1);
      return FALSE;
    }
    if ((guint) param->type > EMA_PARAM_OBJECT) {
      g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                  "%s: parameter '%s' has an unknown type (%d)", label, param->key,
                  (int) param->type);
      return FALSE;
    }
    /* a key is one name of a YAML map (a '.' would read as a path, a blank as two words) */
    for (const char *c = param->key; *c; c++)
      if (!(g_ascii_isalnum(*c) || *c == '_' || *c == '-')) {
        g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                    "%s: parameter key '%s': only letters, digits, '_' and '-' are allowed", label,
                    param->key);
        return FALSE;
      }
    /* what binding a value of its type reads from the table (a missing one crashed the run) */
    if (((param->type == EMA_PARAM_STRUCT || param->type == EMA_PARAM_LIST) &&
         param->table == NULL) ||
        (param->type == EMA_PARAM_OBJECT && param->table_for == NULL) ||
        (param->type == EMA_PARAM_ENUM && param->choices == NULL)) {
      g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID, "%s: parameter '%s' has no %s",
                  label, param->key,
                  param->type == EMA_PARAM_OBJECT ? "table_for"
                  : param->type == EMA_PARAM_ENUM ? "choices"
                                                  : "table");
      return FALSE;
    }
    if ((param->type == EMA_PARAM_STRUCT || param->type == EMA_PARAM_LIST) &&
        !check_param_layout(label, param->table, depth + 1, error))
      return FALSE;
    field_size = ema_params_field_size(param);
    if (param->offset >= table->size || field_size > table->size - param->offset) {
      g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                  "%s: parameter '%s' (%" G_GSIZE_FORMAT " bytes at offset %" G_GSIZE_FORMAT
                  ") does not fit in the %" G_GSIZE_FORMAT "-byte parameter struct",
                  label, param->key, field_size, param->offset, table->size);
      return FALSE;
    }
    /* each key once, each field its own bytes (two keys on one field set both) */
    for (guint k = 0; k < i; k++) {
      const EmaParam *other = &table->params[k];
      gsize other_size = ema_params_field_size(other);
      if (strcmp(other->key, param->key) == 0) {
        g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                    "%s: parameter '%s' is listed twice", label, param->key);
        return FALSE;
      }
      if (param->offset < other->offset + other_size &&
          other->offset < param->offset + field_size) {
        g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                    "%s: parameters '%s' and '%s' share bytes of the parameter struct", label,
                    other->key, param->key);
        return FALSE;
      }
    }
  }
  return TRUE;
}

static gboolean check_param_table(const char *label, const EmaParamTable *table, GError **error) {
  GError *inner = NULL;
  if (!check_param_layout(label, table, 0, error))
    return FALSE;
  if (!ema_params_check_defaults(table, &inner)) {
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID, "%s: %s", label, inner->message);
    g_error_free(inner);
    return FALSE;
  }
  return TRUE;
}

/* Check one ops struct of KIND (position INDEX in the module's list). */
static gboolean check_ops(const char *origin, EmaPolicyKind kind, guint index, gconstpointer ops,
                          GError **error) {
  g_autofree char *label = NULL;
  OpsFields f;
  guint abi = ops_abi_version(ops);

  if (abi != EMA_POLICY_ABI_VERSION) {
    /* with another ABI only abi_version's place is known: name it by position */
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_ABI,
                "%s: %s policy #%u: ABI version %u, expected %u", origin,
                ema_policy_kind_name(kind), index + 1, abi, EMA_POLICY_ABI_VERSION);
    return FALSE;
  }
  f = ops_fields(kind, ops);
  if (f.name == NULL || *f.name == '\0') {
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID, "%s: %s policy #%u: no name",
                origin, ema_policy_kind_name(kind), index + 1);
    return FALSE;
  }
  label = policy_label(origin, kind, f.name);
  if (!name_is_valid(f.name)) {
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                "%s: bad name (a-z or 0-9 first, then only a-z, 0-9 and '-')", label);
    return FALSE;
  }
  if (f.summary == NULL || *f.summary == '\0') {
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID, "%s: no summary", label);
    return FALSE;
  }
  for (const char *c = f.summary; *c; c++)
    if ((guchar) *c < 0x20) { /* one line of `list policies` */
      g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                  "%s: the summary holds a control character (it is one line)", label);
      return FALSE;
    }
  if (!f.has_decide) {
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID, "%s: no decide hook", label);
    return FALSE;
  }
  for (guint i = 0; i < f.n_reserved; i++)
    if (f.reserved[i] != NULL) {
      g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                  "%s: reserved slot %u is not NULL", label, i);
      return FALSE;
    }
  if (f.state_size >= MAX_STATE_SIZE) {
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                "%s: state_size %" G_GSIZE_FORMAT " bytes is not below 1 MiB", label, f.state_size);
    return FALSE;
  }
  if (f.params && !check_param_table(label, f.params, error))
    return FALSE;
  return TRUE;
}

/* Check all of MODULE; on success NEW_INFOS holds one EmaPolicyInfo * per
 * policy (not yet registered). */
static gboolean check_module(const EmaPolicyModule *module, const char *origin,
                             GPtrArray *new_infos, GError **error) {
  if (module->abi_version != EMA_POLICY_ABI_VERSION) {
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_ABI,
                "%s: module ABI version %u, expected %u", origin, module->abi_version,
                EMA_POLICY_ABI_VERSION);
    return FALSE;
  }
  for (guint k = 0; k < EMA_POLICY_KINDS; k++) {
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    gconstpointer ops;
    for (guint i = 0; (ops = module_ops(module, k, i)) != NULL; i++) {
      OpsFields f;
      EmaPolicyInfo *info;
      if (i >= MAX_POLICIES_PER_KIND) {
        g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                    "%s: more than %u %s policies (does the list end with NULL?)", origin,
                    MAX_POLICIES_PER_KIND, ema_policy_kind_name(k));
        return FALSE;
      }
      if (!check_ops(origin, k, i, ops, error))
        return FALSE;
      f = ops_fields(k, ops);
      if (g_hash_table_contains(seen, f.name)) {
        g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_DUPLICATE,
                    "%s: %s policy '%s': listed twice in the module", origin,
                    ema_policy_kind_name(k), f.name);
        return FALSE;
      }
      if (registry) {
        const EmaPolicyInfo *old = g_hash_table_lookup(registry->names[k], f.name);
        if (old) {
          g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_DUPLICATE,
                      "%s: %s policy '%s': already registered (%s)", origin,
                      ema_policy_kind_name(k), f.name, old->origin);
          return FALSE;
        }
      }
      g_hash_table_add(seen, (gpointer) f.name);
      info = g_new0(EmaPolicyInfo, 1);
      info->kind = k;
      info->name = f.name;
      info->summary = f.summary;
      info->params = f.params;
      info->ops = ops;
      info->never_acts = k == EMA_POLICY_BORROW && ops == ema_builtin_never_borrows;
      info->built_in = module == &ema_builtin_policies;
      g_ptr_array_add(new_infos, info);
    }
  }
  return TRUE;
}

/* Register MODULE after it passed check_module (infos in NEW_INFOS). */
static void register_infos(GPtrArray *new_infos, const char *origin) {
  /* one copy of the origin for all of the module's policies, kept forever */
  const char *kept = g_intern_string(origin);
  gboolean touched[EMA_POLICY_KINDS] = {FALSE};
  for (guint i = 0; i < new_infos->len; i++) {
    EmaPolicyInfo *info = new_infos->pdata[i];
    info->origin = kept;
    if (!info->built_in) {
      /* the program ("ema-sim run" names itself ema-sim) */
      const char *prog = g_get_prgname() ? g_get_prgname() : "ema-sim";
      info->guard_name = g_strdup_printf("%.*s: policy plugin '%s' (%s)", (int) strcspn(prog, " "),
                                         prog, info->name, kept);
    }
    g_ptr_array_add(registry->policies[info->kind], info);
    g_hash_table_insert(registry->names[info->kind], (gpointer) info->name, info);
    touched[info->kind] = TRUE;
  }
  for (guint k = 0; k < EMA_POLICY_KINDS; k++)
    if (touched[k])
      g_ptr_array_sort(registry->policies[k], compare_info);
}

static void add_builtin_compositions(void) {
  for (const EmaPolicyComposition *c = ema_builtin_compositions; c->name; c++) {
    if (!name_is_valid(c->name) || c->summary == NULL || *c->summary == '\0' || c->yaml == NULL)
      g_error("built-in composition '%s' is not valid (name, summary, yaml)", c->name);
    if (g_hash_table_contains(registry->composition_names, c->name))
      g_error("built-in composition '%s' is listed twice", c->name);
    g_hash_table_insert(registry->composition_names, (gpointer) c->name, (gpointer) c);
    g_ptr_array_add(registry->compositions, (gpointer) c);
  }
  g_ptr_array_sort(registry->compositions, compare_composition);
}

/* Idempotent: creates the registry and registers the built-ins once. */
static void registry_init(void) {
  g_autoptr(GPtrArray) infos = NULL;
  GError *error = NULL;
  if (registry)
    return;
  infos = g_ptr_array_new();
  /* checked before the registry exists, so there is nothing to clash with
   * but the table itself */
  if (!check_module(&ema_builtin_policies, "built-in", infos, &error))
    g_error("the built-in policy table is broken: %s", error->message);
  registry = g_new0(Registry, 1);
  for (guint k = 0; k < EMA_POLICY_KINDS; k++) {
    registry->policies[k] = g_ptr_array_new();
    registry->names[k] = g_hash_table_new(g_str_hash, g_str_equal);
  }
  registry->compositions = g_ptr_array_new();
  registry->composition_names = g_hash_table_new(g_str_hash, g_str_equal);
  registry->modules = g_ptr_array_new();
  register_infos(infos, "built-in");
  add_builtin_compositions();
}

gboolean ema_policy_registry_add_module(const EmaPolicyModule *module, const char *origin,
                                        GError **error) {
  g_autoptr(GPtrArray) infos = g_ptr_array_new_with_free_func(g_free);
  g_return_val_if_fail(module != NULL, FALSE);
  g_return_val_if_fail(origin != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  registry_init();
  if (!check_module(module, origin, infos, error))
    return FALSE;
  if (infos->len == 0) {
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                "%s: the module registers no policy (its borrow, prefetch and reclaim lists are "
                "empty)",
                origin);
    return FALSE;
  }
  register_infos(infos, origin);
  /* the registry owns the infos now */
  g_ptr_array_set_free_func(infos, NULL);
  return TRUE;
}

/* SYMBOL, the start of a dynamic symbol, holds at least SIZE bytes, as far
 * as the symbol table tells (st_size 0, or no entry: not known, accepted). */
static gboolean symbol_fits(gconstpointer symbol, gsize size, const char *path, GError **error) {
  Dl_info info;
  const ElfW(Sym) *entry = NULL;
  if (dladdr1(symbol, &info, (void **) &entry, RTLD_DL_SYMENT) == 0 || entry == NULL ||
      info.dli_saddr != symbol || entry->st_size == 0 || entry->st_size >= size)
    return TRUE;
  g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_SYMBOL,
              "%s: symbol '%s' is %" G_GUINT64_FORMAT
              " bytes, smaller than an EmaPolicyModule (%" G_GSIZE_FORMAT " bytes)",
              path, MODULE_SYMBOL, (guint64) entry->st_size, size);
  return FALSE;
}

gboolean ema_policy_registry_load_file(const char *path, GError **error) {
  g_autofree char *open_path = NULL;
  GModule *module;
  gpointer symbol = NULL;
  guint limit;

  g_return_val_if_fail(path != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  registry_init();
  /* a module's hooks run under the crash handlers and the watchdog (guard.h) */
  if (!ema_plugin_guard_limit(&limit, error))
    return FALSE;
  if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_LOAD, "%s: %s", path,
                g_file_test(path, G_FILE_TEST_EXISTS) ? "not a regular file" : "no such file");
    return FALSE;
  }
  /* a bare file name would make the dynamic loader search its own paths */
  open_path = strchr(path, G_DIR_SEPARATOR) ? g_strdup(path) : g_build_filename(".", path, NULL);
  /* every symbol bound now: one the module calls and nothing defines is an error here, not a
   * death mid-run at its first call */
  module = g_module_open(open_path, G_MODULE_BIND_LOCAL);
  if (module == NULL) {
    const char *why = g_module_error() ? g_module_error() : "unknown error";
    /* the loader's message usually starts with the path again */
    if (g_str_has_prefix(why, open_path) && g_str_has_prefix(why + strlen(open_path), ": "))
      why += strlen(open_path) + 2;
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_LOAD, "%s: cannot load: %s", path, why);
    return FALSE;
  }
  for (guint i = 0; i < registry->modules->len; i++)
    if (registry->modules->pdata[i] == module) {
      /* already registered (the loader hands back the same handle) */
      g_module_close(module);
      return TRUE;
    }
  if (!g_module_symbol(module, MODULE_SYMBOL, &symbol) || symbol == NULL) {
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_SYMBOL,
                "%s: not an EMA policy module (no symbol '%s')", path, MODULE_SYMBOL);
    g_module_close(module);
    return FALSE;
  }
  if (!symbol_fits(symbol, sizeof(EmaPolicyModule), path, error)) {
    g_module_close(module);
    return FALSE;
  }
  if (!ema_policy_registry_add_module(symbol, path, error)) {
    g_module_close(module);
    return FALSE;
  }
  g_module_make_resident(module);
  g_ptr_array_add(registry->modules, module);
  ema_plugin_guard_start(limit);
  return TRUE;
}

static int compare_strings(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* Load every module in DIR, sorted by file name. */
static gboolean load_dir(const char *dir, GError **error) {
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GDir) d = NULL;
  GError *inner = NULL;
  const char *name;

  if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_LOAD, "plugin directory %s: %s", dir,
                g_file_test(dir, G_FILE_TEST_EXISTS) ? "not a directory" : "no such directory");
    return FALSE;
  }
  d = g_dir_open(dir, 0, &inner);
  if (d == NULL) {
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_LOAD, "plugin directory %s: %s", dir,
                inner->message);
    g_error_free(inner);
    return FALSE;
  }
  while ((name = g_dir_read_name(d)) != NULL)
    if (g_str_has_suffix(name, "." G_MODULE_SUFFIX))
      g_ptr_array_add(names, g_strdup(name));
  g_ptr_array_sort(names, compare_strings);
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *path = g_build_filename(dir, (const char *) names->pdata[i], NULL);
    if (g_file_test(path, G_FILE_TEST_IS_DIR))
      continue;
    if (!ema_policy_registry_load_file(path, error))
      return FALSE;
  }
  return TRUE;
}

gboolean ema_policy_registry_load_dirs(const char *const *dirs, GError **error) {
  const char *env = g_getenv("EMA_PLUGIN_PATH");
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  registry_init();
  for (guint i = 0; dirs && dirs[i]; i++)
    if (!load_dir(dirs[i], error))
      return FALSE;
  if (env && *env) {
    g_auto(GStrv) parts = g_strsplit(env, G_SEARCHPATH_SEPARATOR_S, -1);
    for (guint i = 0; parts[i]; i++) {
      if (*parts[i] == '\0' || !g_file_test(parts[i], G_FILE_TEST_IS_DIR))
        continue; /* a missing directory on the search path is not an error */
      if (!load_dir(parts[i], error))
        return FALSE;
    }
  }
  return TRUE;
}

/* "a, b, c": the names of ITEMS (sorted already), each from NAME_OF. */
static char *join_names(GPtrArray *items, const char *(*name_of)(gconstpointer)) {
  g_autoptr(GString) text = g_string_new(NULL);
  for (guint i = 0; i < items->len; i++)
    g_string_append_printf(text, "%s%s", i ? ", " : "", name_of(items->pdata[i]));
  if (items->len == 0)
    g_string_append(text, "none");
  return g_string_free(g_steal_pointer(&text), FALSE);
}

static const char *info_name(gconstpointer item) {
  return ((const EmaPolicyInfo *) item)->name;
}

static const char *composition_name(gconstpointer item) {
  return ((const EmaPolicyComposition *) item)->name;
}

/* The kinds other than EXCEPT (EMA_POLICY_KINDS: every kind) that have a policy NAME, appended
 * to WHAT as "a reclaim policy" or "a borrow and a reclaim policy", and to MAPS (where not NULL)
 * as the maps that name it there, "policy: {reclaim: QUOTED}" joined by " or "; how many. */
static guint append_kinds_of(GString *what, GString *maps, const char *name, const char *quoted,
                             guint except) {
  guint n = 0;
  for (guint k = 0; k < EMA_POLICY_KINDS; k++) {
    if (k == except || !g_hash_table_contains(registry->names[k], name))
      continue;
    g_string_append_printf(what, "%s%s", n ? " and a " : "a ", ema_policy_kind_name(k));
    if (maps)
      g_string_append_printf(maps, "%spolicy: {%s: %s}", n ? " or " : "", ema_policy_kind_name(k),
                             quoted);
    n++;
  }
  if (n > 0)
    g_string_append(what, " policy");
  return n;
}

const EmaPolicyInfo *ema_policy_registry_find(EmaPolicyKind kind, const char *name,
                                              GError **error) {
  const EmaPolicyInfo *info;
  g_return_val_if_fail(kind < EMA_POLICY_KINDS, NULL);
  g_return_val_if_fail(name != NULL, NULL);
  registry_init();
  info = g_hash_table_lookup(registry->names[kind], name);
  if (info == NULL) {
    g_autofree char *known = join_names(registry->policies[kind], info_name);
    g_autofree char *quoted = ema_file_quote_cut(name, -1);
    g_autoptr(GString) what = g_string_new(NULL);
    const EmaPolicyComposition *composition =
        g_hash_table_lookup(registry->composition_names, name);
    /* a policy of another kind, or a composition, named where this kind's goes: said, with this
     * kind's names (and the composition's policies, from its own table) */
    append_kinds_of(what, NULL, name, quoted, kind);
    if (composition) {
      g_string_append_printf(what, "%sa composition of policies", what->len ? " and " : "");
      g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_UNKNOWN,
                  "unknown %s policy '%s': it is %s (`policy: %s` is %s; %s policies: %s)",
                  ema_policy_kind_name(kind), quoted, what->str, composition->name,
                  composition->yaml, ema_policy_kind_name(kind), known);
    } else if (what->len > 0)
      g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_UNKNOWN,
                  "unknown %s policy '%s': it is %s (%s policies: %s)", ema_policy_kind_name(kind),
                  quoted, what->str, ema_policy_kind_name(kind), known);
    else
      g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_UNKNOWN,
                  "unknown %s policy '%s' (known: %s)", ema_policy_kind_name(kind), quoted, known);
  }
  return info;
}

GPtrArray *ema_policy_registry_list(EmaPolicyKind kind) {
  g_return_val_if_fail(kind < EMA_POLICY_KINDS, NULL);
  registry_init();
  return g_ptr_array_copy(registry->policies[kind], NULL, NULL);
}

gsize ema_policy_info_state_size(const EmaPolicyInfo *info) {
  switch (info->kind) {
  case EMA_POLICY_BORROW:
    return ((const EmaBorrowPolicyOps *) info->ops)->state_size;
  case EMA_POLICY_PREFETCH:
    return ((const EmaPrefetchPolicyOps *) info->ops)->state_size;
  case EMA_POLICY_RECLAIM:
    return ((const EmaReclaimPolicyOps *) info->ops)->state_size;
  }
  return 0;
}

EmaPolicyInitFunc ema_policy_info_init_func(const EmaPolicyInfo *info) {
  switch (info->kind) {
  case EMA_POLICY_BORROW:
    return ((const EmaBorrowPolicyOps *) info->ops)->init;
  case EMA_POLICY_PREFETCH:
    return ((const EmaPrefetchPolicyOps *) info->ops)->init;
  case EMA_POLICY_RECLAIM:
    return ((const EmaReclaimPolicyOps *) info->ops)->init;
  }
  return NULL;
}

gboolean ema_policy_info_init(const EmaPolicyInfo *info, gpointer state, gconstpointer params,
                              const EmaPoolView *view, GError **error) {
  EmaPolicyInitFunc init = ema_policy_info_init_func(info);
  GError *inner = NULL;
  gboolean ok;
  if (init == NULL)
    return TRUE;
  ema_plugin_call_enter(info->guard_name, EMA_PLUGIN_HOOK_INIT);
  ok = init(state, params, view, &inner);
  ema_plugin_call_leave(info->guard_name);
  if (ok && inner == NULL)
    return TRUE;
  if (inner == NULL)
    g_set_error(&inner, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                "init failed without saying why");
  /* a plugin's with its file, as the errors of its decide calls (core.c) */
  if (info->built_in)
    g_propagate_prefixed_error(error, inner, "%s policy %s: ", ema_policy_kind_name(info->kind),
                               info->name);
  else
    g_propagate_prefixed_error(error, inner,
                               "%s policy %s (%s): ", ema_policy_kind_name(info->kind), info->name,
                               info->origin);
  return FALSE;
}

gboolean ema_policy_info_plan_fits(const EmaPolicyInfo *info, const char *hook, guint n,
                                   guint capacity, GError **error) {
  if (n <= capacity)
    return TRUE;
  g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
              "%s policy %s (%s): %s planned %u actions, more than a plan holds (%u)",
              ema_policy_kind_name(info->kind), info->name, info->origin, hook, n, capacity);
  return FALSE;
}

char *ema_reclaim_action_no_place(const EmaReclaimAction *action, guint n_gpus) {
  g_return_val_if_fail(n_gpus > 0, NULL);
  if ((guint) action->target > EMA_VACATE_DROP)
    return g_strdup_printf("target %d is not a reclaim target", (int) action->target);
  if (action->target == EMA_VACATE_TO_PEER && action->target_gpu >= n_gpus)
    return g_strdup_printf("target_gpu %u is not a GPU of this server (gpu0..gpu%u)",
                           action->target_gpu, n_gpus - 1);
  return NULL;
}

const EmaPolicyComposition *ema_policy_registry_find_composition(const char *name, GError **error) {
  const EmaPolicyComposition *composition;
  g_return_val_if_fail(name != NULL, NULL);
  registry_init();
  composition = g_hash_table_lookup(registry->composition_names, name);
  if (composition == NULL) {
    g_autofree char *known = join_names(registry->compositions, composition_name);
    g_autofree char *quoted = ema_file_quote_cut(name, -1);
    g_autoptr(GString) what = g_string_new(NULL);
    g_autoptr(GString) maps = g_string_new(NULL);
    /* one policy named where a composition goes: said, with the map that names it */
    if (append_kinds_of(what, maps, name, quoted, EMA_POLICY_KINDS) > 0)
      g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_UNKNOWN,
                  "unknown policy '%s': it is %s (write %s, or a composition: %s)", quoted,
                  what->str, maps->str, known);
    else
      g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_UNKNOWN,
                  "unknown policy '%s' (known compositions: %s)", quoted, known);
  }
  return composition;
}

GPtrArray *ema_policy_registry_list_compositions(void) {
  registry_init();
  return g_ptr_array_copy(registry->compositions, NULL, NULL);
}
