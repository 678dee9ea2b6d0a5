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

static void test_by_hand(void) {
  guint64 set[2] = {0, 0};
  guint out[128], k;
  /* empty, and a size of 0 */
  g_assert_cmpuint(walk_each(set, 72, out), ==, 0);
  g_assert_cmpuint(walk_each(set, 0, out), ==, 0);
  /* 0, 5, 63 (the first word's last), 64 and 71 (the second's) of 72 */
  ema_bits_set(set, 0, TRUE);
  ema_bits_set(set, 5, TRUE);
  ema_bits_set(set, 63, TRUE);
  ema_bits_set(set, 64, TRUE);
  ema_bits_set(set, 71, TRUE);
  k = walk_each(set, 72, out);
  g_assert_cmpuint(k, ==, 5);
  g_assert_cmpuint(out[0], ==, 0);
  g_assert_cmpuint(out[1], ==, 5);
  g_assert_cmpuint(out[2], ==, 63);
  g_assert_cmpuint(out[3], ==, 64);
  g_assert_cmpuint(out[4], ==, 71);
  /* only the second word */
  ema_bits_set(set, 0, FALSE);
  ema_bits_set(set, 5, FALSE);
  ema_bits_set(set, 63, FALSE);
  k = walk_each(set, 72, out);
  g_assert_cmpuint(k, ==, 2);
  g_assert_cmpuint(out[0], ==, 64);
  g_assert_cmpuint(out[1], ==, 71);
  /* a break ends the walk: the first index of at least 64 */
  ema_bits_set(set, 3, TRUE);
  guint first = 72;
  EMA_BITS_FOR_EACH (set, 72, j) {
    if (j >= 64) {
      first = j;
      break;
    }
  }
  g_assert_cmpuint(first, ==, 64);
  /* no set (NULL): every index below the size */
  k = walk_each(NULL, 3, out);
  g_assert_cmpuint(k, ==, 3);
  g_assert_cmpuint(out[0], ==, 0);
  g_assert_cmpuint(out[2], ==, 2);
  g_assert_cmpuint(walk_each(NULL, 0, out), ==, 0);
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
