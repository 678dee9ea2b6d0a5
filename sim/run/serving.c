/* serving.c: the serving run (serving.h). It wires, per tenant, a step-time
 * model, a fixed KV pool sized by ema_tenant_plan, an engine, and a metrics
 * observer; then runs the event loop. Nothing here decides scheduling (the
 * engine does) or computes times (the step model does).
 *
 * The timeline sampler is one event every sample_period (priority after
 * everything else at that instant, so a sample sees the state the instant
 * settled into). It stops rescheduling itself when it is the only pending
 * event, which is how a run without a duration ends. Where nothing is
 * queued for several periods (an idle stretch: requests 1e8 s apart), it
 * skips to the last sample time before the next event and counts the
 * samples between in the KV means: they would repeat this one. So
 * timeline.csv grows with what happens, not with simulated time. A sample
 * is a row per GPU of the server: each tenant's GPUs in the experiment's
 * order, then the idle GPUs (no tenant: an empty tenant field) in GPU
 * order, which lend to the tenants under a sharing policy. */
#include "ema/run/serving.h"

#include <errno.h>
#include <stdio.h>

#include "ema/core/file.h"
#include "ema/core/options.h"
#include "ema/pool/pool.h"
#include "ema/traces/trace.h"

#define SAMPLE_PRIORITY 100
#define PROGRESS_INTERVAL_US 500000
/* requests.csv, timeline.csv, events.csv, steps.csv */
#define OUTPUT_FILES 4
/* each one's stdio buffer: a busy run writes events.csv by the hundred
 * megabytes, and the file's default (its 4 KiB block) made a write call
 * every 25 rows (5% of an 8-GPU hour's time) */
#define OUTPUT_BUFFER_BYTES (1 << 20)

typedef struct Run Run;

typedef struct {
  Run *run; /* the run it is a tenant of */
  EmaTenantResult *result;
  EmaStepModel *step_model; /* the run's (Run.step_models) */
  EmaPool *pool;            /* the run's, shared */
  guint gpu;
  EmaEngine *engine;
  EmaKvMemory memory;
  EmaEngineConfig config;
  EmaTraceSource *trace; /* until the engine takes it */
  char *csv_name;        /* the tenant's name as one CSV field (quoted when it must be) */
  guint64 step_id;
  guint64 tokens_sampled; /* tokens_generated at the previous sample */
} Tenant;

struct Run {
  const EmaExperiment *experiment;
  EmaSim *sim;
  GArray *tenants; /* Tenant */
  /* the step models, one per model and TP degree, keyed by same_model_key():
   * tenants of one model share one, whose token rows are then filled once
   * and kept in cache once (a rack of one model has one copy, not 72) */
  GHashTable *step_models;
  EmaPool *pool;
  GArray *idle_gpus; /* EmaIdleGpuResult: the report's, their peaks kept by the sampler */
  guint64 *idle_peak_slices_lent; /* the report's */
  FILE *timeline, *steps;
  const char *out_dir;
  FILE *events;         /* events.csv, opened at the pool's first event */
  GError *events_error; /* the first failure to open it */
  GString *event_row;   /* the events.csv or timeline.csv row being written, emptied for each */
  guint32 event_kinds;  /* bit k: events.csv keeps kind k (none without events.csv) */
  guint64 events_rows;  /* written so far, up to the experiment's events_max_rows */
  EmaTime events_capped_at;
  guint64 steps_rows; /* written so far, up to the experiment's steps_max_rows */
  EmaTime steps_capped_at;
  guint64 timeline_rows; /* written so far, up to the experiment's timeline_max_rows */
  guint64 sample_rows;   /* the rows of one sample: a row per GPU of the server */
  EmaTime timeline_capped_at;
  EmaEvent sample_event;
  guint64 samples; /* taken so far: the pool's invariants are checked at one in
                      ema_pool_check_scale(GPUs) (each check walks every pair of GPUs) */
  gboolean progress;
  gint64 wall_start, last_progress;
  /* the output files open, each with its stdio buffer (open_output, close_output) */
  struct {
    FILE *file;
    char *buffer;
  } outputs[OUTPUT_FILES];
};

static EmaTime step_cost(gpointer data, const EmaStepBatch *batch) {
  Tenant *tenant = data;
  return ema_pool_step_time(tenant->pool, tenant->gpu, batch);
}

static void on_step(gpointer data, const EmaStepReport *step) {
  Tenant *tenant = data;
  ema_pool_after_step(tenant->pool, tenant->gpu, step);
}

