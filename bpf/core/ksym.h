/* Kernel symbol lookup: the context of bpf/core/ksym.bpf.c's program,
 * shared with pmda/core/ksyms.c. */
#ifndef VIRT_KSYM_H
#define VIRT_KSYM_H

#define VIRT_KSYM_NAME_LEN	64

struct virt_ksym_arg {
	char name[VIRT_KSYM_NAME_LEN];	/* in: NUL-terminated */
	__u64 addr;			/* out: the address, 0 if err */
	__s64 err;			/* out: 0, -ENOENT, -EPERM (addresses hidden) */
};

#endif
