/* event.c: the discrete-event core behind event.h. The queue is a binary
 * min-heap ordered by (time, priority, seq) whose entries hold each event's
 * key beside its pointer, so that a sift compares entries of one array and
 * reads no event (on a rack's few hundred queued events, the events' own
 * records are scattered over the heap of the process); the heap array grows
 * geometrically and is the only thing the core allocates, so scheduling an
 * event never allocates on its own.
 *
 * Invariants kept here:
 * - heap[i] is never later than its children heap[2i+1] and heap[2i+2] in the
 *   (time, priority, seq) order; heap[0] is the next event to fire.
 * - every queued event has heap_slot == 1 + its index in heap; every event
 *   not in the queue has heap_slot == 0 (an event is queued at most once).
 * - seq numbers are handed out from a counter that only grows, so equal
 *   (time, priority) keys fire in insertion order and the order is total.
 * - now never goes backwards: events are only accepted at times >= now, and
 *   each fired event's time is >= the previous one.
 * - error holds at most one GError (the first failure); later ones are freed.
 * - while an event's handler runs, the event is still in heap[0] but
 *   unscheduled (heap_slot 0, top_fired set): the first queue operation of
 *   the handler settles it. Re-scheduling a new event then takes the root's
 *   place with one sift down (a step's event, re-scheduled by its own
 *   handler, costs one sift where a pop and a push cost two); anything else
 *   removes it first. The order is total, so the events fire in the same
 *   order either way.
 */
#include "ema/core/event.h"

G_DEFINE_QUARK(ema - sim - error - quark, ema_sim_error)

/* A queued event and its key (a copy of its time, priority and seq). */
typedef struct {
  EmaTime time;
  gint priority;
  guint64 seq;
  EmaEvent *event;
} EmaHeapEntry;

struct _EmaSim {
  EmaHeapEntry *heap; /* heap[0 .. len-1], min-heap on (time, priority, seq) */
  guint len;
  guint cap;
  EmaTime now;
  guint64 next_seq;
  guint64 fired;
  gboolean running;   /* inside ema_sim_run_until() */
  gboolean stop;      /* ema_sim_stop() was called during this run */
  gboolean top_fired; /* heap[0] is the firing event, taken out but not yet removed */
  GError *error;      /* first failure not yet returned to the caller */
};

#define EMA_HEAP_MIN_CAP 64u

void ema_event_init(EmaEvent *event, EmaEventFunc func, gpointer user_data) {
  g_return_if_fail(event != NULL);

  event->time = 0;
  event->priority = 0;
  event->seq = 0;
  event->heap_slot = 0;
  event->func = func;
  event->user_data = user_data;
}

gboolean ema_event_is_scheduled(const EmaEvent *event) {
  g_return_val_if_fail(event != NULL, FALSE);

  return event->heap_slot != 0;
}

EmaSim *ema_sim_new(void) {
  EmaSim *sim = g_new0(EmaSim, 1);

  sim->cap = EMA_HEAP_MIN_CAP;
  sim->heap = g_new(EmaHeapEntry, sim->cap);
  return sim;
}

void ema_sim_free(EmaSim *sim) {
  if (sim == NULL)
    return;
  g_return_if_fail(!sim->running);

  /* The events belong to the caller: leave them unscheduled and reusable. */
  for (guint i = 0; i < sim->len; i++)
    sim->heap[i].event->heap_slot = 0;
  g_free(sim->heap);
  g_clear_error(&sim->error);
  g_free(sim);
}

EmaTime ema_sim_now(const EmaSim *sim) {
  g_return_val_if_fail(sim != NULL, 0);

  return sim->now;
}

guint64 ema_sim_events_fired(const EmaSim *sim) {
  g_return_val_if_fail(sim != NULL, 0);

  return sim->fired;
}

guint ema_sim_pending(const EmaSim *sim) {
  g_return_val_if_fail(sim != NULL, 0);

  return sim->len - (sim->top_fired ? 1 : 0);
}

