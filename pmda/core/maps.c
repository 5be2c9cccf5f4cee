/* Bulk BPF map reads shared by modules. */
#include "agent.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint64_t virt_bpf_syscalls;

int virt_ncpus(void)
{
	static int n;

	if (!n)
		n = libbpf_num_possible_cpus();
	return n;
}

/* Where a batch read of a map stands between BPF_MAP_LOOKUP_BATCH calls. */
struct batch_pos {
	unsigned long long in, out;
	bool started;
};

/* One BPF_MAP_LOOKUP_BATCH call from where the last one stopped: up to
 * *count entries into keys and values, *count set to what came. 1 when
 * the whole map has been read, 0 when more may follow, or -errno. */
static int batch_next(int fd, struct batch_pos *pos, void *keys, void *values, __u32 *count)
{
	DECLARE_LIBBPF_OPTS(bpf_map_batch_opts, opts);
	int err;

	virt_bpf_syscalls++;
	err = bpf_map_lookup_batch(fd, pos->started ? &pos->in : NULL, &pos->out, keys, values,
				   count, &opts);
	if (err < 0 && errno != ENOENT)
		return -errno;
	pos->in = pos->out;
	pos->started = true;
	return err < 0;		/* ENOENT: the whole map was read */
}

int virt_map_dump(int fd, void *keys, size_t key_size, void *values,
		  size_t value_size, unsigned int max_entries)
{
	struct batch_pos pos = { 0 };
	unsigned int total = 0;

	while (total < max_entries) {
		__u32 count = max_entries - total;
		int done = batch_next(fd, &pos, (char *)keys + total * key_size,
				      (char *)values + total * value_size, &count);

		if (done < 0)
			return done;
		total += count;
		if (done)
			break;
	}
	return (int)total;
}

int virt_map_delete(int fd, const void *key)
{
	virt_bpf_syscalls++;
	return bpf_map_delete_elem(fd, key);
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

int virt_bulk_alloc(struct virt_bulk *b, size_t max_keys, size_t key_size,
		    size_t value_size)
{
	size_t vsz = (value_size + 7) & ~(size_t)7, stride = vsz * (size_t)virt_ncpus();
	size_t chunk = VIRT_BULK_CHUNK_BYTES / stride;

	if (chunk < VIRT_BULK_CHUNK_MIN)
		chunk = VIRT_BULK_CHUNK_MIN;
	if (chunk > max_keys)
		chunk = max_keys;
	memset(b, 0, sizeof(*b));
	b->keys = calloc(max_keys, key_size);
	b->vals = calloc(max_keys, vsz);
	b->chunk = chunk;
	/* one CPU: a per-CPU value is its own sum, read straight into vals */
	if (virt_ncpus() > 1) {
		b->ckeys = calloc(chunk, key_size);
		b->cvals = calloc(chunk, stride);
	}
	if (b->keys && b->vals && (virt_ncpus() == 1 || (b->ckeys && b->cvals)))
		return 0;
	virt_bulk_free(b);
	return -ENOMEM;
}

void virt_bulk_free(struct virt_bulk *b)
{
	free(b->keys);
	free(b->vals);
	free(b->ckeys);
	free(b->cvals);
	b->keys = b->vals = b->ckeys = b->cvals = NULL;
}

int virt_map_dump_percpu(int fd, struct virt_bulk *b, size_t key_size, size_t nwords,
			 unsigned int max_entries)
{
	size_t vsz = nwords * sizeof(uint64_t), stride = vsz * (size_t)virt_ncpus();
	struct batch_pos pos = { 0 };
	unsigned int total = 0;

	if (virt_ncpus() == 1)
		return virt_map_dump(fd, b->keys, key_size, b->vals, vsz, max_entries);
	while (total < max_entries) {
		__u32 count = max_entries - total < b->chunk ? max_entries - total
							     : (__u32)b->chunk;
		int done = batch_next(fd, &pos, b->ckeys, b->cvals, &count);

		if (done < 0)
			return done;
		memcpy((char *)b->keys + (size_t)total * key_size, b->ckeys, count * key_size);
		for (__u32 i = 0; i < count; i++)
			virt_percpu_sum((char *)b->cvals + (size_t)i * stride, nwords,
					(uint64_t *)((char *)b->vals + (size_t)(total + i) * vsz));
		total += count;
		if (done)
			break;
	}
	return (int)total;
}

uint64_t virt_percpu_counters_total(int fd, struct virt_bulk *b, unsigned int n)
{
	int got = virt_map_dump_percpu(fd, b, sizeof(uint32_t), 1, n);
	uint64_t total = 0;

	for (int i = 0; i < got; i++)
		total += ((uint64_t *)b->vals)[i];
	return total;
}
