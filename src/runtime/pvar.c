/* The registry of performance variables (pvar.h). */
#include "runtime/pvar.h"

#include <stdlib.h>
#include <string.h>

static const struct hashi_pvar **registry;
static int nregistered, capacity;

int hashi_pvar_register(const struct hashi_pvar *vars, int n)
{
    for (int k = 0; k < n; k++) {
        int i;
        for (i = 0; i < nregistered; i++)
            if (strcmp(registry[i]->name, vars[k].name) == 0)
                break;
        if (i < nregistered) {
            registry[i] = &vars[k];
            continue;
        }
        if (nregistered == capacity) {
            int cap = capacity ? capacity * 2 : 64;
            const struct hashi_pvar **grown = realloc(registry, (size_t)cap * sizeof *grown);
            if (!grown)
                return -1;
            registry = grown;
            capacity = cap;
        }
        registry[nregistered++] = &vars[k];
    }
    return 0;
}

int hashi_pvar_count(void)
{
    return nregistered;
}

const struct hashi_pvar *hashi_pvar_get(int i)
{
    return i >= 0 && i < nregistered ? registry[i] : NULL;
}
