/* bench-event.c: microbenchmark of the discrete-event core (sim/core/event.c).
 *
 * Hold model: N events are kept pending; every fired event re-schedules
 * itself at now + a pseudo-random delay (uniform in [1, 2^20] ns, from a
 * xorshift64* generator with a fixed seed), so the queue size stays at N and
 * each event costs one pop and one push. The loop runs a fixed number of
 * events (default 20 million) for each N and reports events/s and ns/event,
 * measured with the monotonic clock around ema_sim_run_until() only (setup
 * and teardown are not timed).
 *
 * Usage: bench-event [EVENTS [N...]]   (defaults: 20000000 1000 100000) */
#include <ema/core/event.h>

#include <stdio.h>
#include <stdlib.h>

typedef struct {
  guint64 rng;    /* xorshift64* state */
  guint64 target; /* stop once this many events have fired */
  EmaTime checksum;
} Hold;

static inline guint64 bench_rng_next(guint64 *state) {
  guint64 x = *state;

  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * G_GUINT64_CONSTANT(0x2545F4914F6CDD1D);
}

static inline EmaTime bench_delay(Hold *hold) {
  return (EmaTime) (bench_rng_next(&hold->rng) >> 44) + 1; /* 1 .. 2^20 */
}

static void bench_hold_fire(EmaSim *sim, EmaEvent *event, gpointer user_data) {
  Hold *hold = user_data;

  hold->checksum += ema_sim_now(sim);
  if (G_UNLIKELY(ema_sim_events_fired(sim) >= hold->target)) {
    ema_sim_stop(sim);
    return;
  }
  ema_sim_schedule_in(sim, event, bench_delay(hold), 0);
}

typedef struct {
  guint n;
  guint64 events;
  gdouble seconds;
  EmaTime sim_end;
} BenchResult;

static BenchResult bench_hold_run(guint n, guint64 events) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  EmaEvent *pool = g_new(EmaEvent, n);
  Hold hold = {.rng = G_GUINT64_CONSTANT(0x9E3779B97F4A7C15), .target = events};
  g_autoptr(GError) error = NULL;
  BenchResult result = {.n = n};
  gint64 t0, t1;

  for (guint i = 0; i < n; i++) {
    ema_event_init(&pool[i], bench_hold_fire, &hold);
    ema_sim_schedule_in(sim, &pool[i], bench_delay(&hold), 0);
  }

  t0 = g_get_monotonic_time();
  if (!ema_sim_run_until(sim, EMA_TIME_NEVER, &error)) {
    g_printerr("bench-event: run failed: %s\n", error->message);
    exit(EXIT_FAILURE);
  }
  t1 = g_get_monotonic_time();

  result.events = ema_sim_events_fired(sim);
  result.seconds = (gdouble) (t1 - t0) / G_USEC_PER_SEC;
  result.sim_end = ema_sim_now(sim);
  if (ema_sim_pending(sim) != n - 1 || result.events != events) {
    g_printerr("bench-event: hold model lost events (pending %u, fired %" G_GUINT64_FORMAT ")\n",
               ema_sim_pending(sim), result.events);
    exit(EXIT_FAILURE);
  }
  /* Keep the handler's work observable. */
  if (hold.checksum == 42)
    g_printerr("checksum\n");

  g_clear_pointer(&sim, ema_sim_free);
  g_free(pool);
  return result;
}

static guint64 bench_parse(const char *arg) {
  gchar *end = NULL;
  guint64 v = g_ascii_strtoull(arg, &end, 10);

  if (end == arg || *end != '\0' || v == 0) {
    g_printerr("bench-event: not a positive integer: %s\n", arg);
    g_printerr("usage: bench-event [EVENTS [N...]]\n");
    exit(EXIT_FAILURE);
  }
  return v;
}

int main(int argc, char *argv[]) {
  guint64 events = 20000000;
  guint default_sizes[] = {1000, 100000};
  guint *sizes = default_sizes;
  guint n_sizes = G_N_ELEMENTS(default_sizes);
  g_autofree guint *arg_sizes = NULL;

  if (argc > 1)
    events = bench_parse(argv[1]);
  if (argc > 2) {
    n_sizes = (guint) argc - 2;
    arg_sizes = g_new(guint, n_sizes);
    for (guint i = 0; i < n_sizes; i++) {
      guint64 v = bench_parse(argv[i + 2]);

      if (v > G_MAXUINT / 2) {
        g_printerr("bench-event: N too large: %s\n", argv[i + 2]);
        return EXIT_FAILURE;
      }
      arg_sizes[i] = (guint) v;
    }
    sizes = arg_sizes;
  }

  printf("event core, hold model: %" G_GUINT64_FORMAT
         " events per run, delay uniform in [1, 2^20] ns\n",
         events);
  printf("%10s  %12s  %9s  %12s  %9s\n", "pending N", "events", "seconds", "events/s", "ns/event");
  for (guint i = 0; i < n_sizes; i++) {
    BenchResult r = bench_hold_run(sizes[i], events);
    gdouble per_s = r.seconds > 0 ? (gdouble) r.events / r.seconds : 0;
    gdouble ns = r.events > 0 ? r.seconds * 1e9 / (gdouble) r.events : 0;

    printf("%10u  %12" G_GUINT64_FORMAT "  %9.3f  %12.0f  %9.1f\n", r.n, r.events, r.seconds, per_s,
           ns);
    fflush(stdout);
  }
  return EXIT_SUCCESS;
}
