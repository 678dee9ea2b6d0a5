/* policyspec.h: the `policy` section of an experiment: which borrow,
 * prefetch and reclaim policies run (names from the registry, registry.h),
 * their parameters (bound by each policy's own table), and how tenants
 * preempt. `policy: NAME` names a composition, which stands for a map of
 * these keys. With no policy section the run is the static partition. */
#pragma once

#include <glib.h>

#include "ema/core/params.h"

G_BEGIN_DECLS

typedef enum {
  EMA_PREEMPT_CHOICE_ENGINE,    /* each tenant's engine.preempt */
  EMA_PREEMPT_CHOICE_RECOMPUTE, /* every tenant recomputes (vLLM v1) */
  EMA_PREEMPT_CHOICE_SWAP_HOST, /* every tenant swaps to host memory (vLLM v0) */
  EMA_PREEMPT_CHOICE_SWAP_PEER, /* every tenant parks preempted KV on peers (Aqua-like) */
  /* each preempted request parked as swap-peer or recomputed, whichever the
   * model prices lower (EMA_PREEMPT_CHEAPER) */
  EMA_PREEMPT_CHOICE_CHEAPER,
} EmaPreemptChoice;

typedef struct {
  char *name; /* the composition's name, or "custom" */
  char *borrow;
  gpointer borrow_params; /* bound by the borrow policy's table; NULL without one */
  char *prefetch;
  gpointer prefetch_params;
  char *reclaim;
  gpointer reclaim_params;
  EmaPreemptChoice preempt;
  /* the prefix cache's remote tier: cached blocks no request holds may stay
   * in borrowed slices (TRUE: `prefix_tier: remote`) or only in the GPU's
   * own (`local`) */
  gboolean prefix_tier_remote;
  gint64 decision_period; /* ns: the policies run at most this often per GPU, unless short */
} EmaPolicySpec;

extern const EmaParamTable ema_policy_spec_params;

/* SPEC's tenants park preempted KV on peers (swap-peer, or cheaper when
 * it swaps). */
gboolean ema_policy_spec_parks_on_peers(const EmaPolicySpec *spec);

/* CHOICE's name as an experiment writes it (`preempt: swap-peer`). */
const char *ema_preempt_choice_name(EmaPreemptChoice choice);

/* EmaParamResolveFunc for `policy: NAME`: the composition's map. */
EmaNode *ema_policy_spec_resolve(const EmaNode *at, const char *path, GError **error);

G_END_DECLS
