/* Slot tables (pmda/core/slots.c) on a fake array in memory: claims, reads,
 * a dead slot buried (its words zeroed but the dead mark, the owner word
 * FREED) and counters that stay monotonic over burials and over a close
 * and re-open (a re-attach). */
#include "virt.h"
#include "slots.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

/* slots.c's and rows.c's collaborators in the agent */
void *virt_map_mmap(const struct bpf_map *map, size_t *bytes, char *why, size_t len)
{
	(void)map, (void)bytes, (void)why, (void)len;
	return NULL;
}

uint64_t virt_mono_ns(void)
{
	return 0;
}

pmInDom virt_indom(enum virt_indom_id id)
{
	return pmInDom_build(511, (unsigned int)id);
}

/* A family's slot: BPF-side state around the words the agent reads, the
 * dead word among the counters (as virtio's). */
enum { W_NAME, W_C0, W_C1, W_DEAD, W_C2, NW };
struct fake_slot {
	uint64_t owner;
	uint64_t scratch;
	uint64_t filled;
	uint64_t w[NW];
	uint64_t tail;
};
#define NSLOTS 6
#define NSUM (NW - W_C0)
#define SUM(w) ((w) - W_C0)

static const struct virt_slot_layout lay = {
	.size = sizeof(struct fake_slot),
	.owner = offsetof(struct fake_slot, owner),
	.filled = offsetof(struct fake_slot, filled),
	.words = offsetof(struct fake_slot, w),
	.nwords = NW,
	.first = W_C0,
	.dead = W_DEAD,
};

/* rows by the name word; name 9 is refused */
struct fake_fam {
	struct virt_sums rows[4];
	unsigned int claims;
};

static bool claim(void *ctx, struct virt_slots *t, size_t k, struct virt_slot_rec *rec)
{
	struct fake_fam *f = ctx;
	uint64_t name = rec->last[W_NAME];

	(void)t, (void)k;
	if (name >= 4)
		return false;
	f->claims++;
	rec->sums = &f->rows[name];
	rec->entry = f;
	return true;
}

static void fill(struct fake_slot *s, uint64_t owner, uint64_t name, uint64_t c0, uint64_t c2)
{
	memset(s, 0, sizeof(*s));
	s->owner = owner;
	s->filled = 1;
	s->scratch = s->tail = 77;
	s->w[W_NAME] = name;
	s->w[W_C0] = c0;
	s->w[W_C1] = 1;
	s->w[W_C2] = c2;
}

static void sum_rows(struct virt_slots *t, struct fake_fam *f)
{
	for (size_t r = 0; r < VIRT_ARRAY_SIZE(f->rows); r++)
		virt_sums_begin(&f->rows[r]);
	virt_slots_sum(t);
}

/* Re-attach: the old array's records fold into the base, a new array
 * counts from zero, the row's sum does not go back. */
static void check_reattach(struct virt_slots *t, struct fake_fam *f)
{
	static struct fake_slot mem[NSLOTS];
	uint64_t before = f->rows[1].sum[SUM(W_C0)];

	virt_slots_close(t);
	CHECK(t->rec == NULL && t->n == 0);
	sum_rows(t, f);
	CHECK(f->rows[1].sum[SUM(W_C0)] == before && f->rows[1].live == 0);
	CHECK(virt_slots_open(t, &lay, mem, NSLOTS) == 0);
	fill(&mem[2], 0x3000, 1, 2, 0);
	virt_slots_read(t, claim, f);
	sum_rows(t, f);
	CHECK(f->claims == 3 && t->rec[2].owner == 0x3000);
	CHECK(f->rows[1].sum[SUM(W_C0)] == before + 2 && f->rows[1].live == 1);
	virt_slots_close(t);
}