static FILE *open_output(Run *run, const char *name, GError **error);
static gboolean close_output(Run *run, FILE **file, const char *name, GError **error);

/* One row of events.csv per pool event of a kind it keeps (the pool passes only those:
 * ema_pool_set_event_sink): the file exists only for runs whose pool did something (never
 * under static). */
static void on_pool_event(gpointer data, const EmaPoolEvent *e) {
  Run *run = data;
  if (run->events == NULL && run->events_error == NULL) {
    run->events = open_output(run, "events.csv", &run->events_error);
    if (run->events)
      fputs("time_s,event,gpu,peer,target,target_gpu,slices,blocks_moved,blocks_to_host,"
            "blocks_dropped,bytes_copied,seconds,reason\n",
            run->events);
  }
  if (run->events == NULL)
    return;
  if (run->events_rows >= (guint64) run->experiment->events_rows) {
    if (run->events_capped_at < 0)
      run->events_capped_at = e->at; /* bounded: no more rows */
    return;
  }
  run->events_rows++;
  GString *row = g_string_truncate(run->event_row, 0);
  const guint64 counts[] = {e->target_gpu,     e->slices,         e->blocks_moved,
                            e->blocks_to_host, e->blocks_dropped, e->bytes_copied};
  /* the numbers through the fixed-point and integer writers: printf for
   * them was most of the cost of a run that logs many events */
  ema_file_append_fixed(row, (double) e->at / 1e9, 6);
  g_string_append_c(row, ',');
  g_string_append(row, ema_pool_event_kind_name(e->kind));
  g_string_append_c(row, ',');
  ema_file_append_uint(row, e->gpu);
  g_string_append_c(row, ',');
  ema_file_append_uint(row, e->peer);
  g_string_append_c(row, ',');
  if (e->kind == EMA_POOL_EVENT_RECLAIM)
    g_string_append(row, ema_pool_vacate_target_name(e->target));
  for (guint i = 0; i < G_N_ELEMENTS(counts); i++) {
    g_string_append_c(row, ',');
    ema_file_append_uint(row, counts[i]);
  }
  g_string_append_c(row, ',');
  ema_file_append_fixed(row, e->seconds, 6);
  g_string_append_c(row, ',');
  ema_file_csv_field(row, e->reason);
  g_string_append_c(row, '\n');
  fwrite(row->str, 1, row->len, run->events);
}

/* The header of steps.csv: the columns of vLLM's step traces
 * (../shared/groundtruth/vllm-h100-steps: step.duration_us is the GPU time
 * of the step, without the engine's CPU time; here, for a step run eagerly,
 * at least the host's launch time, EmaStepReport.gpu_time), then the
 * tenant, the whole step (cycle) and the engine's CPU part of it. */
#define STEPS_HEADER                                                                               \
  "step.id,step.ts_start_ns,step.ts_end_ns,step.duration_us,queue.running_depth,"                  \
  "queue.waiting_depth,batch.num_prefill_reqs,batch.num_decode_reqs,batch.scheduled_tokens,"       \
  "batch.prefill_tokens,batch.decode_tokens,batch.num_finished,batch.num_preempted,"               \
  "kv.usage_gpu_ratio,kv.blocks_total_gpu,kv.blocks_free_gpu,tenant,cycle_time_us,cpu_time_us\n"

static void write_step(gpointer data, const EmaStepReport *step) {
  Tenant *tenant = data;
  Run *run = tenant->run;
  guint64 total = step->blocks_used + step->blocks_free;
  const EmaStepBatch *b = &step->batch;
  if (run->steps == NULL)
    return; /* stopped at its cap */
  if (run->steps_rows == (guint64) run->experiment->steps_rows) {
    GError *error = NULL;
    run->steps_capped_at = step->start + step->duration; /* bounded: no more rows */
    if (!close_output(run, &run->steps, "steps.csv", &error))
      ema_sim_fail(run->sim, error);
    return;
  }
  run->steps_rows++;
  fprintf(run->steps,
          "%" G_GUINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
          ",%.3f,%u,%u,%u,%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
          ",%" G_GUINT64_FORMAT ",%u,%u,%.6f,%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
          ",%s,%.3f,%.3f\n",
          tenant->step_id++, step->start, step->start + step->duration,
          (double) step->gpu_time / 1e3, step->running, step->waiting, step->prefill_seqs,
          b->decode_seqs, b->prefill_tokens + b->decode_seqs, b->prefill_tokens, b->decode_seqs,
          step->finished, step->preempted + step->released,
          total ? (double) step->blocks_used / (double) total : 0.0, total, step->blocks_free,
          tenant->csv_name, (double) step->duration / 1e3, (double) step->cpu_time / 1e3);
}

