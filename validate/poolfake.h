/* poolfake.h: a backend for the pool ledger (poolmem.h) that emulates
 * CUDA virtual memory on the CPU and records every call: for the CPU tests
 * and `ema-validate pool --dry-run`.
 *
 * It keeps what the driver would: physical handles per device (with a
 * capacity per device, so a create beyond it fails as out of memory),
 * address reservations, mappings of whole slices inside them, access
 * rights, and the data each mapped byte range holds (as runs of the fill.h
 * stream: seed and index), so copies move data and checks read it back.
 * It refuses what the driver would refuse (mapping outside a reservation or
 * twice, releasing a mapped handle, freeing a range with mappings, a copy
 * or fill through an address without access), and a call can be made to
 * fail on purpose (the N-th call of an operation from now). */
#pragma once

#include <glib.h>

#include "poolmem.h"

G_BEGIN_DECLS

typedef enum {
  EMA_FAKE_CREATE,
  EMA_FAKE_RELEASE,
  EMA_FAKE_RESERVE,
  EMA_FAKE_UNRESERVE,
  EMA_FAKE_MAP,
  EMA_FAKE_UNMAP,
  EMA_FAKE_SET_ACCESS,
  EMA_FAKE_FILL,
  EMA_FAKE_COPY,
  EMA_FAKE_TO_HOST,
  EMA_FAKE_SYNC,
  EMA_FAKE_CHECK,
  EMA_FAKE_N_OPS,
} EmaFakeOp;

typedef struct _EmaFakeBackend EmaFakeBackend;

/* N_DEVICES devices of CAPACITY bytes each for handles (0: unlimited). */
EmaFakeBackend *ema_fake_backend_new(guint n_devices, guint64 capacity);
void ema_fake_backend_free(EmaFakeBackend *fake);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaFakeBackend, ema_fake_backend_free)

/* The table to put in EmaPoolMemConfig (backend_data: the fake). */
const EmaPoolDevice *ema_fake_backend_ops(void);

/* The NTH call (1: the next) of OP from now fails (0: none). */
void ema_fake_backend_fail(EmaFakeBackend *fake, EmaFakeOp op, guint64 nth);
/* Reservations ignore their hint (a borrower's range then grows in pieces
 * that are not adjacent). */
void ema_fake_backend_ignore_hints(EmaFakeBackend *fake, gboolean ignore);
/* Record every call in the log ("create gpu1 -> h3", ...). */
void ema_fake_backend_record(EmaFakeBackend *fake, gboolean record);
const char *ema_fake_backend_log(const EmaFakeBackend *fake);
void ema_fake_backend_clear_log(EmaFakeBackend *fake);

/* Calls of OP so far (failed ones included). */
guint64 ema_fake_backend_calls(const EmaFakeBackend *fake, EmaFakeOp op);
/* Handles, mappings and reservations alive, over all devices. */
EmaPoolMemLive ema_fake_backend_live(const EmaFakeBackend *fake);
/* What cudaMemGetInfo would say: capacity minus live handles (unlimited:
 * G_MAXUINT64 minus them). */
guint64 ema_fake_backend_free_bytes(const EmaFakeBackend *fake, guint device);
/* Bytes copied to host so far. */
guint64 ema_fake_backend_host_bytes(const EmaFakeBackend *fake);

G_END_DECLS
