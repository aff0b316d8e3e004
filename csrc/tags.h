/* tags.h - the interned tag table (slg_tags), shared by the columnar
 * decoders that record what they learn of each tag (kind, flags). */
#ifndef SLG_TAGS_H
#define SLG_TAGS_H

#include <stdint.h>

#include "summarylog_api.h"

typedef struct {
    uint64_t off, len; /* in arena */
    uint64_t hash;
    int32_t kind;      /* SLG_TAG_* */
    int32_t flags;     /* SLG_TAGF_* */
} tag_entry;

struct slg_tags {
    int32_t dialect;   /* SLG_DIALECT_*: how the next decode reads Summary.Value */
    char *arena;
    uint64_t arena_len, arena_cap;
    tag_entry *entries;
    uint64_t n, cap_entries;
    uint32_t *slots; /* open addressing: id + 1, 0 = empty */
    uint64_t n_slots;
};

#endif
