/* module-abi.c: a module built for another ABI version (99). */
#include "broken.h"

BROKEN_OK_BORROW(ok, "module-abi-ok");

static const EmaBorrowPolicyOps *const borrow[] = {&ok, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {99, borrow, NULL, NULL};
