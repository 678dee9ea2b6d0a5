/* backend.h: what the pool mechanism (core.h) asks of the memory behind its
 * slices, as one table of operations. The simulator's backend (pool.c)
 * charges modelled time and touches nothing; the CUDA backend of
 * `ema-validate pool` (validate/poolmem.c over validate/realpool.c's VMM
 * calls and copies, or the CPU emulation the tests use) does the real work
 * and reports the time it took.
 *
 * Every operation gets DATA (the backend's) and is told what changes in the
 * ledger's terms: a GPU, a lender, counts of slices or blocks. Blocks of a
 * tenant on one place (its own slices, or the slices one lender lends it)
 * are a list: new ones go to its end, freed ones come off its end. Each
 * operation that can fail returns FALSE with an error and has then changed
 * nothing; the pool then leaves its ledger as it was. An operation left
 * NULL is one the backend has nothing to do for (its cost is 0). Costs are
 * seconds: modelled (simulator) or measured (real). */
#pragma once

#include <glib.h>

#include "ema/policy.h"

G_BEGIN_DECLS

/* What an event of the pool's log is (core.h), and what a deferred action
 * completes. */
typedef enum {
  EMA_POOL_EVENT_BORROW,    /* GPU borrows SLICES from PEER */
  EMA_POOL_EVENT_RETURN,    /* GPU gives SLICES empty slices back to PEER */
  EMA_POOL_EVENT_RECLAIM,   /* GPU (lender) takes SLICES back from PEER: data moved or freed */
  EMA_POOL_EVENT_OWN_MAP,   /* GPU maps SLICES of its own for its blocks or staging */
  EMA_POOL_EVENT_OWN_UNMAP, /* GPU unmaps SLICES of its own */
  EMA_POOL_EVENT_REFUSE,    /* a plan's borrow or return of GPU with PEER cut to nothing */
  EMA_POOL_EVENT_OFFLOAD,   /* GPU's steps offload the attention over its KV on PEER (and others) */
  EMA_POOL_EVENT_OFFLOAD_END,    /* GPU's steps read their remote KV again (direct or prefetch) */
  EMA_POOL_EVENT_OFFLOAD_REFUSE, /* GPU's remote KV is bounded by PEER's offload allowance */
  EMA_POOL_EVENT_PLACE,          /* GPU's tenant moves blocks of a request between its places */
  EMA_POOL_EVENT_TIER, /* GPU's prefix cache keeps blocks on PEER, fetches them or drops them */
  EMA_POOL_EVENT_OFFLOAD_THROTTLE, /* GPU's offloading steps lengthen to hold PEER at its cap */
  EMA_POOL_EVENT_DEBUG, /* a policy's own line about GPU (ema_policy_debug), in the reason */
} EmaPoolEventKind;
#define EMA_POOL_EVENT_KINDS (EMA_POOL_EVENT_DEBUG + 1)

typedef struct {
  /* LENDER creates SLICES slices and maps them for BORROWER, at the end of
   * what it lends it; *SECONDS until they are usable. */
  gboolean (*lend)(gpointer data, guint lender, guint borrower, guint64 slices, double *seconds,
                   GError **error);
  /* BORROWER unmaps the last SLICES slices LENDER lends it, which LENDER
   * releases (their blocks are gone or moved); *SECONDS. */
  gboolean (*unlend)(gpointer data, guint lender, guint borrower, guint64 slices, double *seconds,
                     GError **error);
  /* GPU's own mapped slices become SLICES (its blocks' and its staging's);
   * *CHANGED the slices mapped (> 0) or unmapped (< 0), *SECONDS. NULL: a
   * GPU's region is all mapped from the start. */
  gboolean (*own)(gpointer data, guint gpu, guint64 slices, gint64 *changed, double *seconds,
                  GError **error);
  /* GPU's tenant has N new blocks at the end of its list on WHERE (GPU:
   * its own slices): written with a pattern that identifies each. */
  gboolean (*fill)(gpointer data, guint gpu, guint where, guint64 n, GError **error);
  /* The last N of GPU's blocks on WHERE are freed (their data is gone). */
  void (*forget)(gpointer data, guint gpu, guint where, guint64 n);
  /* The last N of GPU's blocks on FROM are copied to the end of its blocks
   * on TO (whose slices are there already), checked, and leave FROM;
   * *SECONDS the copy takes. */
  gboolean (*move)(gpointer data, guint gpu, guint from, guint to, guint64 n, double *seconds,
                   GError **error);
  /* GPU's tenant frees at least N of its blocks on LENDER (their data to
   * host memory when TO_HOST, else dropped) and sets *FREED and *SECONDS.
   * A backend with an engine preempts requests (which free blocks through
   * ema_pool_core_give); NULL: the pool frees exactly N (after copying
   * them out with to_host when TO_HOST). */
  gboolean (*evict)(gpointer data, guint gpu, guint lender, guint64 n, gboolean to_host,
                    guint64 *freed, double *seconds, GError **error);
  /* The last N of GPU's blocks on LENDER are copied to host memory; *SECONDS. */
  gboolean (*to_host)(gpointer data, guint gpu, guint lender, guint64 n, double *seconds,
                      GError **error);
  /* Wait for GPU's work (the end of a round). */
  gboolean (*sync)(gpointer data, guint gpu, GError **error);
  /* Wall clock (s) to stamp the events with (NULL: the pool's time). */
  double (*clock)(gpointer data);
  /* Non-NULL: the backend models time, and a borrow, a return or a reclaim
   * completes COST after it starts: the pool keeps its slices in flight
   * (lending and borrowing, or returning) and the backend calls
   * ema_pool_core_complete() then. NULL: every action is done when its
   * call returns. */
  void (*defer)(gpointer data, EmaPoolEventKind kind, guint lender, guint borrower, guint64 slices,
                EmaTime cost);
} EmaPoolBackend;

G_END_DECLS
