/* guard.h: naming a policy plugin that crashes or hangs inside one of its
 * hooks (sim/pool/guard.c).
 *
 * Each call of a plugin's hook (a policy a module registered, not a built-in
 * one) is bracketed by ema_plugin_call_enter/leave: three atomic stores, no
 * system call. Once the first module is loaded (ema_plugin_guard_start),
 *   - fatal-signal handlers (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, on an
 *     alternate stack) write, only while a plugin call is in progress,
 *     "PROG: policy plugin 'NAME' (FILE) crashed in its HOOK hook (signal
 *     SIGSEGV)" with write(2), then hand the signal to the disposition that
 *     was there before (the process still dies of it). Not installed in an
 *     AddressSanitizer build, whose own report names the frames;
 *   - a watchdog thread (EMA_PLUGIN_CALL_LIMIT seconds, 60 by default, 0:
 *     none) ends the process with status 1 and "PROG: policy plugin 'NAME'
 *     (FILE): its HOOK hook ran past N s (EMA_PLUGIN_CALL_LIMIT): stopped"
 *     when one call runs past the limit.
 * Without a module loaded nothing is installed or started. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#if defined(__SANITIZE_ADDRESS__)
#define EMA_PLUGIN_GUARD_SIGNALS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMA_PLUGIN_GUARD_SIGNALS 0
#endif
#endif
#ifndef EMA_PLUGIN_GUARD_SIGNALS
#define EMA_PLUGIN_GUARD_SIGNALS 1 /* the crash handlers are installed with a module */
#endif

typedef enum {
  EMA_PLUGIN_HOOK_INIT,
  EMA_PLUGIN_HOOK_DECIDE,
  EMA_PLUGIN_HOOK_PLACE,
} EmaPluginHook;

/* The call in progress: the policy's preformatted name ("PROG: policy plugin 'NAME' (FILE)",
 * NULL outside plugin calls), its hook, and a count bumped at each call's entry. */
extern const char *ema_plugin_call_name;
extern gint ema_plugin_call_hook;
extern guint ema_plugin_call_seq;

/* NAME: the policy's guard name (EmaPolicyInfo.guard_name; NULL for a built-in: nothing done). */
static inline void ema_plugin_call_enter(const char *name, EmaPluginHook hook) {
  if (name == NULL)
    return;
  g_atomic_int_set(&ema_plugin_call_hook, (gint) hook);
  g_atomic_pointer_set(&ema_plugin_call_name, name);
  g_atomic_int_inc((gint *) &ema_plugin_call_seq);
}

static inline void ema_plugin_call_leave(const char *name) {
  if (name != NULL)
    g_atomic_pointer_set(&ema_plugin_call_name, NULL);
}

/* The limit EMA_PLUGIN_CALL_LIMIT sets (seconds, 0: none; 60 unset), or FALSE with an error
 * naming the variable when it is not a whole number of seconds. */
gboolean ema_plugin_guard_limit(guint *seconds, GError **error);
/* Install the crash handlers and start the watchdog (LIMIT seconds, 0: none), once. */
void ema_plugin_guard_start(guint limit);

G_END_DECLS
