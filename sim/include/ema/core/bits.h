/* bits.h: sets of indices below n (GPUs of a server: the pool's lender and
 * offload sets, the view's) as bits in 64-bit words, EMA_BITS_WORDS(n) of
 * them, walked in index order: a sum over a set adds what a walk of every
 * index adds, in its order, where the others' terms are 0. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define EMA_BITS_WORDS(n) (((n) + 63) / 64)

/* The first index from I on in the set BITS of N indices, or N. */
static inline guint ema_bits_next(const guint64 *bits, guint i, guint n) {
  while (i < n) {
    guint64 word = bits[i / 64] >> (i % 64);
    if (word != 0)
      return MIN(n, i + (guint) __builtin_ctzll(word));
    i = (i / 64 + 1) * 64;
  }
  return n;
}

/* A walk over the set BITS of N indices in index order, a word at a time
 * (EMA_BITS_FOR_EACH): the bits of the word being walked are read once, so
 * the set must not change during the walk. BITS NULL: every index below N. */
typedef struct {
  const guint64 *bits;
  guint64 word; /* the current word's bits not walked yet */
  guint base;   /* the index of the current word's bit 0 */
  guint n;
} EmaBitsWalk;

static inline EmaBitsWalk ema_bits_walk(const guint64 *bits, guint n) {
  return (EmaBitsWalk){bits, bits && n > 0 ? bits[0] : 0, 0, n};
}

/* The walk's next index, or its N once it is over. */
static inline guint ema_bits_walk_next(EmaBitsWalk *w) {
  guint i;
  if (G_UNLIKELY(w->bits == NULL))
    return w->base < w->n ? w->base++ : w->n;
  while (w->word == 0) {
    w->base += 64;
    if (w->base >= w->n)
      return w->n;
    w->word = w->bits[w->base / 64];
  }
  i = w->base + (guint) __builtin_ctzll(w->word);
  w->word &= w->word - 1;
  return MIN(i, w->n);
}

/* Each index J of the set SET of SIZE indices (NULL: every index), in order
 * (as a walk of ema_bits_next() gives them, for a set that the body leaves
 * as it is); a break in the body ends the walk. */
#define EMA_BITS_FOR_EACH(set, size, j)                                                            \
  for (EmaBitsWalk j##_walk = ema_bits_walk((set), (size)); j##_walk.n > 0; j##_walk.n = 0)        \
    for (guint j = ema_bits_walk_next(&j##_walk); j < j##_walk.n; j = ema_bits_walk_next(&j##_walk))

/* Index I in (ON) or out of the set BITS. */
static inline void ema_bits_set(guint64 *bits, guint i, gboolean on) {
  if (on)
    bits[i / 64] |= G_GUINT64_CONSTANT(1) << (i % 64);
  else
    bits[i / 64] &= ~(G_GUINT64_CONSTANT(1) << (i % 64));
}

/* Whether index I is in the set BITS. */
static inline gboolean ema_bits_has(const guint64 *bits, guint i) {
  return (bits[i / 64] >> (i % 64)) & 1;
}

G_END_DECLS