int main(void)
{
	static struct fake_slot mem[NSLOTS];
	struct fake_fam f = { 0 };
	struct virt_slots t;

	for (size_t r = 0; r < VIRT_ARRAY_SIZE(f.rows); r++)
		CHECK(virt_sums_init(&f.rows[r], NSUM) == 0);
	CHECK(virt_slots_open(&t, &lay, mem, NSLOTS) == 0);
	CHECK(virt_slot_at(&t, 2) == (void *)&mem[2]);
	CHECK(virt_slots_bits(0) == 1 && virt_slots_bits(2) == 1 && virt_slots_bits(3) == 2);
	CHECK(virt_slots_bits(1024) == 10 && virt_slots_bits(1025) == 11);
	fill(&mem[0], 0x1000, 1, 5, 9);
	fill(&mem[1], 0x2000, 2, 3, 3);
	mem[1].filled = 0;			/* being claimed */
	fill(&mem[2], 0x3000, 1, 1, 0);
	mem[3].owner = VIRT_SLOT_FREED;
	fill(&mem[4], 0x4000, 9, 1, 1);		/* refused */

	/* claimed once each, counted in their rows */
	virt_slots_read(&t, claim, &f);
	virt_slots_read(&t, claim, &f);
	CHECK(f.claims == 2);
	CHECK(t.rec[0].owner == 0x1000 && t.rec[0].seen && !t.rec[0].dead && t.rec[0].entry == &f);
	CHECK(t.rec[1].owner == 0 && !t.rec[1].seen && t.rec[3].owner == 0 && t.rec[4].owner == 0);
	sum_rows(&t, &f);
	CHECK(f.rows[1].live == 2 && f.rows[1].sum[SUM(W_C0)] == 6 && f.rows[1].sum[SUM(W_C2)] == 9);
	CHECK(f.rows[1].sum[SUM(W_C1)] == 2 && f.rows[2].live == 0 && f.rows[2].sum[0] == 0);

	/* slot 0 counts on, then dies: read with the mark, which no sum sees */
	mem[0].w[W_C0] = 8;
	mem[0].w[W_DEAD] = 1;
	virt_slots_read(&t, claim, &f);
	CHECK(t.rec[0].dead && t.rec[0].last[W_DEAD] == 0 && t.rec[0].last[W_C0] == 8);
	sum_rows(&t, &f);
	CHECK(f.rows[1].sum[SUM(W_C0)] == 9 && f.rows[1].sum[SUM(W_DEAD)] == 0);
	/* buried: counters into the base, the slot back, words zeroed but the mark */
	virt_slots_bury(&t, 0, true);
	CHECK(t.rec[0].owner == 0 && t.rec[0].sums == NULL && t.rec[0].last[W_C0] == 0);
	CHECK(mem[0].owner == VIRT_SLOT_FREED && mem[0].w[W_DEAD] == 1);
	CHECK(mem[0].filled == 0 && mem[0].scratch == 0 && mem[0].tail == 0);
	CHECK(mem[0].w[W_NAME] == 0 && mem[0].w[W_C0] == 0 && mem[0].w[W_C2] == 0);
	CHECK(f.rows[1].base[SUM(W_C0)] == 8 && f.rows[1].base[SUM(W_C2)] == 9);
	sum_rows(&t, &f);
	CHECK(f.rows[1].live == 1 && f.rows[1].sum[SUM(W_C0)] == 9 && f.rows[1].sum[SUM(W_C2)] == 9);
	/* a freed slot is skipped until the BPF side claims it again */
	virt_slots_read(&t, claim, &f);
	CHECK(t.rec[0].owner == 0 && !t.rec[0].seen && f.claims == 2);
	fill(&mem[0], 0x5000, 1, 4, 0);
	virt_slots_read(&t, claim, &f);
	sum_rows(&t, &f);
	CHECK(f.claims == 3 && t.rec[0].owner == 0x5000);
	CHECK(f.rows[1].live == 2 && f.rows[1].sum[SUM(W_C0)] == 13);
	/* buried without giving the slot back: the slot is left alone */
	virt_slots_bury(&t, 0, false);
	CHECK(mem[0].owner == 0x5000 && mem[0].w[W_C0] == 4);
	CHECK(f.rows[1].base[SUM(W_C0)] == 12);

	f.claims = 2;
	check_reattach(&t, &f);
	for (size_t r = 0; r < VIRT_ARRAY_SIZE(f.rows); r++)
		virt_sums_release(&f.rows[r]);
	return UNIT_DONE();
}