static void print_progress(Run *run) {
  guint64 done = 0, waiting = 0;
  double wall = (double) (g_get_monotonic_time() - run->wall_start) / 1e6;
  EmaTime now = ema_sim_now(run->sim), duration = run->experiment->duration;
  for (guint i = 0; i < run->tenants->len; i++) {
    Tenant *tenant = &g_array_index(run->tenants, Tenant, i);
    done += ema_engine_completed(tenant->engine);
    waiting += ema_engine_waiting(tenant->engine);
  }
  fprintf(stderr,
          "\r  simulated %.0f s  requests done %" G_GUINT64_FORMAT "  waiting %" G_GUINT64_FORMAT
          "  %.1f M events/s",
          (double) now / 1e9, done, waiting,
          wall > 0 ? (double) ema_sim_events_fired(run->sim) / wall / 1e6 : 0);
  /* with a duration, how much of it is done and how long the rest should take at this pace */
  if (duration > 0 && now > 0)
    fprintf(stderr, "  %.0f%%, about %.1f s left", 100.0 * (double) MIN(now, duration) / duration,
            wall * (double) MAX(duration - now, 0) / (double) now);
  fputs("   ", stderr);
}

/* The time from NOW to the next sample: one period, or, when no event is
 * queued (and the run's duration does not end) within several, up to the
 * last sample time before the next event, whose state is this one's. */
static EmaTime next_sample_in(Run *run, EmaTime now) {
  EmaTime period = run->experiment->sample_period, duration = run->experiment->duration;
  EmaTime next = ema_sim_next_time(run->sim);
  if (duration > 0 && next > duration)
    next = duration + 1; /* the last sample is at or before the duration */
  if (next == EMA_TIME_NEVER)
    return period;
  return MAX((next - 1 - now) / period * period, period);
}

guint64 ema_serving_rank_share(guint64 total, guint rank, guint ranks) {
  return total * (rank + 1) / ranks - total * rank / ranks;
}

/* Keep in R the sample at which its BORROWED slices most exceed the remote
 * room its prefetch plan admits (ema_output_warn_serving says when that is
 * far more than the room). A TP group's slices are its ranks' together, a
 * block a shard on each rank. */
static void note_idle_borrowing(EmaPool *pool, EmaTenantResult *r, guint64 borrowed) {
  const EmaPoolView *view = ema_pool_view(pool);
  guint gpu = (guint) r->spec->gpu;
  guint64 room = view->gpus[gpu].blocks_total;
  guint64 own = r->plan.blocks;
  guint64 admitted;
  if (view->blocks_room)
    room = MAX(room, view->blocks_room[gpu]);
  admitted =
      room > own ? (room - own) * r->plan.block_bytes * (guint64) r->spec->tp / EMA_SLICE_BYTES : 0;
  /* what its blocks hold there is in use, admitted or not (parked KV, the prefix cache's tier) */
  admitted = MAX(admitted, view->gpus[gpu].slices_borrowed_used);
  if (borrowed > admitted &&
      borrowed - admitted >
          r->idle_borrowed_slices - MIN(r->idle_borrowed_slices, r->idle_admitted_slices)) {
    r->idle_borrowed_slices = borrowed;
    r->idle_admitted_slices = admitted;
  }
}

/* One timeline.csv row: GPU at NOW, TENANT its tenant as one CSV field (empty: none), COUNTS
 * (kv_blocks_used, kv_blocks_free, running, waiting), LAST_STEP (ns) and POOL_COUNTS
 * (slices_lent, slices_borrowed, kv_blocks_remote, slices_staging, tokens). The columns through
 * the fixed-point and integer writers, as events.csv's. */
static void write_timeline_row(Run *run, EmaTime now, guint64 gpu, const char *tenant,
                               const guint64 counts[4], EmaTime last_step,
                               const guint64 pool_counts[5]) {
  GString *row = g_string_truncate(run->event_row, 0);
  char ns[EMA_FILE_UINT_CHARS];
  gsize digits = ema_file_format_uint(ns, (guint64) (now % 1000000000));
  run->timeline_rows++;
  ema_file_append_uint(row, (guint64) (now / 1000000000));
  g_string_append_c(row, '.');
  g_string_append_len(row, "000000000", (gssize) (9 - digits));
  g_string_append_len(row, ns, (gssize) digits);
  g_string_append_c(row, ',');
  ema_file_append_uint(row, gpu);
  g_string_append_c(row, ',');
  g_string_append(row, tenant);
  for (guint k = 0; k < 4; k++) {
    g_string_append_c(row, ',');
    ema_file_append_uint(row, counts[k]);
  }
  g_string_append_c(row, ',');
  ema_file_append_fixed(row, (double) last_step / 1e6, 6);
  for (guint k = 0; k < 5; k++) {
    g_string_append_c(row, ',');
    ema_file_append_uint(row, pool_counts[k]);
  }
  g_string_append_c(row, '\n');
  fwrite(row->str, 1, row->len, run->timeline);
}

