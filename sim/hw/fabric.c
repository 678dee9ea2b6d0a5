/* fabric.c: the data-movement model of one server (see fabric.h).
 *
 * Resources. Each resource r has a capacity C_r in B/s. With G GPUs:
 *   HBM(g)                      C = gpu.hbm_bandwidth                 (one per GPU)
 *   host link of GPU g:
 *     H2D(g)                    C = host.h2d_bandwidth   (host -> g)
 *     D2H(g)                    C = host.d2h_bandwidth   (g -> host)
 *     HDUP(g)                   C = host.duplex_bandwidth (both directions)
 *   peer fabric, by topology:
 *     DIRECT: DIR(i,j)          C = link.bandwidth        (every ordered pair i != j)
 *             PDUP({i,j})       C = link.duplex_bandwidth (every unordered pair)
 *             path(i->j) = { DIR(i,j), PDUP({i,j}) }
 *     SWITCH: EGR(g), ING(g)    C = link.bandwidth        (g's port, out and in)
 *             PDUP(g)           C = link.duplex_bandwidth (g's port, both ways)
 *             path(i->j) = { EGR(i), ING(j), PDUP(i), PDUP(j) }
 *     PCIE:   no peer resources;
 *             path(i->j) = { D2H(i), HDUP(i), H2D(j), HDUP(j) }
 *
 * Flows. A flow f uses resources with weights w_fr (bytes of resource use
 * per byte moved), has a per-flow cap c_f (B/s) and a setup time S_f (ns):
 *   COPY i->j (peer)   HBM(i) k_out, HBM(j) k_in, path(i->j) 1 each
 *                      c = link.bandwidth
 *                      S = link.copy_fixed_cost + ramp(n)
 *   COPY i->i (local)  HBM(i) 2 (read + write)
 *                      c = gpu.local_copy_bandwidth / 2 (that figure counts
 *                          bytes read + bytes written)
 *                      S = gpu.kernel_overhead
 *   COPY host->i       HBM(i) k_in, H2D(i) 1, HDUP(i) 1;  c = host.h2d_bandwidth
 *   COPY i->host       HBM(i) k_out, D2H(i) 1, HDUP(i) 1;  c = host.d2h_bandwidth
 *                      S = host.copy_fixed_cost (both directions)
 *   READ i->i (local)  HBM(i) 1;  c = infinity;  S = gpu.kernel_overhead
 *   READ s->d (peer)   HBM(s) k_out, path(s->d) 1 each;  c = link.direct_read_bandwidth
 *                      S = gpu.kernel_overhead + link.latency
 * Host endpoints are valid only for COPY, and not on both ends.
 *
 * Interference. k_out = gpu.interference_outgoing and k_in =
 * gpu.interference_incoming, the HBM bytes of a GPU's own work lost per
 * byte a transfer reads out of it or writes into it: the coefficients the
 * elastic pool's steps use (pool.h), so that ops and decode scenarios see
 * one model of the same effect. On H200 they were measured (0.956 and
 * 1.942: a streaming kernel 1.086x slower under a peer pull, 1.199x under
 * copies landing; hwmodels/gpus/h200-sxm.yaml); 1 (a byte moved costs a
 * byte of HBM time) where not calibrated. A weight of 0 leaves HBM out of
 * the flow's resources.
 *
 * Copy ramp. Measured peer copies of 4 KiB..16 MiB take longer than
 * fixed + n / bandwidth; the excess grows with n and levels off. We fit it
 * with
 *   ramp(n) = link.copy_ramp_time * (1 - exp(-n / link.copy_ramp_bytes))
 * and spend it in the setup phase, without using bandwidth. This is an
 * empirical fit to the per-copy times, not a physical model of the copy
 * engine (copy_ramp_time = 0 turns it off).
 *
 * Timing. A flow started at t0 spends S_f (ns, ramp rounded up to whole ns)
 * in setup, then moves its n bytes at the rate it is given. Alone:
 *   t = S_f + ceil(1e9 * n / rate_f)  ns,
 *   rate_f = min(c_f, min_r C_r / w_fr)
 * which is what ema_fabric_solo_time() returns.
 *
 * Sharing: weighted max-min fairness with per-flow caps, by progressive
 * filling. All transferring flows start at rate 0; repeatedly raise every
 * unfrozen flow's rate by the same increment d, the largest with
 *   sum_f w_fr * rate_f <= C_r  for every resource r, and
 *   rate_f <= c_f               for every flow f;
 * then freeze the flows at their cap and the flows that use a saturated
 * resource; until every flow is frozen. All transferring flows are re-rated
 * when a flow enters its transfer phase, finishes or is aborted. Before a
 * re-rate every transferring flow's remaining bytes drop by
 * rate * (now - rated_at); after it each transferring flow's completion is
 * (re)scheduled at now + ceil(1e9 * remaining / rate) ns. A flow of 0 bytes
 * completes at the end of its setup; a flow with remaining <= 1e-6 bytes is
 * complete. On completion the flow is marked finished and removed, the others
 * are re-rated, then its done function runs (it may start new flows).
 *
 * Cost: a re-rate is O(iterations x (flows + resources touched)), and every
 * iteration freezes at least one flow. The scratch arrays live in EmaFabric
 * and only grow, so a re-rate does not allocate. */
