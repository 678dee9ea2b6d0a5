/* trypolicy.h: `ema-sim try-policy`, a policy author's harness: one call of a
 * borrow, prefetch or reclaim policy (built-in or a plugin) against a pool
 * view written by hand in a YAML file, and the plan it returns, without a
 * simulation. The file (policies/README.md has an example):
 *
 *   server: h200x8-hgx            # a hardware model, by name (view->server)
 *   now: 2s
 *   gpus:                         # one map per GPU: EmaGpuView's fields, 0 if absent
 *     - {has_tenant: true, slices: 1000, slices_used: 990, slices_borrowed: 40,
 *        slices_borrowed_used: 30, blocks_total: 1030, blocks_used: 1020,
 *        blocks_remote: 30, blocks_short: 120, waiting: 14, block_bytes: 2MiB}
 *     - {has_tenant: true, slices: 1000, slices_used: 100, slices_lent: 40,
 *        blocks_total: 1000, blocks_used: 100, lend_keep: 900}   # lend_keep: view->lend_keep
 *   lent:                         # optional: slices lent and the borrower's blocks in them
 *     - {lender: 1, borrower: 0, slices: 40, blocks: 30}
 *   step: {layers: 32, ...}       # prefetch only: EmaStepCostView's fields
 *   params: {min_borrow: 8}       # the policy's parameters (ema-sim describe-policy NAME)
 *
 * A GPU's `shares` defaults to true (it lends its free slices); its
 * `lend_keep` (the slices its lend limit keeps, view->lend_keep) to 0, at
 * most its slices; its counts are at most 1e15, its demand_blocks_per_s
 * within +-1e15. The view
 * must be one a pool could hold, each contradiction an error at the key
 * that says it: a GPU without a tenant has none of a tenant's counts
 * (blocks, requests, slices in use, staging, borrowed or pending); a GPU's
 * used, lent and staging slices fit in its slices, its local blocks
 * (blocks_used - blocks_remote) in slices_used, its blocks in use in
 * blocks_total, blocks_remote in blocks_used, slices_borrowed_used in
 * slices_borrowed; a loan is between two GPUs of the view, from one that
 * shares, at most once per pair, its blocks fit in its slices; a lender's
 * loans come to at most its slices_lent (the rest being mapped, coming back
 * or holding parked KV), and a borrower's to exactly its slices_borrowed,
 * their blocks to exactly its blocks_remote; a GPU's last_step is at most
 * the view's now; a loan holds a slice at least; the step's bandwidths are
 * those of a hardware model's link (1MB/s to 100TB/s), its remote_bytes at
 * most its kv_bytes, its layer_kv_s at most its layer_memory_s, that at
 * most its layer_compute_s. A step for a borrow or reclaim policy, which
 * reads none, is an error at its key. --gpu names a GPU the pool calls the
 * kind for: one with a tenant for a borrow policy, one with a tenant that
 * holds remote KV (blocks_remote above 0) for a prefetch policy, one with a
 * loan in lent: for a reclaim policy. The policy's ema_policy_debug() lines
 * are printed as they come. */
#pragma once

#include <stdio.h>

#include <glib.h>

#include "ema/pool/registry.h"

G_BEGIN_DECLS

/* Call the policy NAME of KIND once, on GPU (the borrower, the GPU before
 * whose step prefetch decides, or the lender that lacks NEEDED slices: 0
 * for a borrow or prefetch policy, which reads none),
 * against the view in FILE; print the plan to OUT. FALSE with a located
 * error for a bad file, an unknown policy or a failed init. */
gboolean ema_trypolicy_run(EmaPolicyKind kind, const char *name, const char *file, guint gpu,
                           guint64 needed, FILE *out, GError **error);

G_END_DECLS