/* The idle GPUs' part of a sample at NOW: their peaks, and a row each (the slices they lend, as
 * a tenant's GPU's row counts them; nothing of a tenant's). */
static void sample_idle_gpus(Run *run, EmaTime now) {
  static const guint64 none[4] = {0};
  guint64 together = 0;
  for (guint i = 0; i < run->idle_gpus->len; i++) {
    EmaIdleGpuResult *idle = &g_array_index(run->idle_gpus, EmaIdleGpuResult, i);
    guint64 lent = ema_pool_slices_lent(run->pool, idle->gpu);
    idle->peak_slices_lent = MAX(idle->peak_slices_lent, lent);
    together += lent;
    if (run->timeline) {
      const guint64 pool_counts[] = {lent, ema_pool_slices_borrowed(run->pool, idle->gpu),
                                     ema_pool_blocks_remote(run->pool, idle->gpu),
                                     ema_pool_slices_staging(run->pool, idle->gpu), 0};
      write_timeline_row(run, now, idle->gpu, "", none, 0, pool_counts);
    }
  }
  *run->idle_peak_slices_lent = MAX(*run->idle_peak_slices_lent, together);
}

static void on_sample(EmaSim *sim, EmaEvent *event, gpointer data) {
  Run *run = data;
  EmaTime now = ema_sim_now(sim);
  EmaTime in = next_sample_in(run, now);
  GError *error = NULL;
  if (run->samples++ % ema_pool_check_scale((guint) run->experiment->server.gpus) == 0 &&
      !ema_pool_check(run->pool, &error)) {
    g_prefix_error(&error, "memory ledger broken at %.9f s: ", (double) now / 1e9);
    ema_sim_fail(sim, error);
    return;
  }
  /* whole samples only: a sample cut after some tenants' rows would sum to what no instant held */
  if (run->timeline &&
      run->timeline_rows + run->sample_rows > (guint64) run->experiment->timeline_rows) {
    run->timeline_capped_at = now; /* bounded by construction: no more rows */
    if (!close_output(run, &run->timeline, "timeline.csv", &error)) {
      ema_sim_fail(sim, error);
      return;
    }
  }
  for (guint i = 0; i < run->tenants->len; i++) {
    Tenant *tenant = &g_array_index(run->tenants, Tenant, i);
    guint64 used = ema_engine_blocks_held(tenant->engine);
    guint64 free_blocks = tenant->memory.ops->free_blocks(tenant->memory.self);
    const EmaTenantSpec *spec = tenant->result->spec;
    /* output tokens the tenant produced since the previous sample */
    guint64 tokens = tenant->result->metrics->tokens_generated - tenant->tokens_sampled;
    guint64 borrowed = 0, lent = 0;
    for (gint64 g = spec->gpu; g < spec->gpu + spec->tp; g++) {
      borrowed += ema_pool_slices_borrowed(run->pool, (guint) g);
      lent += ema_pool_slices_lent(run->pool, (guint) g);
    }
    tenant->result->peak_slices_borrowed = MAX(tenant->result->peak_slices_borrowed, borrowed);
    tenant->result->peak_slices_lent = MAX(tenant->result->peak_slices_lent, lent);
    if (borrowed > 0)
      note_idle_borrowing(run->pool, tenant->result, borrowed);
    ema_tenant_metrics_sample_kv(tenant->result->metrics, used, tenant->result->plan.blocks,
                                 used + free_blocks,
                                 (guint64) (in / run->experiment->sample_period));
    for (gint64 g = spec->gpu; run->timeline && g < spec->gpu + spec->tp; g++) {
      /* each rank of a group: every block has a shard on it, the group's remote ones too, and
       * its share of the group's slices (the pool keeps them on the first GPU) */
      guint first = (guint) spec->gpu, rank = (guint) (g - spec->gpu), tp = (guint) spec->tp;
      /* waiting: arrived and not running, in the engine's queue or still in its API server */
      const guint64 counts[] = {used, free_blocks, ema_engine_running(tenant->engine),
                                ema_engine_waiting(tenant->engine) +
                                    ema_engine_arriving(tenant->engine)};
      const guint64 pool_counts[] = {
          ema_serving_rank_share(ema_pool_slices_lent(run->pool, first), rank, tp),
          ema_serving_rank_share(ema_pool_slices_borrowed(run->pool, first), rank, tp),
          ema_pool_blocks_remote(run->pool, first),
          ema_serving_rank_share(ema_pool_slices_staging(run->pool, first), rank, tp), tokens};
      write_timeline_row(run, now, (guint64) g, tenant->csv_name, counts,
                         tenant->result->metrics->last_step, pool_counts);
    }
    tenant->tokens_sampled = tenant->result->metrics->tokens_generated;
  }
  sample_idle_gpus(run, now);
  if (run->progress && g_get_monotonic_time() - run->last_progress >= PROGRESS_INTERVAL_US) {
    run->last_progress = g_get_monotonic_time();
    print_progress(run);
  }
  if (ema_sim_pending(sim) > 0)
    ema_sim_schedule_in(sim, event, in, SAMPLE_PRIORITY);
}

