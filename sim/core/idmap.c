/* idmap.c: the id map of idmap.h. Slots hold (key, value) pairs; a NULL
 * value is an empty slot. A key lives at its home slot (a Fibonacci hash of
 * the key) or after it, with no empty slot between its home and its slot;
 * a removal shifts the entries after it back to keep that so (no
 * tombstones). The table doubles when it would pass half full.
 *
 * Invariants: mask + 1 (the slot count) is a power of two >= 16; len <=
 * (mask + 1) / 2. */
#include "ema/core/idmap.h"

typedef struct {
  guint64 key;
  gpointer value;
} Slot;

struct _EmaIdMap {
  Slot *slots;
  guint64 mask;
  guint shift; /* 64 - log2(slots) */
  guint len;
};

#define MIN_SLOTS 16u

static guint64 home_of(const EmaIdMap *map, guint64 key) {
  return (key * G_GUINT64_CONSTANT(0x9E3779B97F4A7C15)) >> map->shift;
}

static void alloc_slots(EmaIdMap *map, guint64 slots) {
  map->slots = g_new0(Slot, slots);
  map->mask = slots - 1;
  map->shift = 64u - (guint) g_bit_storage(slots - 1);
}

EmaIdMap *ema_id_map_new(void) {
  EmaIdMap *map = g_new0(EmaIdMap, 1);
  alloc_slots(map, MIN_SLOTS);
  return map;
}

void ema_id_map_free(EmaIdMap *map, GDestroyNotify value_free) {
  if (map == NULL)
    return;
  if (value_free)
    for (guint64 i = 0; i <= map->mask; i++)
      if (map->slots[i].value)
        value_free(map->slots[i].value);
  g_free(map->slots);
  g_free(map);
}

/* The slot of KEY, or the empty slot where it would go. */
static Slot *slot_of(const EmaIdMap *map, guint64 key) {
  guint64 i = home_of(map, key);
  while (map->slots[i].value && map->slots[i].key != key)
    i = (i + 1) & map->mask;
  return &map->slots[i];
}

gpointer ema_id_map_lookup(const EmaIdMap *map, guint64 key) {
  g_return_val_if_fail(map != NULL, NULL);
  return slot_of(map, key)->value;
}

static void grow(EmaIdMap *map) {
  Slot *old = map->slots;
  guint64 n = map->mask + 1;
  alloc_slots(map, 2 * n);
  for (guint64 i = 0; i < n; i++)
    if (old[i].value)
      *slot_of(map, old[i].key) = old[i];
  g_free(old);
}

void ema_id_map_insert(EmaIdMap *map, guint64 key, gpointer value) {
  Slot *slot;
  g_return_if_fail(map != NULL && value != NULL);
  slot = slot_of(map, key);
  if (slot->value == NULL) {
    if (2 * ((guint64) map->len + 1) > map->mask + 1) {
      grow(map);
      slot = slot_of(map, key);
    }
    map->len++;
    slot->key = key;
  }
  slot->value = value;
}

gpointer ema_id_map_remove(EmaIdMap *map, guint64 key) {
  Slot *slot;
  gpointer value;
  guint64 hole, i;
  g_return_val_if_fail(map != NULL, NULL);
  slot = slot_of(map, key);
  value = slot->value;
  if (value == NULL)
    return NULL;
  map->len--;
  /* shift back every later entry of the run whose home is not between the
   * hole and it (cyclically): it could not be found past the hole */
  hole = (guint64) (slot - map->slots);
  for (i = (hole + 1) & map->mask; map->slots[i].value; i = (i + 1) & map->mask) {
    guint64 home = home_of(map, map->slots[i].key);
    if (((i - home) & map->mask) >= ((i - hole) & map->mask)) {
      map->slots[hole] = map->slots[i];
      hole = i;
    }
  }
  map->slots[hole] = (Slot){0, NULL};
  return value;
}

guint ema_id_map_size(const EmaIdMap *map) {
  g_return_val_if_fail(map != NULL, 0);
  return map->len;
}
