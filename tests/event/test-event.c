/* test-event.c: unit tests for the discrete-event core (sim/core/event.c): firing
 * order (time, priority, insertion sequence), cancel and re-schedule, events
 * scheduled from handlers, run_until bounds and clock, stop and fail, the
 * counters, and a randomized comparison against a sorted reference. */
#include <ema/core/event.h>

#include <stdlib.h>

/* A test event: the EmaEvent embedded in a caller struct, plus a log that
 * records which events fired and what the clock read when they did. */
typedef struct {
  GArray *ids;   /* gint */
  GArray *times; /* EmaTime */
} Log;

typedef struct {
  EmaEvent event;
  gint id;
  Log *log;
} TestEvent;

static Log *log_new(void) {
  Log *log = g_new0(Log, 1);

  log->ids = g_array_new(FALSE, FALSE, sizeof(gint));
  log->times = g_array_new(FALSE, FALSE, sizeof(EmaTime));
  return log;
}

static void log_free(Log *log) {
  g_array_unref(log->ids);
  g_array_unref(log->times);
  g_free(log);
}

static void log_fire(EmaSim *sim, EmaEvent *event, gpointer user_data) {
  TestEvent *te = user_data;
  EmaTime now = ema_sim_now(sim);

  g_assert_true(event == &te->event);
  g_assert_false(ema_event_is_scheduled(event));
  g_array_append_val(te->log->ids, te->id);
  g_array_append_val(te->log->times, now);
}

static void test_event_init(TestEvent *te, gint id, Log *log, EmaEventFunc func) {
  te->id = id;
  te->log = log;
  ema_event_init(&te->event, func != NULL ? func : log_fire, te);
}

static void assert_ids(const Log *log, const gint *expected, guint n) {
  g_assert_cmpuint(log->ids->len, ==, n);
  for (guint i = 0; i < n; i++)
    g_assert_cmpint(g_array_index(log->ids, gint, i), ==, expected[i]);
}

static void test_new(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  EmaEvent ev;
  g_autoptr(GError) error = NULL;

  ema_event_init(&ev, NULL, NULL);
  g_assert_false(ema_event_is_scheduled(&ev));
  g_assert_cmpint(ema_sim_now(sim), ==, 0);
  g_assert_cmpuint(ema_sim_pending(sim), ==, 0);
  g_assert_cmpuint(ema_sim_events_fired(sim), ==, 0);

  /* An empty queue run to NEVER leaves the clock alone. */
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  g_assert_no_error(error);
  g_assert_cmpint(ema_sim_now(sim), ==, 0);
  g_assert_cmpint(EMA_S(1), ==, EMA_MS(1000));
  g_assert_cmpint(EMA_MS(1), ==, EMA_US(1000));
  g_assert_cmpint(EMA_US(1), ==, EMA_NS(1000));
}

static void test_order_time(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  Log *log = log_new();
  TestEvent ev[6];
  const EmaTime at[6] = {50, 10, 40, 0, 30, 20};
  const gint expected[6] = {3, 1, 5, 4, 2, 0};
  const EmaTime expected_times[6] = {0, 10, 20, 30, 40, 50};
  g_autoptr(GError) error = NULL;

  for (gint i = 0; i < 6; i++) {
    test_event_init(&ev[i], i, log, NULL);
    ema_sim_schedule(sim, &ev[i].event, at[i], 0);
    g_assert_true(ema_event_is_scheduled(&ev[i].event));
  }
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  g_assert_no_error(error);
  assert_ids(log, expected, 6);
  for (guint i = 0; i < 6; i++)
    g_assert_cmpint(g_array_index(log->times, EmaTime, i), ==, expected_times[i]);
  g_assert_cmpint(ema_sim_now(sim), ==, 50);
  for (gint i = 0; i < 6; i++)
    g_assert_false(ema_event_is_scheduled(&ev[i].event));
  log_free(log);
}