/* NAME in the run's folder, opened for writing with a buffer of
 * OUTPUT_BUFFER_BYTES that close_output frees. */
static FILE *open_output(Run *run, const char *name, GError **error) {
  g_autofree char *path = g_build_filename(run->out_dir, name, NULL);
  FILE *file = fopen(path, "w");
  guint slot = 0;
  if (file == NULL) {
    int saved = errno;
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved), "cannot write %s: %s", path,
                g_strerror(saved));
    return NULL;
  }
  while (run->outputs[slot].file != NULL)
    slot++;
  g_assert(slot < OUTPUT_FILES);
  run->outputs[slot].file = file;
  run->outputs[slot].buffer = g_malloc(OUTPUT_BUFFER_BYTES);
  setvbuf(file, run->outputs[slot].buffer, _IOFBF, OUTPUT_BUFFER_BYTES);
  return file;
}

static gboolean close_output(Run *run, FILE **file, const char *name, GError **error) {
  gboolean ok;
  if (*file == NULL)
    return TRUE;
  ok = fflush(*file) == 0 && !ferror(*file);
  ok = fclose(*file) == 0 && ok;
  for (guint slot = 0; slot < OUTPUT_FILES; slot++)
    if (run->outputs[slot].file == *file) {
      run->outputs[slot].file = NULL;
      g_clear_pointer(&run->outputs[slot].buffer, g_free);
    }
  *file = NULL;
  if (!ok) {
    int saved = errno;
    g_autofree char *path = g_build_filename(run->out_dir, name, NULL);
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved), "cannot write %s: %s", path,
                g_strerror(saved));
  }
  return ok;
}

static void tenant_clear(gpointer data) {
  Tenant *tenant = data;
  ema_engine_free(tenant->engine);
  ema_trace_source_free(tenant->trace);
  g_free(tenant->csv_name);
}

static void result_free(gpointer data) {
  EmaTenantResult *result = data;
  ema_tenant_metrics_free(result->metrics);
  g_free(result);
}

void ema_serving_report_free(EmaServingReport *report) {
  if (report == NULL)
    return;
  if (report->tenants) /* NULL when the pool failed to start */
    g_ptr_array_unref(report->tenants);
  if (report->idle_gpus)
    g_array_unref(report->idle_gpus);
  g_free(report);
}

/* The policy's preemption choice over the tenant's own (serving.h). */
void ema_serving_apply_preempt_choice(const EmaExperiment *experiment, EmaEngineConfig *config) {
  switch (experiment->policy.preempt) {
  case EMA_PREEMPT_CHOICE_ENGINE:
    break;
  case EMA_PREEMPT_CHOICE_RECOMPUTE:
    config->preempt = EMA_PREEMPT_RECOMPUTE;
    break;
  case EMA_PREEMPT_CHOICE_SWAP_HOST:
    config->preempt = EMA_PREEMPT_SWAP;
    break;
  case EMA_PREEMPT_CHOICE_SWAP_PEER:
    /* the pool's memory parks the KV on peers (or host) and times the copies */
    config->preempt = EMA_PREEMPT_SWAP;
    break;
  case EMA_PREEMPT_CHOICE_CHEAPER:
    /* the same memory, each request priced (EmaKvMemoryOps.swap_estimate) */
    config->preempt = EMA_PREEMPT_CHEAPER;
    break;
  }
}

