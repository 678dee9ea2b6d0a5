/* fuzzutil.h: what the libFuzzer harnesses of tests/fuzz share: a private
 * scratch directory per process (on /dev/shm when it exists), writing an
 * input there as a file (the readers under test take paths), splitting an
 * input into parts at "\n%%\n" lines, and making GLib criticals and
 * warnings fatal, so that a reader that trips one is a finding, not
 * noise. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

G_BEGIN_DECLS

/* Once per process: fatal criticals, no log output, the scratch dir. */
void ema_fuzz_init(void);

/* The scratch directory (absolute). */
const char *ema_fuzz_dir(void);

/* Write DATA to NAME in the scratch dir; returns its path (free it). */
char *ema_fuzz_write(const char *name, const uint8_t *data, size_t size);

/* Split DATA at each "\n%%\n" into at most MAX parts (the last takes the
 * rest); returns the number of parts, each in STARTS/SIZES. */
guint ema_fuzz_split(const uint8_t *data, size_t size, const uint8_t **starts, size_t *sizes,
                     guint max);

G_END_DECLS