static void test_order_ties(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  Log *log = log_new();
  TestEvent ev[8];
  /* Same time for all but 7; priorities mixed, several equal. */
  const gint prio[8] = {2, 0, 1, 0, -1, 2, 0, -5};
  const EmaTime at[8] = {100, 100, 100, 100, 100, 100, 100, 200};
  const gint expected[8] = {4, 1, 3, 6, 2, 0, 5, 7};
  g_autoptr(GError) error = NULL;

  for (gint i = 0; i < 8; i++) {
    test_event_init(&ev[i], i, log, NULL);
    ema_sim_schedule(sim, &ev[i].event, at[i], prio[i]);
  }
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  g_assert_no_error(error);
  assert_ids(log, expected, 8);
  log_free(log);
}

static void test_cancel(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  Log *log = log_new();
  TestEvent ev[5];
  const gint expected[3] = {0, 2, 4};
  g_autoptr(GError) error = NULL;

  for (gint i = 0; i < 5; i++) {
    test_event_init(&ev[i], i, log, NULL);
    ema_sim_schedule(sim, &ev[i].event, 10 * (i + 1), 0);
  }
  g_assert_cmpuint(ema_sim_pending(sim), ==, 5);
  g_assert_true(ema_sim_cancel(sim, &ev[3].event));
  g_assert_true(ema_sim_cancel(sim, &ev[1].event));
  g_assert_false(ema_event_is_scheduled(&ev[1].event));
  g_assert_false(ema_event_is_scheduled(&ev[3].event));
  /* Cancelling twice, or never scheduled, returns FALSE. */
  g_assert_false(ema_sim_cancel(sim, &ev[3].event));
  g_assert_cmpuint(ema_sim_pending(sim), ==, 3);

  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  g_assert_no_error(error);
  assert_ids(log, expected, 3);
  g_assert_cmpuint(ema_sim_events_fired(sim), ==, 3);

  /* After firing, the event is no longer scheduled. */
  g_assert_false(ema_sim_cancel(sim, &ev[0].event));
  {
    TestEvent fresh;

    test_event_init(&fresh, 9, log, NULL);
    g_assert_false(ema_sim_cancel(sim, &fresh.event));
  }
  /* Cancel the root and the last element of the heap. */
  for (gint i = 0; i < 5; i++)
    ema_sim_schedule(sim, &ev[i].event, 100 + i, 0);
  g_assert_true(ema_sim_cancel(sim, &ev[0].event));
  g_assert_true(ema_sim_cancel(sim, &ev[4].event));
  g_array_set_size(log->ids, 0);
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  {
    const gint expected2[3] = {1, 2, 3};

    assert_ids(log, expected2, 3);
  }
  log_free(log);
}

static void test_reschedule(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  Log *log = log_new();
  TestEvent ev[4];
  const gint expected[4] = {2, 1, 3, 0};
  g_autoptr(GError) error = NULL;

  for (gint i = 0; i < 4; i++) {
    test_event_init(&ev[i], i, log, NULL);
    ema_sim_schedule(sim, &ev[i].event, 10 * (i + 1), 0); /* 10 20 30 40 */
  }
  /* Move 0 later, 2 earlier, and 1 to 40, the time of 3; 3 was inserted
   * first, but re-scheduling takes a new sequence number... */
  ema_sim_schedule(sim, &ev[0].event, 100, 0);
  ema_sim_schedule(sim, &ev[2].event, 5, 0);
  ema_sim_schedule(sim, &ev[1].event, 40, 0);
  /* ...so moving 3 to 40 as well puts it after 1. */
  ema_sim_schedule(sim, &ev[3].event, 40, 0);
  g_assert_cmpuint(ema_sim_pending(sim), ==, 4);

  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  g_assert_no_error(error);
  assert_ids(log, expected, 4);
  g_assert_cmpint(g_array_index(log->times, EmaTime, 0), ==, 5);
  g_assert_cmpint(g_array_index(log->times, EmaTime, 3), ==, 100);
  g_assert_cmpuint(ema_sim_events_fired(sim), ==, 4);
  log_free(log);
}

/* Handler for test_schedule_from_handler: the first event to fire schedules
 * its siblings at the current time, and also re-schedules itself once. */