#include <math.h>

#include "ema/hw/fabric.h"

#define MAX_USES 6
#define DONE_BYTES 1e-6 /* remaining bytes at or below this count as moved */
#define SAT_TOL 1e-9    /* relative slack for a saturated resource or a reached cap */

GQuark ema_fabric_error_quark(void) {
  return g_quark_from_static_string("ema-fabric-error-quark");
}

struct _EmaFabric {
  EmaSim *sim;
  EmaServerSpec server; /* shallow copy; name and summary are not kept */
  guint gpus;
  guint n_resources;
  double *capacity;  /* per resource */
  GPtrArray *active; /* EmaFlow *: flows in setup or transfer */
  guint n_transferring;

  /* solver scratch */
  double *res_left;   /* capacity not yet handed out */
  double *res_weight; /* sum of weights of unfrozen flows */
  guint *res_stamp;   /* == stamp when touched in this re-rate */
  guint *touched;     /* resources touched in this re-rate */
  guint stamp;
  EmaFlow **unfrozen;
  guint unfrozen_alloc;
};

/* What a flow of one kind between two endpoints uses. */
typedef struct {
  guint n_uses;
  guint res[MAX_USES];
  double weight[MAX_USES];
  double cap;
  EmaTime fixed;
  gboolean ramp; /* a peer copy: add ramp(n) to the setup */
} FlowShape;

/* Resource indices. */
static guint r_hbm(const EmaFabric *f, guint g) {
  return g;
}

static guint r_h2d(const EmaFabric *f, guint g) {
  return f->gpus + g;
}

static guint r_d2h(const EmaFabric *f, guint g) {
  return 2 * f->gpus + g;
}

static guint r_hdup(const EmaFabric *f, guint g) {
  return 3 * f->gpus + g;
}

static guint r_peer_base(const EmaFabric *f) {
  return 4 * f->gpus;
}

/* DIRECT */
static guint r_dir(const EmaFabric *f, guint i, guint j) {
  return r_peer_base(f) + i * f->gpus + j;
}

static guint r_pair_dup(const EmaFabric *f, guint i, guint j) {
  guint a = MIN(i, j), b = MAX(i, j);
  return r_peer_base(f) + f->gpus * f->gpus + a * f->gpus + b;
}

/* SWITCH */
static guint r_egress(const EmaFabric *f, guint g) {
  return r_peer_base(f) + g;
}

static guint r_ingress(const EmaFabric *f, guint g) {
  return r_peer_base(f) + f->gpus + g;
}

static guint r_port_dup(const EmaFabric *f, guint g) {
  return r_peer_base(f) + 2 * f->gpus + g;
}

static char *resource_name(const EmaFabric *f, guint r) {
  guint G = f->gpus, base = r_peer_base(f);
  if (r < base) {
    static const char *const what[] = {"HBM", "host link (host -> GPU)", "host link (GPU -> host)",
                                       "host link (duplex)"};
    return g_strdup_printf("GPU %u %s", r % G, what[r / G]);
  }
  r -= base;
  switch (f->server.topology) {
  case EMA_TOPOLOGY_DIRECT:
    if (r < G * G)
      return g_strdup_printf("link GPU %u -> GPU %u", r / G, r % G);
    r -= G * G;
    return g_strdup_printf("link GPU %u <-> GPU %u (duplex)", r / G, r % G);
  case EMA_TOPOLOGY_SWITCH: {
    static const char *const what[] = {"egress", "ingress", "duplex"};
    return g_strdup_printf("switch port of GPU %u (%s)", r % G, what[r / G]);
  }
  case EMA_TOPOLOGY_PCIE:
  default:
    return g_strdup_printf("resource %u", r + base);
  }
}