/* Build tenant I of the experiment into RUN (its engine comes later). */
/* The step model of SPEC's model and TP degree on the run's server: an
 * earlier tenant's where one had them (a step model is a function of the
 * model, the server and the TP degree alone; its rows and cursors are
 * caches), else a new one. The key is the model as resolved.yaml writes it,
 * so that every field of it counts. */
static EmaStepModel *step_model_of(Run *run, const EmaTenantSpec *spec) {
  GString *key = g_string_new(NULL);
  EmaStepModel *step_model;
  g_string_printf(key, "tp %" G_GINT64_FORMAT "\n", spec->tp);
  ema_params_write_yaml(&ema_llm_params, &spec->model, key, 0);
  step_model = g_hash_table_lookup(run->step_models, key->str);
  if (step_model == NULL) {
    step_model = ema_step_model_new(&spec->model, &run->experiment->server, (guint) spec->tp, NULL);
    g_assert(step_model); /* the experiment's checks planned it */
    g_hash_table_insert(run->step_models, g_string_free(key, FALSE), step_model);
  } else {
    g_string_free(key, TRUE);
  }
  return step_model;
}

static gboolean add_tenant(Run *run, EmaServingReport *report, guint i, FILE *requests,
                           GError **error) {
  const EmaExperiment *experiment = run->experiment;
  const EmaTenantSpec *spec = &g_array_index(experiment->tenants, EmaTenantSpec, i);
  g_autofree char *stream = g_strconcat("tenant/", spec->name, NULL);
  EmaTenantResult *result = g_new0(EmaTenantResult, 1);
  g_autoptr(GString) csv_name = g_string_new(NULL);
  Tenant tenant = {.run = run, .result = result, .pool = run->pool, .gpu = (guint) spec->gpu};

  result->spec = spec;
  result->metrics = ema_tenant_metrics_new(spec->name, requests);
  result->metrics->slo_ttft = experiment->slo.ttft;
  result->metrics->slo_tpot = experiment->slo.tpot;
  g_ptr_array_add(report->tenants, result);
  if (!ema_tenant_plan(spec, &experiment->server, &result->plan, error))
    return FALSE;
  tenant.trace = ema_trace_spec_open(
      &spec->trace, ema_trace_seed_derive((guint64) experiment->seed, stream), error);
  if (tenant.trace == NULL) {
    ema_message_prefix_error(error, "tenant %s: ", spec->name);
    return FALSE;
  }
  tenant.step_model = step_model_of(run, spec);
  tenant.memory = ema_pool_add_tenant(run->pool, tenant.gpu, result->plan.slices,
                                      result->plan.block_bytes, tenant.step_model);
  ema_pool_set_offload_model(run->pool, tenant.gpu, &spec->model);
  ema_pool_set_sharing(run->pool, tenant.gpu, spec->sharing.lend, spec->sharing.borrow,
                       spec->sharing.lend_limit);
  ema_tenant_engine_config(spec, &result->plan, &experiment->server, &tenant.config);
  ema_serving_apply_preempt_choice(experiment, &tenant.config);
  ema_file_csv_field(csv_name, spec->name);
  tenant.csv_name = g_strdup(csv_name->str);
  g_array_append_val(run->tenants, tenant);
  return TRUE;
}

/* Engines, once the tenant array is complete (their callbacks point into it). */
static void start_engines(Run *run) {
  for (guint i = 0; i < run->tenants->len; i++) {
    Tenant *tenant = &g_array_index(run->tenants, Tenant, i);
    EmaEngineObserver metrics = ema_tenant_metrics_observer(tenant->result->metrics);
    EmaEngineObserver pool = {on_step, NULL, tenant};
    tenant->engine = ema_engine_new(run->sim, &tenant->config, tenant->memory, step_cost, tenant,
                                    g_steal_pointer(&tenant->trace));
    /* recomputes priced all-local: the pool's step_cost charges lenders */
    ema_engine_set_step_estimate(tenant->engine, ema_engine_model_step_cost, tenant->step_model);
    ema_engine_add_observer(tenant->engine, &metrics);
    ema_engine_add_observer(tenant->engine, &pool);
    if (run->steps) {
      EmaEngineObserver steps = {write_step, NULL, tenant};
      ema_engine_add_observer(tenant->engine, &steps);
    }
    ema_pool_set_engine(run->pool, tenant->gpu, tenant->engine);
  }
  for (guint i = 0; i < run->tenants->len; i++)
    ema_engine_start(g_array_index(run->tenants, Tenant, i).engine);
}

