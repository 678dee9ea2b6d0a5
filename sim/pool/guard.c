/* guard.c: the crash handlers and the watchdog of policy plugin calls
 * (guard.h).
 *
 * Invariants:
 *   - nothing is installed or started before ema_plugin_guard_start, which
 *     the registry calls once a module is loaded: a run of built-in policies
 *     is unchanged;
 *   - the signal handler uses write(2), sigaction(2) and raise(3) only, on
 *     strings formatted before (the policy's guard name, the hook and
 *     signal names here); outside a plugin call it only restores the
 *     disposition that was there before and lets the signal take its course;
 *   - the watchdog reads the three shared fields with atomics only, and
 *     stops the process when it has seen the same call (the same sequence
 *     number with a name set) for longer than the limit. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "ema/pool/guard.h"

#define DEFAULT_LIMIT_S 60
#define MAX_LIMIT_S (365u * 24 * 3600)

const char *ema_plugin_call_name;
gint ema_plugin_call_hook;
guint ema_plugin_call_seq;

static const char *const hook_names[] = {"init", "decide", "place"};

static const char *hook_name(gint hook) {
  return hook >= 0 && (guint) hook < G_N_ELEMENTS(hook_names) ? hook_names[hook] : "?";
}

gboolean ema_plugin_guard_limit(guint *seconds, GError **error) {
  const char *text = g_getenv("EMA_PLUGIN_CALL_LIMIT");
  guint64 value = 0;
  *seconds = DEFAULT_LIMIT_S;
  if (text == NULL)
    return TRUE;
  if (*text == '\0' || strspn(text, "0123456789") != strlen(text) ||
      !g_ascii_string_to_unsigned(text, 10, 0, MAX_LIMIT_S, &value, NULL)) {
    g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                "EMA_PLUGIN_CALL_LIMIT='%s': not a whole number of seconds from 0 (no limit) to "
                "%u",
                text, MAX_LIMIT_S);
    return FALSE;
  }
  *seconds = (guint) value;
  return TRUE;
}

/* TEXT's N bytes to stderr with write(2) alone (async-signal-safe: the crash handler's and the
 * watchdog's one line), as far as stderr takes them. */
static void write_all(const char *text, gsize n) {
  for (gsize done = 0; done < n;) {
    ssize_t w = write(STDERR_FILENO, text + done, n - done);
    if (w <= 0 && errno != EINTR)
      break;
    if (w > 0)
      done += (gsize) w;
  }
}

/* ---- crash handlers ----------------------------------------------------------------------- */

#if EMA_PLUGIN_GUARD_SIGNALS
static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
static const char *const fatal_names[] = {"SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT"};
static struct sigaction previous[G_N_ELEMENTS(fatal_signals)];
static char line[4096]; /* the handler's message (one write) */

static gsize append(gsize at, const char *text) {
  while (*text && at < sizeof line - 1)
    line[at++] = *text++;
  return at;
}

static void on_fatal(int sig, siginfo_t *info, void *context) {
  const char *name = g_atomic_pointer_get(&ema_plugin_call_name);
  guint i = 0;
  (void) context;
  while (i < G_N_ELEMENTS(fatal_signals) && fatal_signals[i] != sig)
    i++;
  if (i == G_N_ELEMENTS(fatal_signals))
    return;
  if (name != NULL) {
    gsize n = append(0, name);
    n = append(n, " crashed in its ");
    n = append(n, hook_name(g_atomic_int_get(&ema_plugin_call_hook)));
    n = append(n, " hook (signal ");
    n = append(n, fatal_names[i]);
    n = append(n, ")\n");
    write_all(line, n);
  }
  /* the signal goes on as it would have: a fault runs its instruction again under the earlier
   * disposition, a sent signal (abort, raise, kill) is sent again */
  sigaction(sig, &previous[i], NULL);
  if (info == NULL || info->si_code <= 0 || sig == SIGABRT)
    raise(sig);
}

static void install_handlers(void) {
  stack_t old;
  struct sigaction action;
  /* an alternate stack, so that a plugin's stack overflow reaches the handler (kept when one is
   * there already) */
  if (sigaltstack(NULL, &old) == 0 && (old.ss_flags & SS_DISABLE)) {
    stack_t stack = {.ss_size = MAX(SIGSTKSZ, 64 * 1024), .ss_flags = 0};
    stack.ss_sp = g_malloc(stack.ss_size);
    if (sigaltstack(&stack, NULL) != 0)
      g_free(stack.ss_sp);
  }
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_fatal;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (guint i = 0; i < G_N_ELEMENTS(fatal_signals); i++)
    sigaction(fatal_signals[i], &action, &previous[i]);
}
#endif

/* ---- watchdog ------------------------------------------------------------------------------ */

static gpointer watch(gpointer data) {
  guint limit = GPOINTER_TO_UINT(data);
  guint seen = 0;
  gint64 since = 0;
  gboolean watching = FALSE;
  for (;;) {
    g_usleep(G_USEC_PER_SEC);
    guint seq = (guint) g_atomic_int_get((gint *) &ema_plugin_call_seq);
    const char *name = g_atomic_pointer_get(&ema_plugin_call_name);
    gint64 now = g_get_monotonic_time();
    if (name == NULL || !watching || seq != seen) {
      watching = name != NULL;
      seen = seq;
      since = now;
      continue;
    }
    if (now - since >= (gint64) limit * G_USEC_PER_SEC) {
      g_autofree char *message =
          g_strdup_printf("%s: its %s hook ran past %u s (EMA_PLUGIN_CALL_LIMIT): stopped\n", name,
                          hook_name(g_atomic_int_get(&ema_plugin_call_hook)), limit);
      write_all(message, strlen(message));
      _exit(1);
    }
  }
  return NULL;
}

void ema_plugin_guard_start(guint limit) {
  static gsize started = 0;
  if (!g_once_init_enter(&started))
    return;
#if EMA_PLUGIN_GUARD_SIGNALS
  install_handlers();
#endif
  if (limit > 0)
    g_thread_unref(g_thread_new("ema-plugin-watchdog", watch, GUINT_TO_POINTER(limit)));
  g_once_init_leave(&started, 1);
}
