/* no-symbol.c: a shared object without `ema_policy_module` (it exports
 * the module under a misspelt name). */
#include "broken.h"

BROKEN_OK_BORROW(ok, "no-symbol-ok");

static const EmaBorrowPolicyOps *const borrow[] = {&ok, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_modules = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                            NULL};
