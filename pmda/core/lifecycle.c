/*
 * Each family's life cycle, driven by the agent: attach when its kernel
 * support is there (with back-off after failures), detach when it goes
 * away, refresh (bulk map reads) before fetches. Everything runs in the
 * one thread that answers pmcd.
 */
#include "agent.h"
#include "rows.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void set_state(struct virt_family *fam, enum virt_state state)
{
	static const char *const names[] = { "disabled", "unavailable", "active" };

	if (fam->state != state)
		pmNotifyErr(LOG_INFO, "%s: %s%s%s", fam->name, names[state],
			    state == VIRT_ACTIVE ? " via " : fam->reason[0] ? ": " : "",
			    state == VIRT_ACTIVE ? fam->method : fam->reason);
	fam->state = state;
}

/* Everything runs in the one thread that answers pmcd, and pmcd gives an
 * agent 5 s (pmcd -t) before it drops it: say which step was slow. */
#define VIRT_SLOW_MS 1000

static void note_slow(const struct virt_family *fam, const char *what, uint64_t start)
{
	uint64_t ms = virt_now_ms() - start;

	if (ms >= VIRT_SLOW_MS)
		virt_log(LOG_WARNING, "%s: %s took %llu ms", fam->name, what, (unsigned long long)ms);
}

/* Failed attaches of a family whose prerequisites are there (ready())
 * are retried after 1, 2, 4 ... up to 32 poll intervals, not at every
 * poll: each try loads and verifies the whole BPF object. The prerequisites
 * going away and coming back (a kernel module reloaded) start over. */
#define RETRY_MAX_SHIFT 5
static struct {
	unsigned int failures;
	uint64_t at_ms;
	uint64_t wait_ms;	/* the wait before at_ms */
	char logged[VIRT_REASON_MAX];	/* the failure reason last logged */
} retry[VIRT_NFAMILIES];

static bool retry_due(struct virt_family *fam)
{
	return !retry[fam - virt_families].failures || virt_now_ms() >= retry[fam - virt_families].at_ms;
}

/* Back to a first try, which logs its failure whatever the last one was. */
static void retry_reset(struct virt_family *fam)
{
	retry[fam - virt_families].failures = 0;
	retry[fam - virt_families].wait_ms = 0;
	retry[fam - virt_families].logged[0] = '\0';
}

/* virt.control.module.retry_wait: the wait after the last failed attach
 * before the next one, 0 when the family is not retrying. */
uint64_t virt_retry_wait_ns(const struct virt_family *fam)
{
	return retry[fam - virt_families].wait_ms * 1000000ull;
}

/* A failed attach is logged, with libbpf's messages, when its reason is
 * not the one last logged: a family failing the same way at each retry
 * would otherwise write the same dozen lines every time. Retries failing
 * the same way are silent (virt.control.module.attach_attempts counts
 * them) but for one line when the wait reaches its longest. */
