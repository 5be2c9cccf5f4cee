/*
 * The agent-wide VM identities (virt_vm_of, pmda/core/virt.h): one per
 * VMM process, behind the labels and instance names of every family's
 * per-VM instances.
 */
#include "agent.h"
#include "vmid.h"

static struct vmid_set vms;

const struct vmid *virt_vm_of(uint32_t pid)
{
	return vmid_set_lookup(&vms, pid);
}
