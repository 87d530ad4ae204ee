/* A seeded shuffle for the partitioned tests: the order partitions are readied in. */
#ifndef HASHI_TEST_PART_SHUFFLE_H
#define HASHI_TEST_PART_SHUFFLE_H

static unsigned rng_state;
static inline unsigned rng(void)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return rng_state >> 8;
}

static inline void shuffle(int *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rng() % (unsigned)(i + 1));
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

#endif