static void failed(struct virt_family *fam, bool retry_it)
{
	int f = (int)(fam - virt_families);
	unsigned int n = retry[f].failures;
	uint64_t wait = virt_poll_ms << (n < RETRY_MAX_SHIFT ? n : RETRY_MAX_SHIFT);
	bool again = strcmp(retry[f].logged, fam->reason) == 0;

	virt_log_release(!again);
	if (!retry_it) {
		if (!again)
			pmNotifyErr(LOG_INFO, "%s: attach failed: %s", fam->name, fam->reason);
	} else if (!again) {
		pmNotifyErr(LOG_INFO, "%s: attach failed: %s; next attempt in %g s "
			    "(retries that fail the same way are not logged)",
			    fam->name, fam->reason, (double)wait / 1000);
	} else if (n == RETRY_MAX_SHIFT) {
		pmNotifyErr(LOG_INFO, "%s: attach still failing the same way after %u attempts; "
			    "retrying every %g s", fam->name, n + 1, (double)wait / 1000);
	}
	snprintf(retry[f].logged, VIRT_REASON_MAX, "%s", fam->reason);
	if (retry_it) {
		retry[f].failures++;
		retry[f].at_ms = virt_now_ms() + wait;
		retry[f].wait_ms = wait;
	}
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ms(void)
{
	return cpu_ns() / 1000000;
}

/* Each family's drops map: its fd while attached, and buffers to read it. */
static struct {
	int fd;
	struct virt_bulk bulk;
} drops[VIRT_NFAMILIES];

/* The first attach: the module's state, zeroed, filled in by its init(). */
static int first_attach(struct virt_family *fam)
{
	const struct virt_module *mod = fam->mod;
	int rc;

	if (fam->priv)
		return 0;
	if (mod->ndrops &&
	    virt_bulk_alloc(&drops[fam - virt_families].bulk, mod->ndrops, sizeof(uint32_t),
			    sizeof(uint64_t)) < 0)
		return -ENOMEM;
	if (!(fam->priv = calloc(1, mod->priv_size ? mod->priv_size : 1)))
		return -ENOMEM;
	if (mod->init && (rc = mod->init(fam)) < 0) {
		free(fam->priv);
		fam->priv = NULL;
		return rc;
	}
	return 0;
}

static int attach_family(struct virt_family *fam)
{
	const struct bpf_map *map;
	int rc = first_attach(fam);

	if (rc < 0)
		return rc;
	if (!(fam->skel = virt_attach_skel(fam, fam->mod->attach, &rc)))
		return rc;
	map = fam->mod->ndrops ? bpf_object__find_map_by_name(fam->skel->obj, "drops") : NULL;
	drops[fam - virt_families].fd = map ? bpf_map__fd(map) : -1;
	return VIRT_ATTACHED;
}

static void try_attach(struct virt_family *fam)
{
	uint64_t start, cpu;
	int rc;

	if (!fam->mod)
		return;
	if (fam->mod->ready && !fam->mod->ready(fam)) {
		retry_reset(fam);
		return;
	}
	if (!retry_due(fam))
		return;
	fam->attach_attempts++;
	fam->reason[0] = '\0';
	start = virt_now_ms();
	cpu = cpu_ms();
	virt_log_hold();
	rc = attach_family(fam);
	if (rc == VIRT_ATTACHED) {
		virt_log_release(true);
		pmNotifyErr(LOG_INFO, "%s: attached in %llu ms (%llu ms on CPU)", fam->name,
			    (unsigned long long)(virt_now_ms() - start),
			    (unsigned long long)(cpu_ms() - cpu));
		retry_reset(fam);
		set_state(fam, VIRT_ACTIVE);
	} else {
		note_slow(fam, "failed attach", start);
		fam->obj = NULL;	/* nothing attached */
		if (!fam->reason[0])
			virt_set_reason(fam, "attach failed: %s", strerror(rc < 0 ? -rc : EAGAIN));
		failed(fam, rc < 0);
		set_state(fam, VIRT_UNAVAILABLE);
	}
}

static void detach(struct virt_family *fam)
{
	if (fam->state == VIRT_ACTIVE) {
		virt_progstats_fold(fam);
		if (fam->mod->detach)
			fam->mod->detach(fam);
		virt_skel_destroy(fam->skel);
		fam->skel = NULL;
		virt_dropped_fold(fam);
	}
	fam->programs = 0;
	fam->method[0] = '\0';
}

/* Called every poll interval and once at start-up. */
void virt_poll_families(void)
{
	for (int i = 1; i < VIRT_NFAMILIES; i++) {
		struct virt_family *fam = &virt_families[i];
		uint64_t start;
		bool ready;

		if (fam->state == VIRT_UNAVAILABLE) {
			try_attach(fam);
			continue;
		}
		if (fam->state != VIRT_ACTIVE || !fam->mod->ready)
			continue;
		start = virt_now_ms();
		ready = fam->mod->ready(fam);
		note_slow(fam, "readiness check", start);
		if (!ready) {
			/* e.g. the kernel module we probe was unloaded */
			detach(fam);
			if (!fam->reason[0])
				virt_set_reason(fam, "kernel support went away");
			set_state(fam, VIRT_UNAVAILABLE);
		}
	}
	virt_btf_targets_release();
}

void virt_shutdown_families(void)
{
	for (int i = 1; i < VIRT_NFAMILIES; i++)
		if (virt_families[i].state == VIRT_ACTIVE)
			detach(&virt_families[i]);
}

uint64_t virt_refreshes;

/* Percentile windows of rows gone idle are freed: once a
 * megabyte of them is, hand the pages back to the system, which glibc
 * does not do by itself for freed chunks below allocations still in use. */
static void give_back_windows(void)
{
	static size_t freed;

	freed += virt_rows_freed();
	if (freed >= 1 << 20) {
		malloc_trim(0);
		freed = 0;
	}
}

void virt_refresh_family(struct virt_family *fam)
{
	uint64_t start, cpu;
	int rc;

	if (fam->state != VIRT_ACTIVE || !fam->mod->refresh)
		return;
	virt_refreshes++;
	start = virt_mono_ns();
	cpu = cpu_ns();
	fam->dropped_now = 0;
	rc = fam->mod->refresh(fam);
	if (fam->mod->ndrops && drops[fam - virt_families].fd >= 0)
		fam->dropped_now += virt_percpu_counters_total(drops[fam - virt_families].fd,
							       &drops[fam - virt_families].bulk,
							       fam->mod->ndrops);
	virt_dropped_update(fam);
	fam->refresh_cpu_ns += cpu_ns() - cpu;
	fam->refresh_ns += virt_mono_ns() - start;
	note_slow(fam, "refresh", start / 1000000);
	if (rc < 0)
		pmNotifyErr(LOG_WARNING, "%s: refresh failed: %s", fam->name, strerror(-rc));
	give_back_windows();
}
