/* errors.c: the EMA_VALIDATE_ERROR quark, the mapping of the CSV reader's
 * errors into it and the cut of long values quoted in messages (errors.h). */
#include "errors.h"

#include <string.h>

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

char *ema_validate_quote_cut(const char *value) {
  gsize length = strlen(value);
  const char *end = value + EMA_VALIDATE_QUOTE_MAX;
  if (length <= EMA_VALIDATE_QUOTE_MAX)
    return g_strdup(value);
  /* back to the first byte of the character the cut falls in */
  while (end > value && ((guchar) *end & 0xC0) == 0x80)
    end--;
  return g_strdup_printf("%.*s...", (int) (end - value), value);
}