static void ema_heap_settle(EmaSim *sim);

EmaTime ema_sim_next_time(EmaSim *sim) {
  g_return_val_if_fail(sim != NULL, EMA_TIME_NEVER);

  ema_heap_settle(sim);
  return sim->len > 0 ? sim->heap[0].time : EMA_TIME_NEVER;
}

/* TRUE if A fires before B. seq is unique, so the order is total. */
static inline gboolean ema_event_before(const EmaHeapEntry *a, const EmaHeapEntry *b) {
  if (a->time != b->time)
    return a->time < b->time;
  if (a->priority != b->priority)
    return a->priority < b->priority;
  return a->seq < b->seq;
}

/* Put ENTRY at heap index I and record the slot in its event. */
static inline void ema_heap_place(EmaSim *sim, guint i, const EmaHeapEntry *entry) {
  sim->heap[i] = *entry;
  entry->event->heap_slot = i + 1;
}

/* EVENT's entry, of the key it holds. */
static inline EmaHeapEntry ema_heap_entry(EmaEvent *event) {
  return (EmaHeapEntry){event->time, event->priority, event->seq, event};
}

/* Move ENTRY, meant for the hole at index I, up towards the root. */
static void ema_heap_sift_up(EmaSim *sim, guint i, EmaHeapEntry entry) {
  EmaHeapEntry *heap = sim->heap;

  while (i > 0) {
    guint parent = (i - 1) / 2;

    if (!ema_event_before(&entry, &heap[parent]))
      break;
    ema_heap_place(sim, i, &heap[parent]);
    i = parent;
  }
  ema_heap_place(sim, i, &entry);
}

/* Fill the hole at index I with ENTRY, which is known not to belong above I:
 * move the hole down to a leaf along the path of smaller children, then sift
 * ENTRY up from there. ENTRY usually comes from the bottom of the heap, so
 * this takes about one comparison per level instead of two. */
static void ema_heap_sift_down(EmaSim *sim, guint i, EmaHeapEntry entry) {
  EmaHeapEntry *heap = sim->heap;
  guint len = sim->len;

  for (;;) {
    guint child = 2 * i + 1;

    if (child >= len)
      break;
    if (child + 1 < len && ema_event_before(&heap[child + 1], &heap[child]))
      child++;
    ema_heap_place(sim, i, &heap[child]);
    i = child;
  }
  ema_heap_sift_up(sim, i, entry);
}

/* Take the event at index I out of the heap and mark it unscheduled. */
static void ema_heap_remove_at(EmaSim *sim, guint i) {
  EmaEvent *event = sim->heap[i].event;
  EmaHeapEntry last = sim->heap[--sim->len];

  event->heap_slot = 0;
  if (last.event == event)
    return;
  /* Fill the hole with the last element, which may belong above or below. */
  if (i > 0 && ema_event_before(&last, &sim->heap[(i - 1) / 2]))
    ema_heap_sift_up(sim, i, last);
  else
    ema_heap_sift_down(sim, i, last);
}

/* Remove the fired event still in heap[0], if any (the invariant above). */
static void ema_heap_settle(EmaSim *sim) {
  EmaHeapEntry last;

  if (!sim->top_fired)
    return;
  sim->top_fired = FALSE;
  last = sim->heap[--sim->len];
  if (sim->len > 0)
    ema_heap_sift_down(sim, 0, last);
}

static void ema_heap_grow(EmaSim *sim) {
  g_return_if_fail(sim->cap <= G_MAXUINT / 2);

  sim->cap *= 2;
  sim->heap = g_renew(EmaHeapEntry, sim->heap, sim->cap);
}

