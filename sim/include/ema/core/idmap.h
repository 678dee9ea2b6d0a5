/* idmap.h: a map from 64-bit ids (request serials, block hashes) to
 * pointers, for the lookups the engine and the pool make per request and
 * per block: open addressing with linear probing, no allocation per entry,
 * the hashing inlined (a GHashTable calls its hash and equality functions
 * through pointers).
 *
 * Invariants: values are never NULL (NULL is "absent"); a key is in the map
 * at most once; the table is at most half full. There is no iteration: its
 * order would depend on the table's size, and the users keep their own
 * ordered lists. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _EmaIdMap EmaIdMap;

EmaIdMap *ema_id_map_new(void);
/* Frees the map; VALUE_FREE (NULL: none) is called on every value left. */
void ema_id_map_free(EmaIdMap *map, GDestroyNotify value_free);

/* The value of KEY, NULL if none. */
gpointer ema_id_map_lookup(const EmaIdMap *map, guint64 key);
/* KEY -> VALUE (not NULL), replacing KEY's value if it has one. */
void ema_id_map_insert(EmaIdMap *map, guint64 key, gpointer value);
/* KEY's value, taken out of the map; NULL if it had none. */
gpointer ema_id_map_remove(EmaIdMap *map, guint64 key);
guint ema_id_map_size(const EmaIdMap *map);

G_END_DECLS
