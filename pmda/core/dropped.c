/*
 * virt.control.module.dropped, a counter that never goes back: a module
 * reports the drops of its current attach (fam->dropped_now, from BPF maps
 * that start at 0 with each attach); the agent adds those of the attaches
 * before, folded in at each detach.
 */
#include "agent.h"

/* After each refresh. A count lower than one served before (a failed map
 * read gives 0) is not served. */
void virt_dropped_update(struct virt_family *fam)
{
	if (fam->dropped_now > fam->dropped_high)
		fam->dropped_high = fam->dropped_now;
}

/* After the module's detach: this attach's drops join the base, and the
 * next attach starts from 0. */
void virt_dropped_fold(struct virt_family *fam)
{
	virt_dropped_update(fam);
	fam->dropped_base += fam->dropped_high;
	fam->dropped_high = fam->dropped_now = 0;
}

uint64_t virt_dropped(const struct virt_family *fam)
{
	return fam->dropped_base + fam->dropped_high;
}
