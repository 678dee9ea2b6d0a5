/* errors.c: the EMA_VALIDATE_ERROR quark (errors.h). */
#include "errors.h"

G_DEFINE_QUARK(ema - validate - error - quark, ema_validate_error)
