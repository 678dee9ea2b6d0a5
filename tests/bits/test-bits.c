/* test-bits.c: sets of indices as bits (sim/include/ema/core/bits.h): a
 * walk by EMA_BITS_FOR_EACH gives the indices ema_bits_next() gives, in
 * the same order, over one and several words, an empty set, a size that is
 * not a multiple of 64, a break in the body and no set (every index); and a
 * randomized comparison of the two. */
#include <ema/core/bits.h>

/* The indices ema_bits_next() walks in SET of N, into OUT; returns how many. */
static guint walk_next(const guint64 *set, guint n, guint *out) {
  guint k = 0;
  for (guint j = ema_bits_next(set, 0, n); j < n; j = ema_bits_next(set, j + 1, n))
    out[k++] = j;
  return k;
}

/* The same by EMA_BITS_FOR_EACH. */
static guint walk_each(const guint64 *set, guint n, guint *out) {
  guint k = 0;
  EMA_BITS_FOR_EACH (set, n, j)
    out[k++] = j;
  return k;
}

/* SET of N walked by EMA_BITS_FOR_EACH gives the K indices EXPECTED. */
static void expect_walk(const guint64 *set, guint n, const guint *expected, guint k) {
  guint out[128];
  g_assert_cmpuint(walk_each(set, n, out), ==, k);
  for (guint i = 0; i < k; i++)
    g_assert_cmpuint(out[i], ==, expected[i]);
}

static void test_by_hand(void) {
  static const guint both[] = {0, 5, 63, 64, 71}, second[] = {64, 71}, every[] = {0, 1, 2};
  guint64 set[2] = {0, 0};
  guint first = 72;
  /* empty, and a size of 0 */
  expect_walk(set, 72, NULL, 0);
  expect_walk(set, 0, NULL, 0);
  /* 0, 5, 63 (the first word's last), 64 and 71 (the second's) of 72 */
  for (guint i = 0; i < G_N_ELEMENTS(both); i++)
    ema_bits_set(set, both[i], TRUE);
  expect_walk(set, 72, both, G_N_ELEMENTS(both));
  /* only the second word */
  set[0] = 0;
  expect_walk(set, 72, second, G_N_ELEMENTS(second));
  /* a break ends the walk: the first index of at least 64 */
  ema_bits_set(set, 3, TRUE);
  EMA_BITS_FOR_EACH (set, 72, j) {
    if (j >= 64) {
      first = j;
      break;
    }
  }
  g_assert_cmpuint(first, ==, 64);
  /* no set (NULL): every index below the size */
  expect_walk(NULL, 3, every, G_N_ELEMENTS(every));
  expect_walk(NULL, 0, NULL, 0);
}

/* Random sets of 1-200 indices: the two walks agree. */
static void test_random(void) {
  GRand *rand = g_rand_new_with_seed(7);
  for (guint round = 0; round < 2000; round++) {
    guint n = (guint) g_rand_int_range(rand, 1, 201);
    guint64 set[4] = {0, 0, 0, 0};
    guint a[200], b[200], ka, kb;
    double density = g_rand_double(rand);
    for (guint i = 0; i < n; i++)
      if (g_rand_double(rand) < density)
        ema_bits_set(set, i, TRUE);
    ka = walk_next(set, n, a);
    kb = walk_each(set, n, b);
    g_assert_cmpuint(ka, ==, kb);
    for (guint i = 0; i < ka; i++)
      g_assert_cmpuint(a[i], ==, b[i]);
  }
  g_rand_free(rand);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/bits/by-hand", test_by_hand);
  g_test_add_func("/bits/random", test_random);
  return g_test_run();
}
