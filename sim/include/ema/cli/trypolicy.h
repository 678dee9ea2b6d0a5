/* trypolicy.h: `ema-sim try-policy`, a policy author's harness: one call of a
 * borrow, prefetch or reclaim policy (built-in or a plugin) against a pool
 * view written by hand in a YAML file, and the plan it returns, without a
 * simulation. The file (policies/README.md has an example):
 *
 *   server: h200x8-hgx            # a hardware model: name or map (view->server)
 *   now: 2s
 *   gpus:                         # one map per GPU: EmaGpuView's fields, 0 if absent
 *     - {has_tenant: true, slices: 1000, slices_used: 990, blocks_total: 990,
 *        blocks_used: 990, blocks_short: 120, waiting: 14, block_bytes: 2MiB}
 *     - {slices: 1000, slices_used: 100}
 *   lent:                         # optional: slices lent and the borrower's blocks in them
 *     - {lender: 1, borrower: 0, slices: 40, blocks: 30}
 *   step: {layers: 32, ...}       # prefetch: EmaStepCostView's fields
 *   params: {min_borrow: 8}       # the policy's parameters (ema-sim describe-policy NAME)
 *
 * A GPU's `shares` defaults to true (it lends its free slices). The policy's
 * ema_policy_debug() lines are printed as they come. */
#pragma once

#include <stdio.h>

#include <glib.h>

#include "ema/pool/registry.h"

G_BEGIN_DECLS

/* Call the policy NAME of KIND once, on GPU (the borrower, the GPU before
 * whose step prefetch decides, or the lender that lacks NEEDED slices),
 * against the view in FILE; print the plan to OUT. FALSE with a located
 * error for a bad file, an unknown policy or a failed init. */
gboolean ema_trypolicy_run(EmaPolicyKind kind, const char *name, const char *file, guint gpu,
                           guint64 needed, FILE *out, GError **error);

G_END_DECLS