static void shape_use(FlowShape *s, guint r, double weight) {
  g_assert(s->n_uses < MAX_USES);
  s->res[s->n_uses] = r;
  s->weight[s->n_uses] = weight;
  s->n_uses++;
}

/* The peer path SRC -> DST (SRC != DST). */
static void shape_peer_path(const EmaFabric *f, FlowShape *s, guint src, guint dst) {
  switch (f->server.topology) {
  case EMA_TOPOLOGY_DIRECT:
    shape_use(s, r_dir(f, src, dst), 1);
    shape_use(s, r_pair_dup(f, src, dst), 1);
    break;
  case EMA_TOPOLOGY_SWITCH:
    shape_use(s, r_egress(f, src), 1);
    shape_use(s, r_ingress(f, dst), 1);
    shape_use(s, r_port_dup(f, src), 1);
    shape_use(s, r_port_dup(f, dst), 1);
    break;
  case EMA_TOPOLOGY_PCIE:
  default:
    shape_use(s, r_d2h(f, src), 1);
    shape_use(s, r_hdup(f, src), 1);
    shape_use(s, r_h2d(f, dst), 1);
    shape_use(s, r_hdup(f, dst), 1);
    break;
  }
}

static gboolean endpoint_valid(const EmaFabric *f, gint e) {
  return e == EMA_ENDPOINT_HOST || (e >= 0 && (guint) e < f->gpus);
}

static char *endpoint_name(gint e) {
  return e == EMA_ENDPOINT_HOST ? g_strdup("host") : g_strdup_printf("GPU %d", e);
}

/* GPU G's HBM with WEIGHT, unless the weight is 0. */
static void shape_hbm(const EmaFabric *f, FlowShape *s, gint g, double weight) {
  if (weight > 0)
    shape_use(s, r_hbm(f, (guint) g), weight);
}

/* Fill S for a flow; endpoints must be valid (see check_shape). */
static void flow_shape(const EmaFabric *f, EmaFlowKind kind, gint src, gint dst, FlowShape *s) {
  const EmaServerSpec *sv = &f->server;
  double k_out = sv->gpu.interference_outgoing, k_in = sv->gpu.interference_incoming;
  memset(s, 0, sizeof *s);
  s->cap = INFINITY;
  if (kind == EMA_FLOW_COPY) {
    if (src == EMA_ENDPOINT_HOST) {
      shape_hbm(f, s, dst, k_in);
      shape_use(s, r_h2d(f, dst), 1);
      shape_use(s, r_hdup(f, dst), 1);
      s->cap = sv->host.h2d_bandwidth;
      s->fixed = sv->host.copy_fixed_cost;
    } else if (dst == EMA_ENDPOINT_HOST) {
      shape_hbm(f, s, src, k_out);
      shape_use(s, r_d2h(f, src), 1);
      shape_use(s, r_hdup(f, src), 1);
      s->cap = sv->host.d2h_bandwidth;
      s->fixed = sv->host.copy_fixed_cost;
    } else if (src == dst) {
      shape_use(s, r_hbm(f, src), 2);
      s->cap = sv->gpu.local_copy_bandwidth / 2;
      s->fixed = sv->gpu.kernel_overhead;
    } else {
      shape_hbm(f, s, src, k_out);
      shape_hbm(f, s, dst, k_in);
      shape_peer_path(f, s, src, dst);
      s->cap = sv->link.bandwidth;
      s->fixed = sv->link.copy_fixed_cost;
      s->ramp = TRUE;
    }
  } else {
    shape_hbm(f, s, src, src != dst ? k_out : 1);
    s->fixed = sv->gpu.kernel_overhead;
    if (src != dst) {
      shape_peer_path(f, s, src, dst);
      s->cap = sv->link.direct_read_bandwidth;
      s->fixed += sv->link.latency;
    }
  }
}

/* ramp(n) in whole ns, rounded up. */
static EmaTime ramp_ns(const EmaFabric *f, guint64 bytes) {
  const EmaLinkSpec *l = &f->server.link;
  double frac;
  if (l->copy_ramp_time <= 0 || bytes == 0)
    return 0;
  if (l->copy_ramp_bytes == 0)
    frac = 1;
  else
    frac = -expm1(-(double) bytes / (double) l->copy_ramp_bytes);
  return (EmaTime) ceil((double) l->copy_ramp_time * frac);
}

