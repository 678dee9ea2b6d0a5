/* layer-ahead.h: the `layer-ahead` prefetch policy's parameters and plan
 * (prefetch-layer-ahead.c), for the policies that start from it (`offload`
 * reads its remote KV the same way where it does not offload). A policy
 * whose parameters begin with an EmaLayerAheadParams puts
 * EMA_LAYER_AHEAD_PARAMS(offset of that member) in its table. */
#pragma once

#include "ema/policy.h"

typedef struct {
  double direct_margin;
  gint64 depth;
  double hide_margin;
  double fixed_share;
  double max_borrower_slowdown;
  double max_lender_slowdown;
} EmaLayerAheadParams;

/* The parameter rows of an EmaLayerAheadParams at BASE bytes into the
 * policy's parameters. */
#define EMA_LAYER_AHEAD_PARAMS(BASE)                                                               \
  {"direct_margin",                                                                                \
   EMA_PARAM_FRACTION,                                                                             \
   (BASE) + G_STRUCT_OFFSET(EmaLayerAheadParams, direct_margin),                                   \
   .default_value = "70%",                                                                         \
   .min = 0,                                                                                       \
   .max = 10,                                                                                      \
   .help = "share of the attention kernel's all-local KV time that direct loads may fill "         \
           "(the modelled switch-over is sharp, the measured one starts at ~75% of it)"},          \
      {"depth",                                                                                    \
       EMA_PARAM_INT,                                                                              \
       (BASE) + G_STRUCT_OFFSET(EmaLayerAheadParams, depth),                                       \
       .default_value = "2",                                                                       \
       .min = 1,                                                                                   \
       .max = 1024,                                                                                \
       .help = "layer groups fetched ahead (sizes the staging buffer)"},                           \
      {"hide_margin",                                                                              \
       EMA_PARAM_FRACTION,                                                                         \
       (BASE) + G_STRUCT_OFFSET(EmaLayerAheadParams, hide_margin),                                 \
       .default_value = "90%",                                                                     \
       .min = 0,                                                                                   \
       .max = 10,                                                                                  \
       .help = "share of a layer's memory time prefetch copies may fill (above 100%: remote KV "   \
               "may be exposed, trading step time for capacity)"},                                 \
      {"fixed_share",                                                                              \
       EMA_PARAM_FRACTION,                                                                         \
       (BASE) + G_STRUCT_OFFSET(EmaLayerAheadParams, fixed_share),                                 \
       .default_value = "10%",                                                                     \
       .min = 1e-6,                                                                                \
       .max = 1,                                                                                   \
       .help = "largest share of a copy's time its fixed cost may take (sets the group size)"},    \
      {"max_borrower_slowdown",                                                                    \
       EMA_PARAM_FRACTION,                                                                         \
       (BASE) + G_STRUCT_OFFSET(EmaLayerAheadParams, max_borrower_slowdown),                       \
       .default_value = "5%",                                                                      \
       .min = 0,                                                                                   \
       .max = 10,                                                                                  \
       .help = "largest slowdown of this GPU's layers by the copies landing in its HBM"},          \
      {"max_lender_slowdown",                                                                      \
       EMA_PARAM_FRACTION,                                                                         \
       (BASE) + G_STRUCT_OFFSET(EmaLayerAheadParams, max_lender_slowdown),                         \
       .default_value = "2%",                                                                      \
       .min = 0,                                                                                   \
       .max = 10,                                                                                  \
       .help = "largest loss of a lender's HBM bandwidth to this GPU's pulls (a GPU without a "    \
               "tenant: none)"}, /* (the list ends with                                            \
     a comma) */

/* layer-ahead's plan for a step of GPU's tenant whose cost is STEP, with
 * parameters P, into PLAN (prefetch-layer-ahead.c says how). */
void ema_layer_ahead_plan(const EmaLayerAheadParams *p, const EmaPoolView *view, guint gpu,
                          const EmaStepCostView *step, EmaPrefetchPlan *plan);
