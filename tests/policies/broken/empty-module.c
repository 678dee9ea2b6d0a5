/* empty-module.c: a module whose lists hold no policy. */
#include "broken.h"

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, NULL, NULL,
                                                           NULL};
