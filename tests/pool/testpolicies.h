/* testpolicies.h: small policies for the pool tests, registered as one
 * module ("tests/pool") by test_policies_register():
 *
 *   test-borrow-n       at its first decision, BORROWER (or every tenant
 *                       GPU but the lenders, when -1) borrows SLICES from
 *                       LENDER and SLICES2 from LENDER2; at its second
 *                       decision it gives back GIVE slices to LENDER.
 *   test-prefetch-fixed always the same plan (MODE, DEPTH, GROUP, LIMIT).
 *   test-reclaim-fixed  always one action: take SLICES from BORROWER,
 *                       data to TARGET (TARGET_GPU for a peer).
 *
 * Their parameters bind from YAML like any policy's; a test that builds an
 * EmaPolicySpec by hand passes these structs directly and may set a probe,
 * which the prefetch and reclaim policies fill with the view they were
 * given (a test-only channel: real policies keep no pointer out). */
#pragma once

#include "ema/policy.h"

#define TEST_PROBE_GPUS 8

typedef struct {
  guint calls;
  guint n_gpus;
  guint gpu;      /* prefetch: the GPU; reclaim: the lender */
  guint64 needed; /* reclaim */
  EmaGpuView gpus[TEST_PROBE_GPUS];
  guint64 lent[TEST_PROBE_GPUS * TEST_PROBE_GPUS];
  guint64 remote_blocks[TEST_PROBE_GPUS * TEST_PROBE_GPUS];
  EmaStepCostView step; /* prefetch */
  guint64 blocks_room[TEST_PROBE_GPUS];
} TestProbe;

typedef struct {
  gint64 borrower; /* -1: every GPU with a tenant that is not a lender here */
  gint64 lender, slices;
  gint64 lender2, slices2;
  gint64 give; /* slices given back to LENDER at the second decision */
} TestBorrowParams;

typedef struct {
  int mode; /* EmaRemoteMode */
  gint64 depth, group;
  double limit;
  TestProbe *probe; /* not a parameter */
  double cap;       /* the plan's offload_cap (0: none, the plan's start value) */
  gboolean read;    /* the plan's offload_read */
  double room;      /* the plan's room_limit (0: none, the plan's start value) */
} TestPrefetchParams;

typedef struct {
  gint64 borrower, slices;
  int target; /* EmaVacateTarget */
  gint64 target_gpu;
  TestProbe *probe; /* not a parameter */
} TestReclaimParams;

/* Register the test policies (once per process; later calls do nothing). */
void test_policies_register(void);
