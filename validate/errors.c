/* errors.c: the EMA_VALIDATE_ERROR quark, the mapping of the CSV reader's
 * errors into it (errors.h). Values its messages quote are cut by ema_file_quote_cut
 * (ema/core/file.h), the cut of every reader's messages. */
#include "errors.h"

#include "ema/core/node.h"

G_DEFINE_QUARK(ema - validate - error - quark, ema_validate_error)

gboolean ema_validate_error_from_csv(GError *local, GError **error) {
  if (g_error_matches(local, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_IO))
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, "cannot read %s", local->message);
  else
    g_set_error_literal(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA, local->message);
  g_error_free(local);
  return FALSE;
}