typedef struct {
  TestEvent te[4];
  gint reschedules;
} Chain;

static void chain_fire(EmaSim *sim, EmaEvent *event, gpointer user_data) {
  TestEvent *te = user_data;
  Chain *chain = (Chain *) (te - te->id);

  log_fire(sim, event, user_data);
  if (te->id == 0 && chain->reschedules == 0) {
    chain->reschedules++;
    /* Same time, same priority: these fire after, in insertion order. */
    ema_sim_schedule_in(sim, &chain->te[2].event, 0, 0);
    ema_sim_schedule(sim, &chain->te[1].event, ema_sim_now(sim), 0);
    ema_sim_schedule_in(sim, &chain->te[0].event, 0, 0);
    ema_sim_schedule_in(sim, &chain->te[3].event, 7, 0);
  }
}

static void test_schedule_from_handler(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  Log *log = log_new();
  Chain chain = {0};
  TestEvent other;
  const gint expected[6] = {0, 9, 2, 1, 0, 3};
  const EmaTime expected_times[6] = {10, 10, 10, 10, 10, 17};
  g_autoptr(GError) error = NULL;

  for (gint i = 0; i < 4; i++)
    test_event_init(&chain.te[i], i, log, chain_fire);
  test_event_init(&other, 9, log, NULL);
  ema_sim_schedule(sim, &chain.te[0].event, 10, 0);
  /* Already queued at 10 before the handler runs: fires before new ones. */
  ema_sim_schedule(sim, &other.event, 10, 0);

  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  g_assert_no_error(error);
  assert_ids(log, expected, 6);
  for (guint i = 0; i < 6; i++)
    g_assert_cmpint(g_array_index(log->times, EmaTime, i), ==, expected_times[i]);
  g_assert_cmpuint(ema_sim_events_fired(sim), ==, 6);
  g_assert_cmpuint(ema_sim_pending(sim), ==, 0);
  log_free(log);
}

static void test_run_until(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  Log *log = log_new();
  TestEvent ev[4];
  const EmaTime at[4] = {10, 20, 20, 35};
  g_autoptr(GError) error = NULL;

  for (gint i = 0; i < 4; i++) {
    test_event_init(&ev[i], i, log, NULL);
    ema_sim_schedule(sim, &ev[i].event, at[i], 0);
  }

  /* Events at exactly UNTIL fire; the clock then reads UNTIL. */
  g_assert_true(ema_sim_run_until(sim, 20, &error));
  g_assert_no_error(error);
  {
    const gint expected[3] = {0, 1, 2};

    assert_ids(log, expected, 3);
  }
  g_assert_cmpint(ema_sim_now(sim), ==, 20);
  g_assert_cmpuint(ema_sim_pending(sim), ==, 1);

  /* Nothing before 30: the clock still advances to the bound. */
  g_assert_true(ema_sim_run_until(sim, 30, &error));
  g_assert_cmpint(ema_sim_now(sim), ==, 30);
  g_assert_cmpuint(log->ids->len, ==, 3);

  /* Scheduling is relative to the advanced clock. */
  ema_sim_schedule_in(sim, &ev[0].event, 2, 0); /* 32 */

  /* A later run continues where the previous one stopped. */
  g_assert_true(ema_sim_run_until(sim, 1000, &error));
  g_assert_no_error(error);
  {
    const gint expected[5] = {0, 1, 2, 0, 3};

    assert_ids(log, expected, 5);
  }
  g_assert_cmpint(g_array_index(log->times, EmaTime, 3), ==, 32);
  g_assert_cmpint(g_array_index(log->times, EmaTime, 4), ==, 35);
  /* The queue ran dry before the bound: the clock reads the bound. */
  g_assert_cmpint(ema_sim_now(sim), ==, 1000);

  /* A bound in the past fires nothing and never moves the clock back. */
  ema_sim_schedule(sim, &ev[1].event, 1500, 0);
  g_assert_true(ema_sim_run_until(sim, 500, &error));
  g_assert_cmpint(ema_sim_now(sim), ==, 1000);
  g_assert_cmpuint(ema_sim_pending(sim), ==, 1);

  /* EMA_TIME_NEVER: the clock reads the last event's time. */
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  g_assert_cmpint(ema_sim_now(sim), ==, 1500);
  g_assert_cmpuint(ema_sim_events_fired(sim), ==, 6);
  log_free(log);
}