void ema_sim_schedule(EmaSim *sim, EmaEvent *event, EmaTime at, gint priority) {
  g_return_if_fail(sim != NULL);
  g_return_if_fail(event != NULL);
  g_return_if_fail(at >= sim->now);

  if (sim->top_fired && event->heap_slot == 0) {
    /* the fired event's place at the root: the new event fills it */
    sim->top_fired = FALSE;
    event->time = at;
    event->priority = priority;
    event->seq = sim->next_seq++;
    ema_heap_sift_down(sim, 0, ema_heap_entry(event));
    return;
  }
  ema_heap_settle(sim);
  /* A queued event must be queued in this sim. */
  g_return_if_fail(event->heap_slot == 0 || (event->heap_slot <= sim->len &&
                                             sim->heap[event->heap_slot - 1].event == event));

  event->time = at;
  event->priority = priority;
  event->seq = sim->next_seq++;

  if (event->heap_slot != 0) {
    /* Already queued: the key changed (and seq grew), so re-heapify in place. */
    guint i = event->heap_slot - 1;
    EmaHeapEntry entry = ema_heap_entry(event);

    if (i > 0 && ema_event_before(&entry, &sim->heap[(i - 1) / 2]))
      ema_heap_sift_up(sim, i, entry);
    else
      ema_heap_sift_down(sim, i, entry);
    return;
  }

  if (G_UNLIKELY(sim->len == sim->cap))
    ema_heap_grow(sim);
  sim->len++;
  ema_heap_sift_up(sim, sim->len - 1, ema_heap_entry(event));
}

void ema_sim_schedule_in(EmaSim *sim, EmaEvent *event, EmaTime delay, gint priority) {
  g_return_if_fail(sim != NULL);
  g_return_if_fail(delay >= 0);
  if (delay > EMA_TIME_NEVER - sim->now) {
    ema_sim_fail(sim, g_error_new(EMA_SIM_ERROR, EMA_SIM_ERROR_CLOCK,
                                  "at %.6g s an event %.6g s later is past the end of the "
                                  "simulator's clock (2^63 ns, about 292 years)",
                                  (double) sim->now / 1e9, (double) delay / 1e9));
    return;
  }

  ema_sim_schedule(sim, event, sim->now + delay, priority);
}

gboolean ema_sim_cancel(EmaSim *sim, EmaEvent *event) {
  g_return_val_if_fail(sim != NULL, FALSE);
  g_return_val_if_fail(event != NULL, FALSE);

  if (event->heap_slot == 0)
    return FALSE;
  ema_heap_settle(sim);
  g_return_val_if_fail(event->heap_slot <= sim->len, FALSE);
  g_return_val_if_fail(sim->heap[event->heap_slot - 1].event == event, FALSE);

  ema_heap_remove_at(sim, event->heap_slot - 1);
  return TRUE;
}

gboolean ema_sim_run_until(EmaSim *sim, EmaTime until, GError **error) {
  g_return_val_if_fail(sim != NULL, FALSE);
  g_return_val_if_fail(!sim->running, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

  sim->running = TRUE;
  sim->stop = FALSE;

  /* A failure reported outside a run is returned by the next run, which then
   * fires nothing. */
  while (sim->error == NULL && !sim->stop && sim->len > 0 && sim->heap[0].time <= until) {
    EmaEvent *event = sim->heap[0].event;

    event->heap_slot = 0;
    sim->top_fired = TRUE;
    sim->now = event->time;
    sim->fired++;
    if (event->func != NULL)
      event->func(sim, event, event->user_data);
    ema_heap_settle(sim);
  }

  sim->running = FALSE;
  sim->stop = FALSE;

  if (sim->error != NULL) {
    /* The clock stays at the failing event's time. */
    g_propagate_error(error, g_steal_pointer(&sim->error));
    return FALSE;
  }

  if (until != EMA_TIME_NEVER && until > sim->now && (sim->len == 0 || sim->heap[0].time > until))
    sim->now = until;
  return TRUE;
}

void ema_sim_stop(EmaSim *sim) {
  g_return_if_fail(sim != NULL);

  sim->stop = TRUE;
}

void ema_sim_fail(EmaSim *sim, GError *error) {
  g_return_if_fail(sim != NULL);
  g_return_if_fail(error != NULL);

  if (sim->error == NULL)
    sim->error = error;
  else
    g_error_free(error);
}
