/* event.h: the discrete-event core. Simulated time is an integer number of
 * nanoseconds (EmaTime). Events are intrusive: the caller embeds an EmaEvent
 * in its own struct, so scheduling never allocates. Events fire in the order
 * (time, priority, insertion sequence); two runs with the same inputs fire the
 * same events in the same order. Schedule and cancel are O(log n) on a binary
 * heap that stores each event's position inside the event itself.
 *
 * Invariants: simulated time never goes backwards; an event is in the queue
 * at most once; a handler may schedule, cancel, stop the run or fail it. */
#pragma once

#include <glib.h>
#include <math.h>

G_BEGIN_DECLS

/* Simulated time in nanoseconds since the start of the run. */
typedef gint64 EmaTime;

#define EMA_TIME_NEVER G_MAXINT64

#define EMA_SIM_ERROR (ema_sim_error_quark())
GQuark ema_sim_error_quark(void);
typedef enum {
  EMA_SIM_ERROR_CLOCK,      /* an event past the end of the clock */
  EMA_SIM_ERROR_OVERLOADED, /* a queue past its bound (a tenant's engine.max_waiting) */
} EmaSimError;
#define EMA_NS(x) ((EmaTime) (x))
#define EMA_US(x) ((EmaTime) (x) *1000)
#define EMA_MS(x) ((EmaTime) (x) *1000000)
#define EMA_S(x) ((EmaTime) (x) *1000000000)

/* llround(X) without the library call where 0 <= X < 2^53 (X less its
 * truncation is exact there, and halves round up, as llround's do away
 * from zero); llround() itself elsewhere, saturated at the ends of gint64
 * (llround of a value outside it is undefined: a huge time must not come
 * out negative). A duration in seconds to EmaTime: ema_llround(seconds *
 * 1e9). */
static inline gint64 ema_llround(double x) {
  gint64 whole;
  if (x >= 9223372036854775807.0)
    return G_MAXINT64;
  if (x <= -9223372036854775808.0)
    return G_MININT64;
  if (!(x >= 0 && x < 9007199254740992.0))
    return llround(x);
  whole = (gint64) x;
  return x - (double) whole >= 0.5 ? whole + 1 : whole;
}

typedef struct _EmaSim EmaSim;
typedef struct _EmaEvent EmaEvent;

/* Called when EVENT fires; sim's clock already reads the event's time. The
 * handler may re-schedule EVENT itself. */
typedef void (*EmaEventFunc)(EmaSim *sim, EmaEvent *event, gpointer user_data);

/* Embed this in your own struct and initialise it once with ema_event_init().
 * The fields are private to the core. */
struct _EmaEvent {
  EmaTime time;
  gint priority;   /* lower fires first among equal times */
  guint64 seq;     /* insertion sequence, breaks remaining ties */
  guint heap_slot; /* 0 = not scheduled, else 1 + index in the heap */
  EmaEventFunc func;
  gpointer user_data;
};

void ema_event_init(EmaEvent *event, EmaEventFunc func, gpointer user_data);
gboolean ema_event_is_scheduled(const EmaEvent *event);

EmaSim *ema_sim_new(void);
void ema_sim_free(EmaSim *sim);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaSim, ema_sim_free)

EmaTime ema_sim_now(const EmaSim *sim);
/* Number of events fired so far. */
guint64 ema_sim_events_fired(const EmaSim *sim);
/* Number of events waiting in the queue. */
guint ema_sim_pending(const EmaSim *sim);
/* The time of the next event queued (not the one firing now), or
 * EMA_TIME_NEVER when none is. */
EmaTime ema_sim_next_time(EmaSim *sim);

/* Schedule EVENT at absolute time AT (>= now). An event that is already
 * scheduled is moved to the new time (and gets a new sequence number). */
void ema_sim_schedule(EmaSim *sim, EmaEvent *event, EmaTime at, gint priority);
/* Schedule EVENT DELAY nanoseconds from now (DELAY >= 0). A time past the
 * clock's end (2^63 ns, about 292 years: the inputs asked for it) fails the
 * run (EMA_SIM_ERROR_CLOCK) instead. */
void ema_sim_schedule_in(EmaSim *sim, EmaEvent *event, EmaTime delay, gint priority);
/* Remove EVENT from the queue. Returns FALSE if it was not scheduled. */
gboolean ema_sim_cancel(EmaSim *sim, EmaEvent *event);

/* Fire events in order while their time is <= UNTIL (EMA_TIME_NEVER: until
 * the queue is empty), or until a handler calls ema_sim_stop() or
 * ema_sim_fail(). On return the clock reads the time of the last event fired
 * (or UNTIL if the queue ran past it and UNTIL is finite). Returns FALSE and
 * sets ERROR if a handler failed the run. */
gboolean ema_sim_run_until(EmaSim *sim, EmaTime until, GError **error);
/* Ask the running loop to return after the current handler. */
void ema_sim_stop(EmaSim *sim);
/* Fail the run: takes ownership of ERROR; the loop returns it after the
 * current handler. Only the first failure is kept. */
void ema_sim_fail(EmaSim *sim, GError *error);

G_END_DECLS
