/* bad-default.c: a parameter whose default does not parse ("abc" for an
 * integer). */
#include "broken.h"

BROKEN_OK_BORROW(ok, "bad-default-ok");

typedef struct {
  gint64 count;
} Params;

static const EmaParam param_list[] = {
    {.key = "count",
     .type = EMA_PARAM_INT,
     .offset = G_STRUCT_OFFSET(Params, count),
     .default_value = "abc",
     .help = "a count with a bad default"},
};

static const EmaParamTable params = {"bad-default", sizeof(Params), param_list,
                                     EMA_PARAMS_N(param_list), NULL};

static const EmaBorrowPolicyOps bad = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "bad-default",
    .summary = "a parameter default that does not parse",
    .params = &params,
    .decide = borrow_decide,
};

static const EmaBorrowPolicyOps *const borrow[] = {&ok, &bad, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           NULL};
