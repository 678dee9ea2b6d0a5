/* bench-engine.c: microbenchmark of the serving engine's scheduler alone
 * (sim/serving/engine.c), against the plain O(batch) walk it replaced (the test
 * oracle tests/engine/engine-reference.c, the "before").
 *
 * SEQS requests of prompt 16 arrive at t = 0 with outputs longer than the
 * run, in a KV pool far larger than they need, with a budget and
 * max_num_seqs that let them all run: after one prefill step every step
 * decodes SEQS tokens and nothing else changes. The step cost is a
 * constant 1 us, so the run measures scheduling only. Each engine runs
 * STEPS steps; the monotonic clock times ema_sim_run_until() only.
 *
 * Usage: bench-engine [STEPS [SEQS]]   (defaults: 1000000 256) */
#include <ema/serving/engine.h>

#include <stdio.h>
#include <stdlib.h>

/* the oracle (engine-reference.c) */
typedef struct _RefEngine RefEngine;
RefEngine *ref_engine_new(EmaSim *sim, const EmaEngineConfig *config, EmaKvMemory memory,
                          EmaStepCostFunc step_cost, gpointer step_cost_data,
                          EmaTraceSource *trace);
void ref_engine_free(RefEngine *engine);
void ref_engine_add_observer(RefEngine *engine, const EmaEngineObserver *observer);
void ref_engine_start(RefEngine *engine);

#define BENCH_STEP EMA_US(1)

static EmaTime bench_cost(gpointer data, const EmaStepBatch *batch) {
  return BENCH_STEP;
}

typedef struct {
  guint64 steps;
  double decode_tokens;
} Count;

static void bench_on_step(gpointer data, const EmaStepReport *step) {
  Count *count = data;
  count->steps++;
  count->decode_tokens += (double) step->batch.decode_seqs;
}

static double bench_run(gboolean reference, guint64 steps, guint seqs, Count *count,
                        guint64 *work) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autofree EmaRequestRecord *records = g_new0(EmaRequestRecord, seqs);
  guint32 output = (guint32) MIN(steps + 16, G_MAXUINT32 - 16);
  g_autoptr(EmaKvPool) pool = ema_kv_pool_new((guint64) seqs * ((output + 32) / 16 + 1));
  EmaEngineConfig config = {.max_num_seqs = seqs, .max_num_batched_tokens = 16 * (guint64) seqs};
  EmaEngineObserver observer = {bench_on_step, NULL, count};
  EmaTraceSource *trace;
  gint64 t0, t1;
  for (guint i = 0; i < seqs; i++)
    records[i] = (EmaRequestRecord){.prompt_tokens = 16, .output_tokens = output, .id = i};
  trace = ema_trace_source_new_array(records, seqs);
  if (reference) {
    RefEngine *engine =
        ref_engine_new(sim, &config, ema_kv_pool_memory(pool), bench_cost, NULL, trace);
    ref_engine_add_observer(engine, &observer);
    ref_engine_start(engine);
    t0 = g_get_monotonic_time();
    ema_sim_run_until(sim, (EmaTime) steps * BENCH_STEP, NULL);
    t1 = g_get_monotonic_time();
    *work = 0;
    ref_engine_free(engine);
  } else {
    EmaEngine *engine =
        ema_engine_new(sim, &config, ema_kv_pool_memory(pool), bench_cost, NULL, trace);
    ema_engine_add_observer(engine, &observer);
    ema_engine_start(engine);
    t0 = g_get_monotonic_time();
    ema_sim_run_until(sim, (EmaTime) steps * BENCH_STEP, NULL);
    t1 = g_get_monotonic_time();
    *work = ema_engine_work_counter(engine);
    ema_engine_free(engine);
  }
  return (double) (t1 - t0) / 1e6;
}

int main(int argc, char **argv) {
  guint64 steps = argc > 1 ? g_ascii_strtoull(argv[1], NULL, 10) : 1000000;
  guint seqs = argc > 2 ? (guint) g_ascii_strtoull(argv[2], NULL, 10) : 256;
  double rate[2];
  if (steps == 0 || seqs == 0) {
    fprintf(stderr, "usage: bench-engine [STEPS [SEQS]]\n");
    return 2;
  }
  printf("%u decoders, %" G_GUINT64_FORMAT " steps, step cost 1 us\n", seqs, steps);
  printf("%-22s %12s %10s %14s %10s %14s\n", "engine", "steps", "seconds", "steps/s", "ns/step",
         "touches");
  for (int r = 1; r >= 0; r--) {
    Count count = {0};
    guint64 work;
    double s = bench_run(r, steps, seqs, &count, &work);
    g_assert_cmpuint(count.steps, ==, steps);
    rate[r] = (double) count.steps / s;
    char touches[32] = "-";
    if (!r)
      g_snprintf(touches, sizeof touches, "%" G_GUINT64_FORMAT, work);
    printf("%-22s %12" G_GUINT64_FORMAT " %10.3f %14.0f %10.1f %14s\n",
           r ? "plain walk (before)" : "steady set (after)", count.steps, s, rate[r],
           1e9 * s / (double) count.steps, touches);
  }
  printf("speed-up: %.1fx\n", rate[0] / rate[1]);
  return 0;
}