static void stop_fire(EmaSim *sim, EmaEvent *event, gpointer user_data) {
  TestEvent *te = user_data;

  log_fire(sim, event, user_data);
  if (te->id == 1)
    ema_sim_stop(sim);
}

static void test_stop(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  Log *log = log_new();
  TestEvent ev[4];
  g_autoptr(GError) error = NULL;

  for (gint i = 0; i < 4; i++) {
    test_event_init(&ev[i], i, log, stop_fire);
    ema_sim_schedule(sim, &ev[i].event, 10 * (i + 1), 0);
  }
  /* Stop after event 1's handler; the clock reads its time, not UNTIL. */
  g_assert_true(ema_sim_run_until(sim, 100, &error));
  g_assert_no_error(error);
  {
    const gint expected[2] = {0, 1};

    assert_ids(log, expected, 2);
  }
  g_assert_cmpint(ema_sim_now(sim), ==, 20);
  g_assert_cmpuint(ema_sim_pending(sim), ==, 2);
  g_assert_cmpuint(ema_sim_events_fired(sim), ==, 2);

  /* The stop request does not carry over to the next run. */
  g_assert_true(ema_sim_run_until(sim, 100, &error));
  {
    const gint expected[4] = {0, 1, 2, 3};

    assert_ids(log, expected, 4);
  }
  g_assert_cmpint(ema_sim_now(sim), ==, 100);
  log_free(log);
}

#define TEST_ERROR (g_quark_from_static_string("test-event-error"))
enum { TEST_ERROR_FIRST = 1, TEST_ERROR_SECOND };

static void fail_fire(EmaSim *sim, EmaEvent *event, gpointer user_data) {
  TestEvent *te = user_data;

  log_fire(sim, event, user_data);
  if (te->id == 2) {
    ema_sim_fail(sim, g_error_new(TEST_ERROR, TEST_ERROR_FIRST, "first failure"));
    /* A second failure is dropped (and freed). */
    ema_sim_fail(sim, g_error_new(TEST_ERROR, TEST_ERROR_SECOND, "second failure"));
  }
}

