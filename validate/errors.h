/* errors.h: the error domain of ema-validate (validate/). Every failure that
 * comes from outside the program (a CUDA call, a file, a command-line value,
 * a result that does not match its CPU reference) is a GError in this domain
 * or in libema's EMA_CONFIG_ERROR (model files). Messages are one line. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define EMA_VALIDATE_ERROR (ema_validate_error_quark())
GQuark ema_validate_error_quark(void);

typedef enum {
  EMA_VALIDATE_ERROR_CUDA,        /* a CUDA runtime or driver call failed */
  EMA_VALIDATE_ERROR_NO_DEVICE,   /* no usable CUDA device, or fewer GPUs than needed */
  EMA_VALIDATE_ERROR_UNSUPPORTED, /* the hardware or the model lacks what a measurement needs */
  EMA_VALIDATE_ERROR_ARGUMENT,    /* a command-line value is out of range or inconsistent */
  EMA_VALIDATE_ERROR_FIT,         /* too few or unusable points for a fit */
  EMA_VALIDATE_ERROR_VERIFY,      /* a GPU result differs from its CPU reference */
  EMA_VALIDATE_ERROR_IO,          /* a results file could not be read or written */
  EMA_VALIDATE_ERROR_DATA, /* a results file lacks a measurement or a value, or is malformed */
} EmaValidateError;

/* LOCAL, an error of the CSV reader (ema/core/csv.h, EMA_CONFIG_ERROR), set
 * into ERROR as ema-validate's: EMA_VALIDATE_ERROR_IO ("cannot read ...") for
 * a file that cannot be read, EMA_VALIDATE_ERROR_DATA (its "file:line:col:
 * ..." message) otherwise. Frees LOCAL; returns FALSE. */
gboolean ema_validate_error_from_csv(GError *local, GError **error);

G_END_DECLS
