/* test-idmap.c: the id map (sim/core/idmap.c): insert, replace, lookup and
 * remove by hand, keys that share a home slot (removal shifts the run back),
 * growth, freeing with and without a value destructor, and a randomized
 * comparison against a GHashTable. */
#include <ema/core/idmap.h>

static int dummy[64];

static void test_basic(void) {
  EmaIdMap *map = ema_id_map_new();
  g_assert_null(ema_id_map_lookup(map, 7));
  g_assert_null(ema_id_map_remove(map, 7));
  ema_id_map_insert(map, 7, &dummy[0]);
  ema_id_map_insert(map, 0, &dummy[1]);
  ema_id_map_insert(map, G_MAXUINT64, &dummy[2]);
  g_assert_cmpuint(ema_id_map_size(map), ==, 3);
  g_assert_true(ema_id_map_lookup(map, 7) == &dummy[0]);
  g_assert_true(ema_id_map_lookup(map, 0) == &dummy[1]);
  g_assert_true(ema_id_map_lookup(map, G_MAXUINT64) == &dummy[2]);
  /* a replaced value: the size stays */
  ema_id_map_insert(map, 7, &dummy[3]);
  g_assert_cmpuint(ema_id_map_size(map), ==, 3);
  g_assert_true(ema_id_map_lookup(map, 7) == &dummy[3]);
  g_assert_true(ema_id_map_remove(map, 7) == &dummy[3]);
  g_assert_null(ema_id_map_lookup(map, 7));
  g_assert_cmpuint(ema_id_map_size(map), ==, 2);
  ema_id_map_free(map, NULL);
}

/* Seven keys in the first table's sixteen slots (runs of neighbours):
 * every key left stays findable after each removal, wherever it sits in
 * its run. */
static void test_runs(void) {
  EmaIdMap *map = ema_id_map_new();
  for (guint i = 0; i < 7; i++)
    ema_id_map_insert(map, (guint64) i << 60, &dummy[i]);
  for (guint r = 0; r < 7; r++) {
    guint victim = (r * 3) % 7;
    g_assert_true(ema_id_map_remove(map, (guint64) victim << 60) == &dummy[victim]);
    for (guint i = 0; i < 7; i++) {
      gboolean gone = FALSE;
      for (guint q = 0; q <= r; q++)
        gone |= i == (q * 3) % 7;
      g_assert_true(ema_id_map_lookup(map, (guint64) i << 60) == (gone ? NULL : &dummy[i]));
    }
  }
  g_assert_cmpuint(ema_id_map_size(map), ==, 0);
  ema_id_map_free(map, NULL);
}

static guint freed;
static void count_free(gpointer p) {
  freed++;
  g_free(p);
}

static void test_free_values(void) {
  EmaIdMap *map = ema_id_map_new();
  for (guint64 i = 0; i < 100; i++)
    ema_id_map_insert(map, i * 977, g_new0(int, 1));
  g_free(ema_id_map_remove(map, 977));
  freed = 0;
  ema_id_map_free(map, count_free);
  g_assert_cmpuint(freed, ==, 99);
  ema_id_map_free(NULL, NULL);
}

/* Random inserts and removals over 3000 keys (many collisions and shifts),
 * small ones and wide ones, against a plain array of the expected values. */
static void test_random(void) {
  enum { KEYS = 3000 };
  for (guint round = 0; round < 2; round++) {
    GRand *rand = g_rand_new_with_seed(42 + round);
    EmaIdMap *map = ema_id_map_new();
    guint64 *keys = g_new(guint64, KEYS);
    gpointer *want = g_new0(gpointer, KEYS);
    guint size = 0;
    for (guint i = 0; i < KEYS; i++)
      keys[i] = round == 0 ? i : ((guint64) g_rand_int(rand) << 32 | (i % 8)) ^ ((guint64) i << 40);
    for (guint step = 0; step < 200000; step++) {
      guint i = (guint) g_rand_int_range(rand, 0, KEYS);
      gpointer value = &dummy[g_rand_int_range(rand, 0, G_N_ELEMENTS(dummy))];
      g_assert_true(ema_id_map_lookup(map, keys[i]) == want[i]);
      if (g_rand_int_range(rand, 0, 3) == 0) {
        g_assert_true(ema_id_map_remove(map, keys[i]) == want[i]);
        size -= want[i] != NULL;
        want[i] = NULL;
      } else {
        ema_id_map_insert(map, keys[i], value);
        size += want[i] == NULL;
        want[i] = value;
      }
      g_assert_cmpuint(ema_id_map_size(map), ==, size);
    }
    for (guint i = 0; i < KEYS; i++)
      g_assert_true(ema_id_map_lookup(map, keys[i]) == want[i]);
    ema_id_map_free(map, NULL);
    g_free(keys);
    g_free(want);
    g_rand_free(rand);
  }
}

int main(int argc, char *argv[]) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/idmap/basic", test_basic);
  g_test_add_func("/idmap/runs", test_runs);
  g_test_add_func("/idmap/free-values", test_free_values);
  g_test_add_func("/idmap/random", test_random);
  return g_test_run();
}
