/* faultalloc.c: an LD_PRELOAD shim for the fault-injection tests: with
 * EMA_FAULT_ALLOC_AFTER=N in the environment, the N+1th allocation
 * (malloc, calloc or realloc) of the process fails (returns NULL, errno
 * ENOMEM), once;
 * every other allocation is glibc's own. With EMA_FAULT_ALLOC_COMMAND=CMD
 * too, only a process whose first argument is CMD (e.g. the `run` point
 * processes of a sweep, not the sweep) is affected. GLib aborts on a
 * failed allocation, so the process dies there: the tests check what it
 * leaves behind. With EMA_FAULT_ALLOC_COUNT=FILE, the number of
 * allocations the process made is written to FILE when it exits (so that a
 * test can aim at the last ones). With EMA_FAULT_KILL_AT_EXIT=CMD, a
 * process whose first argument is CMD kills itself (SIGKILL) as it exits,
 * after main returned: everything it wrote is there, yet it died of a
 * signal. Nothing here allocates (getenv, open, read, write). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *ptr, size_t size);

static long countdown = -2; /* -2: not read yet; -1: no failure (left) */
static unsigned long made;  /* allocations so far */

/* The process's first argument (after the program) is COMMAND. */
static int first_argument_is(const char *command) {
  static char cmdline[4096];
  int fd = open("/proc/self/cmdline", O_RDONLY);
  ssize_t got = fd >= 0 ? read(fd, cmdline, sizeof cmdline - 1) : -1;
  const char *first = cmdline + strlen(cmdline) + 1; /* after the program */
  if (fd >= 0)
    close(fd);
  return got > 0 && first < cmdline + got && strcmp(first, command) == 0;
}

__attribute__((destructor)) static void at_exit(void) {
  const char *path = getenv("EMA_FAULT_ALLOC_COUNT");
  const char *kill_command = getenv("EMA_FAULT_KILL_AT_EXIT");
  char digits[32];
  int n = 0, fd;
  unsigned long v = made;
  if (kill_command && first_argument_is(kill_command))
    raise(SIGKILL);
  if (path == NULL)
    return;
  do
    digits[sizeof digits - 1 - n++] = (char) ('0' + v % 10);
  while ((v /= 10) > 0);
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd >= 0) {
    if (write(fd, digits + sizeof digits - n, (size_t) n) < 0)
      n = 0;
    close(fd);
  }
}

static int fail_now(void) {
  made++;
  if (countdown == -2) {
    const char *after = getenv("EMA_FAULT_ALLOC_AFTER");
    const char *command = getenv("EMA_FAULT_ALLOC_COMMAND");
    countdown = after ? atol(after) : -1;
    if (command && countdown >= 0 && !first_argument_is(command))
      countdown = -1;
  }
  if (countdown < 0)
    return 0;
  return countdown-- == 0;
}

/* A failed allocation, as glibc's: NULL with errno ENOMEM (GLib's g_vasprintf, under
 * g_strdup_printf, aborts only on that errno; any other leaves its string NULL). */
static void *failed(void) {
  errno = ENOMEM;
  return NULL;
}

void *malloc(size_t size) {
  return fail_now() ? failed() : __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
  return fail_now() ? failed() : __libc_calloc(n, size);
}

void *realloc(void *ptr, size_t size) {
  return fail_now() ? failed() : __libc_realloc(ptr, size);
}