char *ema_serving_timeline_warning(const EmaExperiment *experiment) {
  guint64 gpus = (guint64) experiment->server.gpus, samples; /* a row per GPU a sample */
  if (!ema_experiment_is_serving(experiment) || experiment->duration <= 0)
    return NULL;
  samples = (guint64) (experiment->duration / experiment->sample_period) + 1;
  if (gpus == 0 || samples <= (guint64) experiment->timeline_rows / gpus)
    return NULL;
  return g_strdup_printf(
      "timeline.csv may reach its cap of %" G_GUINT64_FORMAT
      " rows (sample_period %.6g s over duration %.6g s: up to %" G_GUINT64_FORMAT
      " samples of %" G_GUINT64_FORMAT
      " GPUs); the rows past it are not written (raise sample_period for all)",
      (guint64) experiment->timeline_rows, (double) experiment->sample_period / 1e9,
      (double) experiment->duration / 1e9, samples, gpus);
}

GArray *ema_serving_idle_gpus(const EmaExperiment *experiment) {
  const EmaServerSpec *server = &experiment->server;
  g_autofree gboolean *busy = g_new0(gboolean, (gsize) server->gpus);
  GArray *idle = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < experiment->tenants->len; i++) {
    const EmaTenantSpec *spec = &g_array_index(experiment->tenants, EmaTenantSpec, i);
    for (gint64 g = spec->gpu; g < spec->gpu + spec->tp; g++)
      busy[g] = TRUE;
  }
  for (guint g = 0; g < (guint) server->gpus; g++)
    if (!busy[g])
      g_array_append_val(idle, g);
  return idle;
}

/* The slices an idle GPU lends: idle_gpu_memory of its HBM. */
static guint64 idle_gpu_slices(const EmaExperiment *experiment) {
  return (guint64) ((double) ema_gpu_hbm_bytes(&experiment->server.gpu) *
                    experiment->idle_gpu_memory) /
         EMA_SLICE_BYTES;
}

/* GPUs without a tenant lend their HBM (serving.h). */
void ema_serving_add_idle_gpus(const EmaExperiment *experiment, EmaPool *pool) {
  g_autoptr(GArray) idle = ema_serving_idle_gpus(experiment);
  for (guint i = 0; i < idle->len; i++)
    ema_pool_add_idle_gpu(pool, g_array_index(idle, guint, i), idle_gpu_slices(experiment));
}

