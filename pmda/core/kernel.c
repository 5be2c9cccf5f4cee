/* Kernel introspection: modules, processes, tracepoints, symbols, the
 * monotonic clock; a BPF map mapped into memory. */
#include "agent.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

static bool path_exists(const char *fmt, const char *a, const char *b)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), fmt, a, b);
	return stat(path, &st) == 0;
}

bool virt_kmod_present(const char *name)
{
	return path_exists("/sys/module/%s%s", name, "");
}

bool virt_pid_alive(uint32_t pid)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%u", pid);
	return stat(path, &st) == 0;
}

bool virt_tracepoint_exists(const char *system, const char *event)
{
	char sym[256];

	if (path_exists("/sys/kernel/tracing/events/%s/%s", system, event) ||
	    path_exists("/sys/kernel/debug/tracing/events/%s/%s", system, event))
		return true;
	/* tracefs not mounted: every tracepoint has a __tracepoint_<event>
	 * (data: not listed by every kernel) and, since Linux 5.10, a
	 * __traceiter_<event> function (include/linux/tracepoint.h) */
	snprintf(sym, sizeof(sym), "__traceiter_%s", event);
	if (virt_ksym_exists(sym))
		return true;
	snprintf(sym, sizeof(sym), "__tracepoint_%s", event);
	return virt_ksym_exists(sym);
}

bool virt_ksym_exists(const char *name)
{
	uint64_t addr;
	bool present;

	return virt_ksym_lookup(&name, &addr, &present, 1) > 0;
}

uint64_t virt_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void *virt_map_mmap(const struct bpf_map *map, size_t *bytes, char *why, size_t len)
{
	void *mem;

	*bytes = (size_t)bpf_map__value_size(map) * bpf_map__max_entries(map);
	mem = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(map), 0);
	if (mem != MAP_FAILED)
		return mem;
	snprintf(why, len, "mmap %s: %s", bpf_map__name(map), strerror(errno));
	return NULL;
}
