/* ops.h: the "ops" workload. Each op starts all its flows at once on an
 * otherwise idle server; the op's time is from that start until its last
 * flow finishes. Ops run one after another through the event core and the
 * fabric model. Then the experiment's decode scenarios are timed, each by
 * the step-time model and the pool's remote-KV formula (pool.h) on gpu0
 * with its remote KV on gpu1; their results follow the ops' in the same
 * list. */
#pragma once

#include <glib.h>

#include "ema/run/experiment.h"

G_BEGIN_DECLS

typedef struct {
  const char *name;
  const EmaOpSpec *spec; /* NULL for a decode scenario */
  EmaTime seconds_ns;    /* op time */
  double bandwidth;      /* ema_op_bytes / time, B/s */
  gboolean has_expect;
  gboolean expect_is_time;
  double expected;  /* seconds or B/s, as the expectation was written */
  double measured;  /* the same quantity from the model */
  double error;     /* (measured - expected) / expected */
  double tolerance; /* relative */
  gboolean pass;
} EmaOpResult;

typedef struct {
  GArray *ops; /* EmaOpResult */
  guint64 events;
  EmaTime simulated;
  guint failed; /* expectations missed */
} EmaOpsReport;

/* Fill RESULT's expectation fields from EXPECT (seconds_ns and bandwidth
 * already set): the quantity the expectation was written in (time when it
 * gives one, else bandwidth), the relative error and whether it is within
 * EXPECT's tolerance (DEFAULT_TOLERANCE when it gives none); a miss adds
 * one to *FAILED. No expectation: has_expect FALSE, nothing else set. */
void ema_op_result_judge(EmaOpResult *result, const EmaOpExpect *expect, double default_tolerance,
                         guint *failed);

EmaOpsReport *ema_ops_run(const EmaExperiment *experiment, GError **error);
void ema_ops_report_free(EmaOpsReport *report);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaOpsReport, ema_ops_report_free)

G_END_DECLS
