/*
 * What each family's BPF programs cost: the kernel's run-time statistics
 * (run_time_ns, run_cnt of struct bpf_prog_info) summed over the programs
 * of the family's own BPF object, and the agent's optional hold of
 * BPF_ENABLE_STATS ([agent] bpf_stats = true).
 *
 * The kernel counts only while statistics are on (the sysctl
 * kernel.bpf_stats_enabled, or a BPF_ENABLE_STATS file descriptor held by
 * anyone); the metrics have values only when the agent knows they are on:
 * the sysctl is 1 or the agent holds the descriptor itself.
 */
#include "agent.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SYSCTL_STATS "/proc/sys/kernel/bpf_stats_enabled"

static int stats_fd = -1;

/* Per family: time and runs, the sums of its objects (the current one
 * live, earlier ones in the base). */
static struct {
	uint64_t words[4];
	struct virt_sums s;
	uint64_t last[2];	/* the current object's, at the last read */
	bool have;		/* s.sum is valid for this fetch */
} cost[VIRT_NFAMILIES];

static struct virt_sums *cost_sums(int f)
{
	if (!cost[f].s.n)
		cost[f].s = VIRT_SUMS_IN(cost[f].words, 2);
	return &cost[f].s;
}

void virt_progstats_hold(bool on)
{
	if (on && stats_fd < 0) {
		/* needs CAP_SYS_ADMIN (kernel/bpf/syscall.c), which we keep */
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (stats_fd < 0)
			pmNotifyErr(LOG_WARNING, "bpf_stats: BPF_ENABLE_STATS failed: %s",
				    strerror(errno));
		else
			pmNotifyErr(LOG_INFO, "bpf_stats: run-time statistics on while the agent runs "
				    "(every BPF program on the host)");
	} else if (!on && stats_fd >= 0) {
		close(stats_fd);
		stats_fd = -1;
	}
}

static bool sysctl_on(void)
{
	FILE *f = fopen(SYSCTL_STATS, "r");
	int v = 0;

	if (!f)
		return false;
	if (fscanf(f, "%d", &v) != 1)
		v = 0;
	fclose(f);
	return v != 0;
}

/* Run time and count summed over the object's loaded programs; 0 or -errno. */
static int object_totals(const struct bpf_object *obj, uint64_t out[2])
{
	struct bpf_program *prog;

	out[0] = out[1] = 0;
	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd < 0)		/* not loaded: another method's variant */
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
			return -errno;
		out[0] += info.run_time_ns;
		out[1] += info.run_cnt;
	}
	return 0;
}

void virt_progstats_refresh(void)
{
	bool on = stats_fd >= 0 || sysctl_on();

	for (int f = 1; f < VIRT_NFAMILIES; f++) {
		const struct virt_family *fam = &virt_families[f];
		uint64_t t[2];

		cost[f].have = false;
		if (!on || fam->state != VIRT_ACTIVE || !fam->obj || object_totals(fam->obj, t) < 0)
			continue;
		memcpy(cost[f].last, t, sizeof(t));
		virt_sums_begin(cost_sums(f));
		virt_sums_add(cost_sums(f), t);
		cost[f].have = true;
	}
}

/* Before the family's object goes (a re-attach follows): its totals join
 * the base, so the counters stay monotonic. A failed read folds the last
 * one. */
void virt_progstats_fold(struct virt_family *fam)
{
	int f = (int)(fam - virt_families);
	uint64_t t[2];

	if (fam->obj && object_totals(fam->obj, t) < 0)
		memcpy(t, cost[f].last, sizeof(t));
	if (fam->obj)
		virt_sums_fold(cost_sums(f), t);
	memset(cost[f].last, 0, sizeof(cost[f].last));
	fam->obj = NULL;
}

int virt_progstats_fetch(const struct virt_family *fam, bool runs, pmAtomValue *atom)
{
	int f = (int)(fam - virt_families);

	if (!cost[f].have)
		return PMDA_FETCH_NOVALUES;
	atom->ull = cost[f].s.sum[runs];
	return PMDA_FETCH_STATIC;
}
