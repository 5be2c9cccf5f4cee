/* Bulk map reads (pmda/core/maps.c) against real BPF maps: a per-CPU map read
 * in chunks comes back whole, once per key, summed over the CPUs. Needs
 * bpf() (root); skips otherwise. */
#include "agent.h"
#include "unit.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NKEYS 150u
#define WORDS 3u

int main(void)
{
	int ncpu = virt_ncpus(), fd, afd;
	struct virt_bulk b;
	uint64_t *v = calloc((size_t)ncpu * WORDS, sizeof(uint64_t)), seen[NKEYS] = { 0 };
	uint64_t before, cpusum = 0, total;
	int got;

	fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_HASH, "t_maps", sizeof(uint64_t),
			    WORDS * sizeof(uint64_t), 200, NULL);
	afd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "t_maps_a", sizeof(uint32_t),
			     sizeof(uint64_t), 10, NULL);
	if (fd < 0 || afd < 0) {
		printf("%s: skipped: cannot create BPF maps (%s)\n", __FILE__, strerror(errno));
		return UNIT_SKIP;
	}
	if (!v) {
		printf("%s: out of memory\n", __FILE__);
		return 1;
	}
	for (int c = 0; c < ncpu; c++)
		cpusum += (uint64_t)c;
	for (uint64_t k = 0; k < NKEYS; k++) {
		for (int c = 0; c < ncpu; c++) {
			v[(size_t)c * WORDS] = k;
			v[(size_t)c * WORDS + 1] = k * (uint64_t)c;
			v[(size_t)c * WORDS + 2] = 1;
		}
		CHECK(bpf_map_update_elem(fd, &k, v, BPF_ANY) == 0);
	}
	CHECK(virt_bulk_alloc(&b, 200, sizeof(uint64_t), WORDS * sizeof(uint64_t)) == 0);
	/* the chunk is what fits the budget, at most the map */
	CHECK(b.chunk >= VIRT_BULK_CHUNK_MIN || b.chunk == 200);
	CHECK(b.chunk <= 200);
	if (ncpu > 1)
		b.chunk = 7;		/* many calls: 150 entries in 22 or more */
	before = virt_bpf_syscalls;
	got = virt_map_dump_percpu(fd, &b, sizeof(uint64_t), WORDS, 200);
	CHECK(got == (int)NKEYS);
	/* a hash is read a bucket at a time: a call may stop short of 7 */
	if (ncpu > 1)
		CHECK(virt_bpf_syscalls - before >= (NKEYS + 6) / 7 &&
		      virt_bpf_syscalls - before <= NKEYS + 1);
	for (int i = 0; i < got && i < (int)NKEYS; i++) {
		uint64_t k = ((uint64_t *)b.keys)[i];
		const uint64_t *s = (const uint64_t *)b.vals + (size_t)i * WORDS;

		CHECK(k < NKEYS);
		if (k >= NKEYS)
			continue;
		seen[k]++;
		CHECK(s[0] == k * (uint64_t)ncpu);
		CHECK(s[1] == k * cpusum);
		CHECK(s[2] == (uint64_t)ncpu);
	}
	for (unsigned int k = 0; k < NKEYS; k++)
		CHECK(seen[k] == 1);

	/* a per-CPU array of counters: the total over entries and CPUs */
	for (uint32_t k = 0; k < 10; k++) {
		for (int c = 0; c < ncpu; c++)
			v[c] = k + 1;
		CHECK(bpf_map_update_elem(afd, &k, v, BPF_ANY) == 0);
	}
	total = virt_percpu_counters_total(afd, &b, 10);
	CHECK(total == 55u * (uint64_t)ncpu);

	virt_bulk_free(&b);
	CHECK(b.keys == NULL && b.cvals == NULL);
	close(fd);
	close(afd);
	free(v);
	return UNIT_DONE();
}