static EmaTime setup_ns(const EmaFabric *f, const FlowShape *s, guint64 bytes) {
  EmaTime t = MAX(s->fixed, 0);
  if (s->ramp)
    t += ramp_ns(f, bytes);
  return t;
}

/* The uncontended rate: the first (and only) step of progressive filling for
 * one flow. */
static double solo_rate(const EmaFabric *f, const FlowShape *s) {
  double rate = s->cap;
  for (guint u = 0; u < s->n_uses; u++)
    rate = MIN(rate, f->capacity[s->res[u]] / s->weight[u]);
  return rate;
}

/* ns to move REMAINING bytes at RATE, rounded up; -1 if never. */
static EmaTime transfer_ns(double remaining, double rate) {
  double ns;
  if (remaining <= DONE_BYTES)
    return 0;
  if (!(rate > 0))
    return -1;
  ns = ceil(remaining * 1e9 / rate);
  if (!(ns < (double) (G_MAXINT64 / 2)))
    return -1;
  return (EmaTime) ns;
}

EmaFabric *ema_fabric_new(EmaSim *sim, const EmaServerSpec *server) {
  EmaFabric *f;
  guint G, n;

  g_return_val_if_fail(sim != NULL, NULL);
  g_return_val_if_fail(server != NULL, NULL);
  g_return_val_if_fail(server->gpus >= 1 && server->gpus <= 4096, NULL);

  f = g_new0(EmaFabric, 1);
  f->sim = sim;
  f->server = *server;
  f->server.name = NULL;
  f->server.summary = NULL;
  f->server.gpu.name = NULL;
  f->server.gpu.profile = NULL;
  G = f->gpus = (guint) server->gpus;

  n = 4 * G;
  switch (server->topology) {
  case EMA_TOPOLOGY_DIRECT:
    n += 2 * G * G;
    break;
  case EMA_TOPOLOGY_SWITCH:
    n += 3 * G;
    break;
  case EMA_TOPOLOGY_PCIE:
  default:
    break;
  }
  f->n_resources = n;
  f->capacity = g_new(double, n);
  for (guint r = 0; r < n; r++)
    f->capacity[r] = INFINITY; /* unused slots (DIRECT's i == i) */
  for (guint g = 0; g < G; g++) {
    f->capacity[r_hbm(f, g)] = server->gpu.hbm_bandwidth;
    f->capacity[r_h2d(f, g)] = server->host.h2d_bandwidth;
    f->capacity[r_d2h(f, g)] = server->host.d2h_bandwidth;
    f->capacity[r_hdup(f, g)] = server->host.duplex_bandwidth;
  }
  switch (server->topology) {
  case EMA_TOPOLOGY_DIRECT:
    for (guint i = 0; i < G; i++)
      for (guint j = 0; j < G; j++)
        if (i != j) {
          f->capacity[r_dir(f, i, j)] = server->link.bandwidth;
          f->capacity[r_pair_dup(f, i, j)] = server->link.duplex_bandwidth;
        }
    break;
  case EMA_TOPOLOGY_SWITCH:
    for (guint g = 0; g < G; g++) {
      f->capacity[r_egress(f, g)] = server->link.bandwidth;
      f->capacity[r_ingress(f, g)] = server->link.bandwidth;
      f->capacity[r_port_dup(f, g)] = server->link.duplex_bandwidth;
    }
    break;
  case EMA_TOPOLOGY_PCIE:
  default:
    break;
  }

  f->active = g_ptr_array_new();
  f->res_left = g_new0(double, n);
  f->res_weight = g_new0(double, n);
  f->res_stamp = g_new0(guint, n);
  f->touched = g_new0(guint, n);
  return f;
}

void ema_fabric_free(EmaFabric *fabric) {
  if (fabric == NULL)
    return;
  /* Flows still active belong to the caller; make sure none fires into a
   * freed fabric. */
  for (guint k = 0; k < fabric->active->len; k++) {
    EmaFlow *flow = g_ptr_array_index(fabric->active, k);
    ema_sim_cancel(fabric->sim, &flow->event);
    flow->active_index = -1;
    flow->transferring = FALSE;
    flow->rate = 0;
  }
  g_ptr_array_unref(fabric->active);
  g_free(fabric->capacity);
  g_free(fabric->res_left);
  g_free(fabric->res_weight);
  g_free(fabric->res_stamp);
  g_free(fabric->touched);
  g_free(fabric->unfrozen);
  g_free(fabric);
}

