/* Bulk BPF map reads shared by modules. */
#include "virt.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <string.h>

uint64_t virt_bpf_syscalls;

int virt_ncpus(void)
{
	static int n;

	if (!n)
		n = libbpf_num_possible_cpus();
	return n;
}

int virt_map_dump(int fd, void *keys, size_t key_size, void *values,
		  size_t value_size, unsigned int max_entries)
{
	DECLARE_LIBBPF_OPTS(bpf_map_batch_opts, opts);
	unsigned long long in = 0, out = 0;
	bool first = true;
	unsigned int total = 0;

	while (total < max_entries) {
		__u32 count = max_entries - total;
		int err;

		virt_bpf_syscalls++;
		err = bpf_map_lookup_batch(fd, first ? NULL : &in, &out,
					   (char *)keys + total * key_size,
					   (char *)values + total * value_size,
					   &count, &opts);
		if (err < 0 && errno != ENOENT)
			return -errno;
		total += count;
		if (err < 0)		/* ENOENT: the whole map was read */
			break;
		in = out;
		first = false;
	}
	return (int)total;
}

void virt_percpu_sum(const void *percpu, size_t nwords, uint64_t *out)
{
	const uint64_t *v = percpu;
	int ncpu = virt_ncpus();

	memset(out, 0, nwords * sizeof(*out));
	for (int c = 0; c < ncpu; c++)
		for (size_t w = 0; w < nwords; w++)
			out[w] += v[(size_t)c * nwords + w];
}
