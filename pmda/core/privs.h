/* Least privilege after start-up (pmda/core/privs.c). */
#ifndef VIRT_PRIVS_H
#define VIRT_PRIVS_H

#include <stddef.h>
#include <stdint.h>

/* The capabilities kept, as a CapEff-style bit mask: the agent's own and
 * extra (what enabled modules ask for: virt_module.caps). */
uint64_t virt_privs_keep_mask(uint64_t extra);
/* Drop every other capability (all sets) and set no_new_privs. 0, or
 * -errno with the step that failed in why. */
int virt_drop_privileges(uint64_t extra, char *why, size_t len);

#endif
