/*
 * sample family (module "sample"): the worked example of metrics/README.md's
 * "Adding a family" (qa 006 builds it into a copy of the tree and checks
 * its numbers): getppid() calls per process.
 */
#include "virt.h"
#include "rows.h"
#include "sample.h"
#include "sample.skel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

enum { OPT_MAX_PROCS, NOPTS };

static const struct virt_option sample_options[NOPTS] = {
	[OPT_MAX_PROCS] = { "max_processes", VIRT_OPT_UINT, 1, 65536, "1024",
		"processes counted; calls of more are counted as dropped" },
};

/* A process: the table's row holds its count in v[0]. */
struct proc {
	struct virt_keyed k;		/* key: pid */
};

struct sample_state {
	struct sample_bpf *skel;
	struct virt_table procs;
	struct virt_bulk bulk;		/* one bulk read of "calls" per refresh */
};

static bool sample_ready(struct virt_family *fam)
{
	if (virt_tracepoint_exists("raw_syscalls", "sys_enter"))
		return true;
	virt_set_reason(fam, "no raw_syscalls:sys_enter tracepoint");
	return false;
}

/* ------------------------------------------------------------ attach */

static struct virt_skel *open_skel(void)
{
	return (struct virt_skel *)sample_bpf__open();
}

static int configure(struct virt_family *fam, struct virt_skel *skel, const char *method,
		     char *why, size_t len)
{
	(void)method, (void)why, (void)len;
	bpf_map__set_max_entries(((struct sample_bpf *)skel)->maps.calls,
				 (__u32)fam->opts[OPT_MAX_PROCS].u);
	return 0;
}

static const char *const methods[] = { "raw_tp" };

static const struct virt_attach_ops sample_ops = {
	.methods = methods,
	.nmethods = VIRT_ARRAY_SIZE(methods),
	.open = open_skel,
	.configure = configure,
};

static int sample_attach(struct virt_family *fam)
{
	struct sample_state *st = fam->priv;

	if (!st) {			/* first attach: rows live until exit */
		if (!(st = calloc(1, sizeof(*st))))
			return -ENOMEM;
		st->procs = VIRT_TABLE_OF(struct proc);
		if (virt_bulk_alloc(&st->bulk, fam->opts[OPT_MAX_PROCS].u, sizeof(__u32),
				    sizeof(__u64)) < 0) {
			free(st);
			return -ENOMEM;
		}
		fam->priv = st;
	}
	st->skel = (struct sample_bpf *)virt_attach_skel(fam, &sample_ops);
	return st->skel ? VIRT_ATTACHED : -ENOENT;
}

/* What this object counted moves into the rows' bases: counters stay
 * monotonic across a re-attach. */
static void sample_detach(struct virt_family *fam)
{
	struct sample_state *st = fam->priv;

	for (size_t i = 0; i < st->procs.n; i++)
		virt_row_rebase(&st->procs.v[i]->row);
	virt_skel_destroy((struct virt_skel *)st->skel);
	st->skel = NULL;
}

/* ----------------------------------------------------------- refresh */

static int sample_refresh(struct virt_family *fam)
{
	struct sample_state *st = fam->priv;
	struct bpf_map *map = st->skel->maps.calls;
	int got = virt_map_dump(bpf_map__fd(map), st->bulk.keys, sizeof(__u32), st->bulk.vals,
				sizeof(__u64), bpf_map__max_entries(map));

	for (int i = 0; i < got; i++) {
		__u32 pid = ((const __u32 *)st->bulk.keys)[i];
		struct proc *p = virt_table_find(&st->procs, pid);
		char name[16];

		snprintf(name, sizeof(name), "%u", pid);
		if (!p && !(p = virt_table_add(&st->procs, pid, virt_indom(VIRT_I_SAMPLE_PROC),
					       PM_INDOM_NULL, name)))
			continue;
		virt_row_set(&p->k.row, (const uint64_t *)st->bulk.vals + i, 1, NULL);
		virt_row_expose(&p->k.row, false);
	}
	fam->dropped = virt_percpu_counters_total(bpf_map__fd(st->skel->maps.drops), &st->bulk,
						   SAMPLE_DROPS);
	return got < 0 ? got : 0;
}

static int sample_fetch(struct virt_family *fam, enum virt_metric_id m, unsigned int inst,
			pmAtomValue *atom)
{
	(void)fam, (void)m;
	return virt_row_fetch(VIRT_I_SAMPLE_PROC, 0, inst, atom);
}

const struct virt_module virt_module = {
	.abi = VIRT_MODULE_ABI,
	.name = "sample",
	.layout = VIRT_MODULE_LAYOUT,
	.options = sample_options,
	.noptions = NOPTS,
	.ready = sample_ready,
	.attach = sample_attach,
	.detach = sample_detach,
	.refresh = sample_refresh,
	.fetch = sample_fetch,
};