gboolean ema_fabric_check_flow(const EmaFabric *fabric, EmaFlowKind kind, gint src, gint dst,
                               GError **error) {
  FlowShape s;
  g_return_val_if_fail(fabric != NULL, FALSE);

  if (kind != EMA_FLOW_COPY && kind != EMA_FLOW_READ) {
    g_set_error(error, EMA_FABRIC_ERROR, EMA_FABRIC_ERROR_INVALID_FLOW, "unknown flow kind %d",
                (int) kind);
    return FALSE;
  }
  for (int k = 0; k < 2; k++) {
    gint e = k == 0 ? src : dst;
    if (!endpoint_valid(fabric, e)) {
      g_set_error(error, EMA_FABRIC_ERROR, EMA_FABRIC_ERROR_INVALID_FLOW,
                  "flow %s GPU %d does not exist: the server has %u GPU%s (0..%u)",
                  k == 0 ? "source" : "destination", e, fabric->gpus, fabric->gpus == 1 ? "" : "s",
                  fabric->gpus - 1);
      return FALSE;
    }
  }
  if (kind == EMA_FLOW_READ && (src == EMA_ENDPOINT_HOST || dst == EMA_ENDPOINT_HOST)) {
    g_set_error(error, EMA_FABRIC_ERROR, EMA_FABRIC_ERROR_INVALID_FLOW,
                "a read flow needs a GPU on both ends (got %s reading %s); host memory moves "
                "only by copy",
                dst == EMA_ENDPOINT_HOST ? "host" : "a GPU",
                src == EMA_ENDPOINT_HOST ? "host memory" : "GPU memory");
    return FALSE;
  }
  if (src == EMA_ENDPOINT_HOST && dst == EMA_ENDPOINT_HOST) {
    g_set_error_literal(error, EMA_FABRIC_ERROR, EMA_FABRIC_ERROR_INVALID_FLOW,
                        "a host -> host copy does not touch the server's GPUs; it is not a "
                        "fabric flow");
    return FALSE;
  }

  flow_shape(fabric, kind, src, dst, &s);
  if (!(s.cap > 0)) {
    g_autofree char *a = endpoint_name(src);
    g_autofree char *b = endpoint_name(dst);
    g_set_error(error, EMA_FABRIC_ERROR, EMA_FABRIC_ERROR_INVALID_FLOW,
                "a %s %s -> %s has a rate limit of %g B/s in the server model",
                kind == EMA_FLOW_COPY ? "copy" : "read", a, b, s.cap);
    return FALSE;
  }
  for (guint u = 0; u < s.n_uses; u++) {
    double c = fabric->capacity[s.res[u]];
    if (!(c > 0) || !isfinite(c)) {
      g_autofree char *a = endpoint_name(src);
      g_autofree char *b = endpoint_name(dst);
      g_autofree char *r = resource_name(fabric, s.res[u]);
      g_set_error(error, EMA_FABRIC_ERROR, EMA_FABRIC_ERROR_INVALID_FLOW,
                  "a %s %s -> %s needs the %s, whose bandwidth in the server model is %g B/s "
                  "(must be positive and finite)",
                  kind == EMA_FLOW_COPY ? "copy" : "read", a, b, r, c);
      return FALSE;
    }
  }
  return TRUE;
}

/* Move every transferring flow's remaining bytes forward to NOW. */
static void advance(EmaFabric *f, EmaTime now) {
  for (guint k = 0; k < f->active->len; k++) {
    EmaFlow *flow = g_ptr_array_index(f->active, k);
    if (!flow->transferring)
      continue;
    if (now > flow->rated_at && flow->rate > 0) {
      flow->remaining -= flow->rate * (double) (now - flow->rated_at) / 1e9;
      if (flow->remaining < 0)
        flow->remaining = 0;
    }
    flow->rated_at = now;
  }
}

