/*
 * The layout of the structs the agent and its modules share, as the
 * compiler of this object lays them out: VIRT_MODULE_LAYOUT, which a module
 * puts in its struct virt_module and the agent compares with its own
 * (pmda/core/settings.c). Included by virt.h; do not include it alone.
 *
 * The list of records (structs, unions, enums) and of their members is
 * build/layout.def, made by scripts/layout.sh from clang's AST of the
 * shared headers, so a member added to a header is in the hash without
 * anyone listing it. The values are sizeof, _Alignof, offsetof and
 * enumerator values, evaluated here, so a module built with other flags
 * (-DVIRT_HIST_BUCKETS=20) or against other headers gets another hash.
 * Each entry is mixed with its position in the list (splitmix64's
 * finalizer) and the mixes are added: a constant expression, no code runs.
 */
#ifndef VIRT_LAYOUT_H
#define VIRT_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include "rows.h"
#include "slots.h"
#include "hist.h"
#include "config.h"
#include "array.h"
#include "vmid.h"

#define VIRT_LAYOUT_MIX1(z) (((z) ^ ((z) >> 30)) * 0xbf58476d1ce4e5b9ull)
#define VIRT_LAYOUT_MIX2(z) (((z) ^ ((z) >> 27)) * 0x94d049bb133111ebull)
#define VIRT_LAYOUT_MIX3(z) ((z) ^ ((z) >> 31))
/* entry number i of the list, whose value is v */
#define VIRT_LAYOUT_MIX(i, v) \
	VIRT_LAYOUT_MIX3(VIRT_LAYOUT_MIX2(VIRT_LAYOUT_MIX1( \
		(uint64_t)(v) + ((uint64_t)(i) + 1) * 0x9e3779b97f4a7c15ull)))

/* a member: its offset and size; a flexible array member: its offset and
 * its element's size; an enumerator: its value */
#define VIRT_LAYOUT_FIELD(i, T, f) \
	+ VIRT_LAYOUT_MIX(i, (uint64_t)offsetof(T, f) << 32 | sizeof(((T *)0)->f))
#define VIRT_LAYOUT_FLEX(i, T, f) \
	+ VIRT_LAYOUT_MIX(i, (uint64_t)offsetof(T, f) << 32 | sizeof(((T *)0)->f[0]))
#define VIRT_LAYOUT_ENUMERATOR(i, e) + VIRT_LAYOUT_MIX(i, (uint64_t)(e))
/* a record: its size and alignment, then its members */
#define VIRT_LAYOUT_SELF(T, i) VIRT_LAYOUT_MIX(i, (uint64_t)sizeof(T) << 32 | _Alignof(T))

/* one per record, to name the ones that differ */
#define VIRT_LAYOUT_RECORD(T, i, members) \
	{ #T, sizeof(T), VIRT_LAYOUT_SELF(T, i) members },
static const struct virt_layout_record virt_layout_records[] __attribute__((unused)) = {
#include "layout.def"
};
#undef VIRT_LAYOUT_RECORD

/* every entry of every record (numbered once over the whole list) */
#define VIRT_LAYOUT_RECORD(T, i, members) + VIRT_LAYOUT_SELF(T, i) members
static const struct virt_layout virt_layout __attribute__((unused)) = {
	0
#include "layout.def"
	, VIRT_ARRAY_SIZE(virt_layout_records), virt_layout_records
};
#undef VIRT_LAYOUT_RECORD

#define VIRT_MODULE_LAYOUT (&virt_layout)

#endif
