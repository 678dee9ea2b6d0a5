/* registry.h: the policies a run can name. The built-in policies come from
 * an explicit table (policies/builtin.c, ema_builtin_policies); external
 * ones are GModule shared objects that export `ema_policy_module`
 * (policy.h), found in the directories given by --plugin-dir and then
 * EMA_PLUGIN_PATH (colon-separated), or loaded by path. Every policy is
 * checked when it is registered: ABI version, name (non-empty, [a-z0-9-]),
 * summary, required hooks present, reserved slots NULL, no duplicate name
 * within its kind (a plugin cannot shadow a built-in), parameter defaults
 * valid. A module that fails any check is refused as a whole, with an error
 * that names the file and the problem.
 *
 * Named compositions (`policy: ema`) are registered the same way: a name,
 * a summary and the YAML map it stands for.
 *
 * The process has one registry, filled by the command line before an
 * experiment is loaded (the first call of any function here registers the
 * built-ins); the experiment's parameter tables look names up in it.
 * Policies themselves never see it. */
#pragma once

#include <glib.h>

#include "ema/policy.h"

G_BEGIN_DECLS

typedef enum {
  EMA_POLICY_BORROW,
  EMA_POLICY_PREFETCH,
  EMA_POLICY_RECLAIM,
} EmaPolicyKind;

#define EMA_POLICY_ERROR (ema_policy_error_quark())
GQuark ema_policy_error_quark(void);

typedef enum {
  EMA_POLICY_ERROR_LOAD,      /* the file is not a loadable module */
  EMA_POLICY_ERROR_SYMBOL,    /* no ema_policy_module symbol */
  EMA_POLICY_ERROR_ABI,       /* abi_version mismatch */
  EMA_POLICY_ERROR_INVALID,   /* a missing hook, bad name, bad default, non-NULL reserved */
  EMA_POLICY_ERROR_DUPLICATE, /* a name already registered for that kind */
  EMA_POLICY_ERROR_UNKNOWN,   /* no policy of that name (the message lists the known ones) */
} EmaPolicyError;

/* "borrow", "prefetch", "reclaim". */
const char *ema_policy_kind_name(EmaPolicyKind kind);

/* A registered policy of any kind, as the registry lists it. */
typedef struct {
  EmaPolicyKind kind;
  const char *name;
  const char *summary;
  const EmaParamTable *params; /* may be NULL */
  const char *origin;          /* "built-in" or the module's path */
  gconstpointer ops;           /* the kind's ops struct */
  /* a built-in borrow policy whose plans are always empty (ema_builtin_never_borrows): the
   * pool need not ask it unless something else is due */
  gboolean never_acts;
  /* one of the built-in table's (compiled and tested with the pool), not a module's */
  gboolean built_in;
  /* a module's: "PROG: policy plugin 'NAME' (ORIGIN)", formatted at registration, for the
   * messages of a crash or a hang in one of its hooks (guard.h); NULL for a built-in */
  const char *guard_name;
} EmaPolicyInfo;

/* A named composition: `policy: NAME` stands for the YAML map YAML. */
typedef struct {
  const char *name;
  const char *summary;
  const char *yaml;
} EmaPolicyComposition;

/* Register every policy of MODULE (checked first; all or nothing). ORIGIN
 * names it in listings and errors. */
gboolean ema_policy_registry_add_module(const EmaPolicyModule *module, const char *origin,
                                        GError **error);
/* Load one shared object by path and register its policies. */
gboolean ema_policy_registry_load_file(const char *path, GError **error);
/* Load every shared object (G_MODULE_SUFFIX) in DIRS (NULL-terminated, may
 * be NULL), then in EMA_PLUGIN_PATH, in sorted file-name order. */
gboolean ema_policy_registry_load_dirs(const char *const *dirs, GError **error);

/* The policy NAME of KIND, or NULL with EMA_POLICY_ERROR_UNKNOWN:
 * "unknown borrow policy 'NAME' (known: a, b, c)", or where NAME is a policy of another kind
 * "unknown borrow policy 'NAME': it is a reclaim policy (borrow policies: a, b, c)". */
const EmaPolicyInfo *ema_policy_registry_find(EmaPolicyKind kind, const char *name, GError **error);
typedef gboolean (*EmaPolicyInitFunc)(gpointer state, gconstpointer params, const EmaPoolView *view,
                                      GError **error);
/* The size of the state one instance of INFO's policy keeps (its ops'
 * state_size). */
gsize ema_policy_info_state_size(const EmaPolicyInfo *info);
/* INFO's policy's init hook (its ops' init; NULL when it has none). */
EmaPolicyInitFunc ema_policy_info_init_func(const EmaPolicyInfo *info);
/* Call INFO's init hook (TRUE without one) on STATE with PARAMS and VIEW. A plugin's init is
 * trusted with neither its result nor its error: FALSE without an error, or an error with TRUE,
 * is a failure, named here ("KIND policy NAME: ..." for a built-in, "KIND policy NAME (FILE):
 * ..." for a plugin's). */
gboolean ema_policy_info_init(const EmaPolicyInfo *info, gpointer state, gconstpointer params,
                              const EmaPoolView *view, GError **error);
/* A plan of N actions that INFO's policy's HOOK ("decide", "place") filled fits the plan's
 * CAPACITY (its actions[]); more is an error naming the policy and its file ("KIND policy NAME
 * (ORIGIN): HOOK planned N actions, more than a plan holds (CAPACITY)"): the pool's check, and
 * try-policy's. */
gboolean ema_policy_info_plan_fits(const EmaPolicyInfo *info, const char *hook, guint n,
                                   guint capacity, GError **error);
/* Why the data of a reclaim plan's ACTION has no place on a server of N_GPUS (> 0), so that a
 * run drops it: "target 7 is not a reclaim target" (a target outside EmaVacateTarget) or
 * "target_gpu 9 is not a GPU of this server (gpu0..gpu3)" (EMA_VACATE_TO_PEER past the server);
 * NULL where it has one. The pool's reason ("N blocks of its KV dropped: WHY"), and
 * try-policy's. */
char *ema_reclaim_action_no_place(const EmaReclaimAction *action, guint n_gpus);
/* All policies of KIND sorted by name (EmaPolicyInfo *, owned by the
 * registry). */
GPtrArray *ema_policy_registry_list(EmaPolicyKind kind);

/* Named compositions (built-in: ema_builtin_compositions). An unknown NAME is
 * EMA_POLICY_ERROR_UNKNOWN: "unknown policy 'NAME' (known compositions: a, b)", or where NAME is
 * one policy "unknown policy 'NAME': it is a borrow policy (write policy: {borrow: NAME}, or a
 * composition: a, b)" (the reverse of ema_policy_registry_find's "it is a composition"). */
const EmaPolicyComposition *ema_policy_registry_find_composition(const char *name, GError **error);
GPtrArray *ema_policy_registry_list_compositions(void);

/* The built-in table (policies/builtin.c). */
extern const EmaPolicyModule ema_builtin_policies;
extern const EmaPolicyComposition ema_builtin_compositions[]; /* ends with {NULL} */
/* The built-in borrow policy that never borrows (`none`). */
extern const EmaBorrowPolicyOps *const ema_builtin_never_borrows;

G_END_DECLS
