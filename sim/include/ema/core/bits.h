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

/* Index I in (ON) or out of the set BITS. */
static inline void ema_bits_set(guint64 *bits, guint i, gboolean on) {
  if (on)
    bits[i / 64] |= G_GUINT64_CONSTANT(1) << (i % 64);
  else
    bits[i / 64] &= ~(G_GUINT64_CONSTANT(1) << (i % 64));
}

G_END_DECLS