static void test_fail(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  Log *log = log_new();
  TestEvent ev[4];
  GError *error = NULL;

  for (gint i = 0; i < 4; i++) {
    test_event_init(&ev[i], i, log, fail_fire);
    ema_sim_schedule(sim, &ev[i].event, 10 * (i + 1), 0);
  }
  g_assert_false(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  g_assert_error(error, TEST_ERROR, TEST_ERROR_FIRST);
  g_assert_cmpstr(error->message, ==, "first failure");
  g_clear_error(&error);
  {
    const gint expected[3] = {0, 1, 2};

    assert_ids(log, expected, 3);
  }
  g_assert_cmpint(ema_sim_now(sim), ==, 30);
  g_assert_cmpuint(ema_sim_pending(sim), ==, 1);

  /* The error was handed over: the next run is clean. */
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  g_assert_no_error(error);
  g_assert_cmpint(ema_sim_now(sim), ==, 40);

  /* A NULL error location still frees the error. */
  ema_sim_schedule_in(sim, &ev[2].event, 1, 0);
  g_assert_false(ema_sim_run_until(sim, EMA_TIME_NEVER, NULL));
  log_free(log);
}

static void test_schedule_past(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  EmaEvent ev;
  g_autoptr(GError) error = NULL;

  ema_event_init(&ev, NULL, NULL);
  g_assert_true(ema_sim_run_until(sim, 100, &error));
  g_assert_cmpint(ema_sim_now(sim), ==, 100);

  g_test_expect_message("ema", G_LOG_LEVEL_CRITICAL, "*at >= sim->now*");
  ema_sim_schedule(sim, &ev, 99, 0);
  g_test_assert_expected_messages();
  g_assert_false(ema_event_is_scheduled(&ev));

  g_test_expect_message("ema", G_LOG_LEVEL_CRITICAL, "*delay >= 0*");
  ema_sim_schedule_in(sim, &ev, -1, 0);
  g_test_assert_expected_messages();
  g_assert_false(ema_event_is_scheduled(&ev));
  g_assert_cmpuint(ema_sim_pending(sim), ==, 0);

  /* Exactly now is fine. */
  ema_sim_schedule(sim, &ev, 100, 0);
  g_assert_true(ema_event_is_scheduled(&ev));
}

static void test_counters(void) {
  EmaSim *sim = ema_sim_new();
  Log *log = log_new();
  TestEvent ev[100];
  g_autoptr(GError) error = NULL;

  for (gint i = 0; i < 100; i++) {
    test_event_init(&ev[i], i, log, NULL);
    ema_sim_schedule(sim, &ev[i].event, i, 0);
    g_assert_cmpuint(ema_sim_pending(sim), ==, (guint) i + 1);
  }
  /* Re-scheduling does not change the count. */
  ema_sim_schedule(sim, &ev[5].event, 1000, 0);
  g_assert_cmpuint(ema_sim_pending(sim), ==, 100);
  for (gint i = 0; i < 100; i += 10)
    g_assert_true(ema_sim_cancel(sim, &ev[i].event));
  g_assert_cmpuint(ema_sim_pending(sim), ==, 90);
  g_assert_cmpuint(ema_sim_events_fired(sim), ==, 0);

  g_assert_true(ema_sim_run_until(sim, 49, &error));
  g_assert_cmpuint(ema_sim_events_fired(sim), ==, 44); /* 0..49, minus 5 cancelled and ev[5] */
  g_assert_cmpuint(ema_sim_pending(sim), ==, 46);
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  g_assert_cmpuint(ema_sim_events_fired(sim), ==, 90);
  g_assert_cmpuint(ema_sim_pending(sim), ==, 0);

  /* Freeing a sim with queued events leaves them unscheduled. */
  ema_sim_schedule(sim, &ev[1].event, 2000, 0);
  ema_sim_schedule(sim, &ev[2].event, 2000, 0);
  ema_sim_free(sim);
  g_assert_false(ema_event_is_scheduled(&ev[1].event));
  g_assert_false(ema_event_is_scheduled(&ev[2].event));
  log_free(log);
}

/* Randomized test: a pool of events, random schedule / re-schedule / cancel
 * and run_until steps. A reference keeps each event's key with our own
 * insertion counter; after each run, the events fired must equal the
 * reference's queued events with time <= bound, sorted by (time, priority,
 * seq). */
#define RANDOM_POOL 2000
#define RANDOM_OPS 20000

typedef struct {
  gint id;
  EmaTime time;
  gint priority;
  guint64 seq;
} RefKey;

typedef struct {
  TestEvent te;
  gboolean queued; /* reference state */
  RefKey key;
} RandomEvent;

static gint ref_key_compare(gconstpointer a, gconstpointer b) {
  const RefKey *x = a, *y = b;

  if (x->time != y->time)
    return x->time < y->time ? -1 : 1;
  if (x->priority != y->priority)
    return x->priority < y->priority ? -1 : 1;
  if (x->seq != y->seq)
    return x->seq < y->seq ? -1 : 1;
  return 0;
}

static void random_check_run(EmaSim *sim, RandomEvent *pool, Log *log, EmaTime until) {
  g_autoptr(GArray) expected = g_array_new(FALSE, FALSE, sizeof(RefKey));
  g_autoptr(GError) error = NULL;
  guint queued = 0;
  guint64 fired_before = ema_sim_events_fired(sim);

  for (gint i = 0; i < RANDOM_POOL; i++) {
    if (!pool[i].queued)
      continue;
    queued++;
    if (pool[i].key.time <= until)
      g_array_append_val(expected, pool[i].key);
  }
  g_array_sort(expected, ref_key_compare);
  g_assert_cmpuint(ema_sim_pending(sim), ==, queued);

  g_array_set_size(log->ids, 0);
  g_array_set_size(log->times, 0);
  g_assert_true(ema_sim_run_until(sim, until, &error));
  g_assert_no_error(error);

  g_assert_cmpuint(log->ids->len, ==, expected->len);
  for (guint i = 0; i < expected->len; i++) {
    const RefKey *k = &g_array_index(expected, RefKey, i);

    g_assert_cmpint(g_array_index(log->ids, gint, i), ==, k->id);
    g_assert_cmpint(g_array_index(log->times, EmaTime, i), ==, k->time);
    pool[k->id].queued = FALSE;
    g_assert_false(ema_event_is_scheduled(&pool[k->id].te.event));
  }
  g_assert_cmpuint(ema_sim_events_fired(sim), ==, fired_before + expected->len);
  g_assert_cmpuint(ema_sim_pending(sim), ==, queued - expected->len);
  if (until != EMA_TIME_NEVER)
    g_assert_cmpint(ema_sim_now(sim), ==, until);
}

static void test_random(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(GRand) rand = g_rand_new_with_seed(20240611);
  RandomEvent *pool = g_new0(RandomEvent, RANDOM_POOL);
  Log *log = log_new();
  guint64 seq = 0;
  guint scheduled = 0, moved = 0, cancelled = 0, runs = 0;

  for (gint i = 0; i < RANDOM_POOL; i++)
    test_event_init(&pool[i].te, i, log, NULL);

  for (gint op = 0; op < RANDOM_OPS; op++) {
    gint32 dice = g_rand_int_range(rand, 0, 100);
    RandomEvent *re = &pool[g_rand_int_range(rand, 0, RANDOM_POOL)];

    if (dice < 55) {
      /* Schedule or move; a narrow time window and few priorities make ties
       * on both time and priority common. */
      EmaTime at = ema_sim_now(sim) + g_rand_int_range(rand, 0, 1000);
      gint priority = g_rand_int_range(rand, -2, 3);

      g_assert_cmpint(ema_event_is_scheduled(&re->te.event), ==, re->queued);
      ema_sim_schedule(sim, &re->te.event, at, priority);
      moved += re->queued;
      re->queued = TRUE;
      re->key = (RefKey){.id = re->te.id, .time = at, .priority = priority, .seq = seq++};
      scheduled++;
    } else if (dice < 99) {
      g_assert_cmpint(ema_sim_cancel(sim, &re->te.event), ==, re->queued);
      cancelled += re->queued;
      re->queued = FALSE;
    } else {
      random_check_run(sim, pool, log, ema_sim_now(sim) + g_rand_int_range(rand, 0, 100));
      runs++;
    }
  }
  random_check_run(sim, pool, log, EMA_TIME_NEVER);
  g_assert_cmpuint(ema_sim_pending(sim), ==, 0);
  g_assert_cmpuint(ema_sim_events_fired(sim) + cancelled + moved, ==, scheduled);
  g_test_message("random: %u schedules (%u moves), %u cancels, %u runs, %" G_GUINT64_FORMAT
                 " fired",
                 scheduled, moved, cancelled, runs, ema_sim_events_fired(sim));
  g_assert_cmpuint(ema_sim_events_fired(sim), >, 1000);

  log_free(log);
  g_free(pool);
}

int main(int argc, char *argv[]) {
  g_test_init(&argc, &argv, NULL);

  g_test_add_func("/event/new", test_new);
  g_test_add_func("/event/order-time", test_order_time);
  g_test_add_func("/event/order-ties", test_order_ties);
  g_test_add_func("/event/cancel", test_cancel);
  g_test_add_func("/event/reschedule", test_reschedule);
  g_test_add_func("/event/schedule-from-handler", test_schedule_from_handler);
  g_test_add_func("/event/run-until", test_run_until);
  g_test_add_func("/event/stop", test_stop);
  g_test_add_func("/event/fail", test_fail);
  g_test_add_func("/event/schedule-past", test_schedule_past);
  g_test_add_func("/event/counters", test_counters);
  g_test_add_func("/event/random", test_random);

  return g_test_run();
}