/* Weighted max-min fair rates with per-flow caps, by progressive filling. */
static void solve(EmaFabric *f) {
  guint n = 0, n_touched = 0;
  double level = 0;

  if (f->unfrozen_alloc < f->active->len) {
    f->unfrozen_alloc = MAX(f->active->len, 2 * f->unfrozen_alloc);
    f->unfrozen = g_renew(EmaFlow *, f->unfrozen, f->unfrozen_alloc);
  }
  if (++f->stamp == 0) {
    memset(f->res_stamp, 0, f->n_resources * sizeof *f->res_stamp);
    f->stamp = 1;
  }

  for (guint k = 0; k < f->active->len; k++) {
    EmaFlow *flow = g_ptr_array_index(f->active, k);
    if (!flow->transferring)
      continue;
    flow->rate = 0;
    f->unfrozen[n++] = flow;
    for (guint u = 0; u < flow->n_uses; u++) {
      guint r = flow->use_resource[u];
      if (f->res_stamp[r] != f->stamp) {
        f->res_stamp[r] = f->stamp;
        f->res_left[r] = f->capacity[r];
        f->res_weight[r] = 0;
        f->touched[n_touched++] = r;
      }
      f->res_weight[r] += flow->use_weight[u];
    }
  }

  while (n > 0) {
    double delta = INFINITY;
    guint kept = 0;

    for (guint k = 0; k < n; k++)
      delta = MIN(delta, f->unfrozen[k]->cap - level);
    for (guint t = 0; t < n_touched; t++) {
      guint r = f->touched[t];
      if (f->res_weight[r] > 0)
        delta = MIN(delta, f->res_left[r] / f->res_weight[r]);
    }
    if (!isfinite(delta)) {
      /* Nothing limits these flows: they move their bytes at once. */
      for (guint k = 0; k < n; k++)
        f->unfrozen[k]->rate = INFINITY;
      break;
    }
    if (delta < 0)
      delta = 0;
    level += delta;
    for (guint t = 0; t < n_touched; t++) {
      guint r = f->touched[t];
      if (f->res_weight[r] > 0)
        f->res_left[r] -= f->res_weight[r] * delta;
    }

    /* Freeze flows at their cap and flows on a saturated resource. Weights
     * are taken off only after the scan, so that every flow sees the same
     * saturation state. */
    for (guint k = 0; k < n; k++) {
      EmaFlow *flow = f->unfrozen[k];
      gboolean freeze = isfinite(flow->cap) && flow->cap - level <= SAT_TOL * flow->cap;
      for (guint u = 0; u < flow->n_uses && !freeze; u++) {
        guint r = flow->use_resource[u];
        freeze = isfinite(f->capacity[r]) && f->res_left[r] <= SAT_TOL * f->capacity[r];
      }
      flow->order = freeze ? -1 : 0;
    }
    for (guint k = 0; k < n; k++) {
      EmaFlow *flow = f->unfrozen[k];
      if (flow->order == 0) {
        f->unfrozen[kept++] = flow;
        continue;
      }
      flow->order = 0;
      flow->rate = MIN(level, flow->cap);
      for (guint u = 0; u < flow->n_uses; u++)
        f->res_weight[flow->use_resource[u]] -= flow->use_weight[u];
    }
    if (kept == n) {
      /* Rounding kept every flow unfrozen; cannot happen with exact
       * arithmetic. Stop here rather than loop. */
      for (guint k = 0; k < n; k++)
        f->unfrozen[k]->rate = level;
      break;
    }
    n = kept;
  }
}

/* Re-rate all transferring flows at NOW and reschedule their completions. */
static void rerate(EmaFabric *f, EmaTime now) {
  solve(f);
  for (guint k = 0; k < f->active->len; k++) {
    EmaFlow *flow = g_ptr_array_index(f->active, k);
    EmaTime dt;
    if (!flow->transferring)
      continue;
    flow->rated_at = now;
    dt = transfer_ns(flow->remaining, flow->rate);
    if (dt < 0)
      ema_sim_cancel(f->sim, &flow->event);
    else
      ema_sim_schedule(f->sim, &flow->event, now + dt, 0);
  }
}

static void active_add(EmaFabric *f, EmaFlow *flow) {
  flow->active_index = (gint) f->active->len;
  g_ptr_array_add(f->active, flow);
}

