/* sample family: types shared by bpf/sample.bpf.c and pmda/sample.c. */
#ifndef VIRT_SAMPLE_H
#define VIRT_SAMPLE_H

enum sample_drop {
	SAMPLE_DROP_PROC,	/* calls map full (max_processes) */
	SAMPLE_DROPS
};

#endif