EmaServingReport *ema_serving_run(const EmaExperiment *experiment, const char *out_dir,
                                  gboolean progress, GError **error) {
  g_autoptr(EmaServingReport) report = g_new0(EmaServingReport, 1);
  /* freed after the engines and the pool, which point into them */
  g_autoptr(GHashTable) step_models =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify) ema_step_model_free);
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(GArray) tenants = g_array_new(FALSE, TRUE, sizeof(Tenant));
  g_autoptr(EmaPool) pool = NULL;
  g_autoptr(GString) event_row = g_string_sized_new(256);
  Run run = {.experiment = experiment,
             .sim = sim,
             .tenants = tenants,
             .step_models = step_models,
             .out_dir = out_dir,
             .event_row = event_row,
             .event_kinds =
                 experiment->events_csv ? ema_experiment_event_kinds(experiment->events, NULL) : 0,
             .progress = progress,
             .timeline_capped_at = -1,
             .events_capped_at = -1,
             .steps_capped_at = -1,
             .wall_start = g_get_monotonic_time()};
  FILE *requests = NULL;
  gboolean ok = TRUE;

  g_return_val_if_fail(experiment->tenants && experiment->tenants->len > 0, NULL);
  pool = ema_pool_new(sim, &experiment->server, &experiment->policy, error);
  if (pool == NULL)
    return NULL;
  run.pool = pool;
  ema_pool_set_seed(pool, ema_trace_seed_derive((guint64) experiment->seed, "offload"));
  g_array_set_clear_func(tenants, tenant_clear);
  report->tenants = g_ptr_array_new_with_free_func(result_free);
  report->idle_gpus = g_array_new(FALSE, FALSE, sizeof(EmaIdleGpuResult));
  {
    g_autoptr(GArray) idle = ema_serving_idle_gpus(experiment);
    for (guint i = 0; i < idle->len; i++) {
      EmaIdleGpuResult result = {g_array_index(idle, guint, i), idle_gpu_slices(experiment), 0};
      g_array_append_val(report->idle_gpus, result);
    }
  }
  run.idle_gpus = report->idle_gpus;
  run.idle_peak_slices_lent = &report->idle_peak_slices_lent;
  run.sample_rows = (guint64) experiment->server.gpus;
  if (out_dir) {
    if (experiment->requests_csv) {
      requests = open_output(&run, "requests.csv", error);
      if (requests == NULL)
        return NULL;
      ema_requests_csv_header(requests);
    }
    run.timeline = open_output(&run, "timeline.csv", error);
    if (run.timeline == NULL) {
      close_output(&run, &requests, "requests.csv", NULL); /* none without requests.csv */
      return NULL;
    }
    fputs("time_s,gpu,tenant,kv_blocks_used,kv_blocks_free,running,waiting,last_step_ms,"
          "slices_lent,slices_borrowed,kv_blocks_remote,slices_staging,tokens\n",
          run.timeline);
    ema_pool_set_event_sink(pool, on_pool_event, &run, run.event_kinds);
    ema_pool_set_tier_per_step(pool, experiment->events_tier == 1);
    if (experiment->steps_csv) {
      run.steps = open_output(&run, "steps.csv", error);
      if (run.steps == NULL) {
        close_output(&run, &requests, "requests.csv", NULL);
        close_output(&run, &run.timeline, "timeline.csv", NULL);
        return NULL;
      }
      fputs(STEPS_HEADER, run.steps);
    }
  }
  for (guint i = 0; ok && i < experiment->tenants->len; i++)
    ok = add_tenant(&run, report, i, requests, error);
  if (ok) {
    ema_serving_add_idle_gpus(experiment, pool);
    ok = ema_pool_start(pool, error);
  }
  if (ok) {
    start_engines(&run);
    ema_event_init(&run.sample_event, on_sample, &run);
    ema_sim_schedule(sim, &run.sample_event, 0, SAMPLE_PRIORITY);
    ok =
        ema_sim_run_until(sim, experiment->duration ? experiment->duration : EMA_TIME_NEVER, error);
    ema_sim_cancel(sim, &run.sample_event);
    ema_pool_flush_events(pool);
  }
  if (progress)
    fputc('\n', stderr);
  report->events = ema_sim_events_fired(sim);
  report->simulated = ema_sim_now(sim);
  for (guint i = 0; ok && i < tenants->len; i++) {
    Tenant *tenant = &g_array_index(tenants, Tenant, i);
    tenant->result->rejected = ema_engine_rejected(tenant->engine);
    tenant->result->rejected_too_long = ema_engine_rejected_too_long(tenant->engine);
    tenant->result->outputs_raised = ema_engine_outputs_raised(tenant->engine);
    tenant->result->trace_skipped = ema_engine_trace_skipped(tenant->engine);
    tenant->result->prefix = ema_engine_prefix_cache_stats(tenant->engine);
    tenant->result->preemptions = ema_engine_preemptions(tenant->engine);
    tenant->result->preemptions_swapped = ema_engine_preemptions_swapped(tenant->engine);
    tenant->result->timed_out = ema_engine_timed_out(tenant->engine);
    tenant->result->unfinished = ema_engine_running(tenant->engine) +
                                 ema_engine_waiting(tenant->engine) +
                                 ema_engine_arriving(tenant->engine);
    tenant->result->arrived = tenant->result->metrics->completed + tenant->result->rejected +
                              tenant->result->timed_out + tenant->result->unfinished;
    tenant->result->slowed_by_peers = ema_pool_slowed_by_peers(pool, tenant->result->spec->gpu);
  }
  report->pool = *ema_pool_stats(pool);
  g_array_set_size(tenants, 0); /* engines go before the pool and the simulator */
  g_clear_pointer(&pool, ema_pool_free);
  if (!close_output(&run, &requests, "requests.csv", ok ? error : NULL))
    ok = FALSE;
  if (!close_output(&run, &run.timeline, "timeline.csv", ok ? error : NULL))
    ok = FALSE;
  if (!close_output(&run, &run.events, "events.csv", ok ? error : NULL))
    ok = FALSE;
  if (run.events_error) {
    if (ok)
      g_propagate_error(error, run.events_error);
    else
      g_error_free(run.events_error);
    ok = FALSE;
  }
  if (!close_output(&run, &run.steps, "steps.csv", ok ? error : NULL))
    ok = FALSE;
  report->wall_s = (double) (g_get_monotonic_time() - run.wall_start) / 1e6;
  report->timeline_capped_at = run.timeline_capped_at;
  report->events_capped_at = run.events_capped_at;
  report->steps_capped_at = run.steps_capped_at;
  report->timeline_rows = run.timeline_rows;
  return ok ? g_steal_pointer(&report) : NULL;
}