static void active_remove(EmaFabric *f, EmaFlow *flow) {
  guint i = (guint) flow->active_index;
  guint last = f->active->len - 1;
  g_assert(i < f->active->len && g_ptr_array_index(f->active, i) == flow);
  if (i != last) {
    EmaFlow *moved = g_ptr_array_index(f->active, last);
    f->active->pdata[i] = moved;
    moved->active_index = (gint) i;
  }
  g_ptr_array_set_size(f->active, last);
  flow->active_index = -1;
}

static void flow_complete(EmaFabric *f, EmaFlow *flow, EmaTime now) {
  gboolean was_transferring = flow->transferring;
  if (was_transferring)
    advance(f, now);
  flow->remaining = 0;
  flow->rate = 0;
  flow->transferring = FALSE;
  flow->finished = now;
  active_remove(f, flow);
  if (was_transferring) {
    f->n_transferring--;
    rerate(f, now);
  }
  if (flow->done)
    flow->done(f, flow, flow->user_data);
}

static void flow_event(EmaSim *sim, EmaEvent *event, gpointer user_data) {
  EmaFlow *flow = user_data;
  EmaFabric *f = flow->fabric;
  EmaTime now = ema_sim_now(sim);

  if (flow->transferring || flow->remaining <= DONE_BYTES) {
    /* A completion event is rescheduled at every re-rate, so firing means
     * the last byte has arrived. */
    flow_complete(f, flow, now);
    return;
  }
  /* End of setup: join the transferring flows. */
  advance(f, now);
  flow->transferring = TRUE;
  flow->rated_at = now;
  f->n_transferring++;
  rerate(f, now);
}

void ema_fabric_start(EmaFabric *fabric, EmaFlow *flow, EmaFlowKind kind, gint src, gint dst,
                      guint64 bytes, EmaFlowDoneFunc done, gpointer user_data) {
  FlowShape s;
  EmaTime now;

  g_return_if_fail(fabric != NULL);
  g_return_if_fail(flow != NULL);
  g_return_if_fail(ema_fabric_check_flow(fabric, kind, src, dst, NULL));

  now = ema_sim_now(fabric->sim);
  flow_shape(fabric, kind, src, dst, &s);

  flow->kind = kind;
  flow->src = src;
  flow->dst = dst;
  flow->bytes = bytes;
  flow->started = now;
  flow->finished = -1;
  flow->rate = 0;
  flow->fabric = fabric;
  ema_event_init(&flow->event, flow_event, flow);
  flow->done = done;
  flow->user_data = user_data;
  flow->remaining = (double) bytes;
  flow->rated_at = now;
  flow->cap = s.cap;
  flow->n_uses = s.n_uses;
  for (guint u = 0; u < s.n_uses; u++) {
    flow->use_resource[u] = s.res[u];
    flow->use_weight[u] = s.weight[u];
  }
  flow->transferring = FALSE;
  flow->order = 0;
  active_add(fabric, flow);
  ema_sim_schedule(fabric->sim, &flow->event, now + setup_ns(fabric, &s, bytes), 0);
}

void ema_fabric_abort(EmaFabric *fabric, EmaFlow *flow) {
  EmaTime now;
  gboolean was_transferring;

  g_return_if_fail(fabric != NULL);
  g_return_if_fail(flow != NULL);
  if (flow->active_index < 0 || flow->fabric != fabric)
    return;

  now = ema_sim_now(fabric->sim);
  was_transferring = flow->transferring;
  if (was_transferring)
    advance(fabric, now);
  ema_sim_cancel(fabric->sim, &flow->event);
  active_remove(fabric, flow);
  flow->transferring = FALSE;
  flow->rate = 0;
  if (was_transferring) {
    fabric->n_transferring--;
    rerate(fabric, now);
  }
}

EmaTime ema_fabric_solo_time(const EmaFabric *fabric, EmaFlowKind kind, gint src, gint dst,
                             guint64 bytes) {
  FlowShape s;
  EmaTime dt;

  g_return_val_if_fail(fabric != NULL, 0);
  g_return_val_if_fail(ema_fabric_check_flow(fabric, kind, src, dst, NULL), 0);

  flow_shape(fabric, kind, src, dst, &s);
  dt = transfer_ns((double) bytes, solo_rate(fabric, &s));
  if (dt < 0)
    return EMA_TIME_NEVER;
  return setup_ns(fabric, &s, bytes) + dt;
}

guint ema_fabric_active_flows(const EmaFabric *fabric) {
  g_return_val_if_fail(fabric != NULL, 0);
  return fabric->active->len;
}
