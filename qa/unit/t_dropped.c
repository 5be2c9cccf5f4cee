/* virt.control.module.dropped across re-attaches (pmda/core/dropped.c): a
 * module reports the drops of its current attach, from maps that start at 0
 * with each attach; the agent serves the attaches before plus this one's,
 * and never less than it served before. */
#include "agent.h"
#include "unit.h"

#include <string.h>

static struct virt_family fam;
static uint64_t served;

/* A refresh in which the module counts n drops since its attach: the value
 * served after it, and whether it went back. */
static uint64_t refresh(uint64_t n)
{
	uint64_t v;

	fam.dropped_now = n;
	virt_dropped_update(&fam);
	v = virt_dropped(&fam);
	CHECK(v >= served);
	served = v;
	return v;
}

static uint64_t detach(void)
{
	uint64_t v;

	virt_dropped_fold(&fam);
	v = virt_dropped(&fam);
	CHECK(v >= served);
	CHECK(fam.dropped_now == 0);
	served = v;
	return v;
}

int main(void)
{
	memset(&fam, 0, sizeof(fam));
	CHECK(virt_dropped(&fam) == 0);

	/* attach, drops N = 5, detach, attach, drops M = 3: N + M */
	CHECK(refresh(2) == 2);
	CHECK(refresh(5) == 5);
	CHECK(detach() == 5);
	CHECK(refresh(0) == 5);		/* the new maps start at 0 */
	CHECK(refresh(3) == 8);
	CHECK(detach() == 8);

	/* a failed map read (0) in an attach: not served, nor lost at detach */
	CHECK(refresh(4) == 12);
	CHECK(refresh(0) == 12);
	CHECK(detach() == 12);

	/* an attach without a refresh, and a detach of nothing */
	CHECK(detach() == 12);
	CHECK(refresh(1) == 13);
	CHECK(detach() == 13);
	return UNIT_DONE();
}
