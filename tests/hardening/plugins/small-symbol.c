/* small-symbol.c: `ema_policy_module` exported as a 4-byte int, not an
 * EmaPolicyModule: reading it as one would read past its end. */
#include <gmodule.h>

G_MODULE_EXPORT const int ema_policy_module = 1;
