/*
 * virtio family (module "virtio", guest side): per virtqueue scatterlists
 * and bytes handed to the device (bcc virtiostat's numbers), adds,
 * completions, buffers in flight, kicks, interrupts, ring-full failures and
 * add->completion latency (bpf/virtio.bpf.c).
 *
 * Attach order: fentry (fexit programs), kprobe. The family needs
 * virtio_ring (a module on Debian kernels, built in elsewhere) and attaches
 * by itself when it is loaded after the agent started.
 *
 * Queue identity is the kernel's struct virtqueue pointer; the BPF side
 * gives each queue a slot of its "queues" array on first sight (and reads
 * its names), and the agent reads that array in place (mmap): no bpf()
 * call per refresh for the counters. A dead queue's slot is folded into
 * its row and given back here. Instances are "<virtio device>/<vq name>"
 * (e.g. virtio2/req.0). Rows are kept by name: a queue deleted and
 * re-created under the same name (driver unbound and bound again) continues
 * the same counters. Instance rule: a queue is in the instance domain from
 * the first refresh after it was first used until the refresh after
 * vring_del_virtqueue() ran for it (device removed, driver unbound, module
 * unloaded), or until the family detaches (virtio_ring unloaded).
 */
#include "virt.h"
#include "rows.h"
#include "slots.h"
#include "virtio.h"
#include "virtio.skel.h"

#include <bpf/bpf.h>
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>

enum virtio_opt { OPT_LATENCY, OPT_MAX_QUEUES, OPT_MAX_INFLIGHT, NOPTS };

static const struct virt_option virtio_options[NOPTS] = {
	[OPT_LATENCY] = { "latency", VIRT_OPT_BOOL, 0, 0, "true",
		"add->completion latency histograms and inflight; false = counts only (cheaper)" },
	[OPT_MAX_QUEUES] = { "max_queues", VIRT_OPT_UINT, 2, 65536, "1024",
		"slots for virtqueues (rounded up to a power of two); a queue finding none free "
		"is counted as dropped" },
	[OPT_MAX_INFLIGHT] = { "max_inflight", VIRT_OPT_UINT, 64, 1u << 22, "16384",
		"descriptor heads timed at once (all queues), in blocks of 64 a queue takes as "
		"its ring uses them; an add finding no block is counted as dropped" },
};

#define SW (sizeof(struct virtio_stats) / sizeof(__u64))
#define W(field) (offsetof(struct virtio_stats, field) / sizeof(__u64))
#define HIST0 W(hist)

_Static_assert(VIRTIO_SLOT_FREED == VIRT_SLOT_FREED, "the agent frees slots as the BPF side reads them");

/* A queue's slot: its stats are read, every word a counter but dead. */
static const struct virt_slot_layout virtio_slot_layout = {
	.size = sizeof(struct virtio_slot),
	.owner = offsetof(struct virtio_slot, vq),
	.filled = offsetof(struct virtio_slot, ready),	/* its names are in "info" */
	.words = offsetof(struct virtio_slot, s),
	.nwords = SW,
	.first = 0,
	.dead = W(dead),
};

/* A queue by name; sums (SW words): dead queues', earlier attaches' and
 * the live queues'. */
struct vq_row {
	struct virt_keyed k;		/* by name; k.row: pmdaCache private */
	struct virt_sums sums;
	uint64_t inflight;
	bool timed;			/* latency = true: inflight and unseen counted */
	char driver[VIRTIO_NAME_LEN];
	char device[VIRTIO_NAME_LEN];
	char vdev[VIRTIO_NAME_LEN];	/* virtioN, for the /sys lookups */
	time_t device_try;
};

struct virtio_state {
	struct virtio_bpf *skel;
	struct virt_table rows;		/* of struct vq_row */
	struct virt_slots slots;	/* the queues map, mmap'ed: a record per slot */
	bool timed;			/* latency = true: the head hooks load */
};

/* ------------------------------------------------------------- ready */

/* virtio_ring built in: /sys/module/virtio_ring exists only for a module
 * (it has no parameters), so ask modules.builtin once. */
static bool virtio_ring_builtin(void)
{
	static int cached = -1;
	struct utsname u;
	char path[300], line[256];
	FILE *f;

	if (cached >= 0)
		return cached;
	cached = 0;
	if (uname(&u) == 0) {
		snprintf(path, sizeof(path), "/lib/modules/%s/modules.builtin", u.release);
		if ((f = fopen(path, "r"))) {
			while (!cached && fgets(line, sizeof(line), f))
				cached = strstr(line, "/virtio_ring.ko") != NULL;
			fclose(f);
			return cached;
		}
	}
	/* no modules.builtin (custom kernels): a virtio bus that is not a
	 * module means the virtio core, ring included, is built in */
	{
		struct stat st;

		cached = stat("/sys/bus/virtio", &st) == 0 && !virt_kmod_present("virtio");
	}
	return cached;
}

static bool virtio_ready(struct virt_family *fam)
{
	if (virt_kmod_present("virtio_ring") || virtio_ring_builtin())
		return true;
	virt_set_reason(fam, "kernel module virtio_ring not loaded");
	return false;
}

/* ------------------------------------------------------------ attach */

/* Counts only (latency = false): the descriptor-head hooks stay out. */
static const struct virt_prog_switch virtio_switches[] = {
	VIRT_PROG_SWITCH("map_sg", struct virtio_state, timed),
	VIRT_PROG_SWITCH("detach_buf_*", struct virtio_state, timed),
};

/* Slots for max_queues, a power of two; heads timed in blocks. */
static int virtio_configure(struct virt_family *fam, struct virt_skel *obj, const char *method,
			    char *why, size_t len)
{
	struct virtio_bpf *skel = (struct virtio_bpf *)obj;
	bool latency = fam->opts[OPT_LATENCY].b;
	unsigned int bits = virt_slots_bits(fam->opts[OPT_MAX_QUEUES].u), nblocks;

	(void)method, (void)why, (void)len;
	skel->rodata->latency = latency;
	((struct virtio_state *)fam->priv)->timed = latency;
	skel->rodata->slot_bits = bits;
	bpf_map__set_max_entries(skel->maps.queues, 1U << bits);
	bpf_map__set_max_entries(skel->maps.info, 1U << bits);
	nblocks = latency ? fam->opts[OPT_MAX_INFLIGHT].u / VIRTIO_BLOCK : 1;
	if (nblocks > UINT16_MAX)	/* a slot keeps block numbers in 16 bits */
		nblocks = UINT16_MAX;
	skel->rodata->nblocks = nblocks;
	bpf_map__set_max_entries(skel->maps.blocks, nblocks);
	bpf_map__set_max_entries(skel->maps.timed, nblocks * VIRTIO_BLOCK);
	return 0;
}

/* The queues array mapped in, a record per slot. */
static int virtio_attached(struct virt_family *fam, struct virt_skel *obj, char *why, size_t len)
{
	struct virtio_state *st = fam->priv;

	st->skel = (struct virtio_bpf *)obj;
	return virt_slots_map(&st->slots, &virtio_slot_layout, st->skel->maps.queues, why, len);
}

static const char *const virtio_methods[] = { "fentry", "kprobe" };

VIRT_ATTACH_OPS(virtio_ops, virtio_bpf, VIRT_METHODS(virtio_methods),
	VIRT_SWITCHES(virtio_switches), .configure = virtio_configure, .attached = virtio_attached);

/* First attach: rows live until exit. */
static int virtio_init(struct virt_family *fam)
{
	struct virtio_state *st = fam->priv;

	st->rows = VIRT_TABLE_OF_SUMS(struct vq_row, sums, SW);
	return 0;
}

/* ------------------------------------------------------------- rows */

static struct vq_row *virtio_row_at(struct virtio_state *st, size_t i)
{
	return (struct vq_row *)st->rows.v[i];
}

/* The row's values without its live queues': base alone. */
static void virtio_row_to_base(struct vq_row *r)
{
	virt_sums_begin(&r->sums);
	r->inflight = 0;
}

/* The BPF object goes: what it counted moves into the bases, every queue
 * leaves the instance domain (it comes back, same counters, when used
 * after the next attach). */
static void virtio_detach(struct virt_family *fam)
{
	struct virtio_state *st = fam->priv;

	if (!st)
		return;
	virt_slots_unmap(&st->slots);
	st->skel = NULL;
	for (size_t i = 0; i < st->rows.n; i++) {
		virtio_row_to_base(virtio_row_at(st, i));
		virt_row_retire(&virtio_row_at(st, i)->k.row);
	}
}

/* block or net device of virtioN, from /sys (empty if none). */
static void virtio_find_device(struct vq_row *r)
{
	static const char *const kinds[] = { "block", "net" };
	time_t now = time(NULL);

	if (r->device[0] || !r->vdev[0] || now - r->device_try < 5)
		return;
	r->device_try = now;
	for (size_t k = 0; k < VIRT_ARRAY_SIZE(kinds) && !r->device[0]; k++) {
		char path[256];
		struct dirent *d;
		DIR *dir;

		snprintf(path, sizeof(path), "/sys/bus/virtio/devices/%s/%s", r->vdev, kinds[k]);
		if (!(dir = opendir(path)))
			continue;
		while ((d = readdir(dir)))
			if (d->d_name[0] != '.') {
				virt_sanitize(r->device, sizeof(r->device), d->d_name);
				break;
			}
		closedir(dir);
	}
}

/* First sight of a queue (slot k, its owner rec->owner): its names from
 * the info map (one lookup per new queue, not per refresh). */
static bool virtio_claim(void *ctx, struct virt_slots *t, size_t k, struct virt_slot_rec *rec)
{
	struct virtio_state *st = ctx;
	struct virtio_vq_info vi;
	char dev[VIRTIO_NAME_LEN], q[VIRTIO_NAME_LEN], name[VIRT_NAME_MAX];
	uint64_t vq = rec->owner;
	struct vq_row *r;

	(void)t, (void)k;
	memset(&vi, 0, sizeof(vi));
	virt_bpf_syscalls++;
	if (bpf_map_lookup_elem(bpf_map__fd(st->skel->maps.info), &vq, &vi) < 0)
		snprintf(vi.name, sizeof(vi.name), "%llx", (unsigned long long)vq);
	vi.dev[sizeof(vi.dev) - 1] = vi.name[sizeof(vi.name) - 1] = '\0';
	vi.driver[sizeof(vi.driver) - 1] = '\0';
	virt_sanitize(dev, sizeof(dev), vi.dev[0] ? vi.dev : "unknown");
	virt_sanitize(q, sizeof(q), vi.name[0] ? vi.name : "unknown");
	snprintf(name, sizeof(name), "%s/%s", dev, q);
	if (!(r = virt_table_get_name(&st->rows, virt_indom(VIRT_I_VIRTIO_QUEUE),
				      virt_indom(VIRT_I_VIRTIO_QUEUE_HIST), name)))
		return false;
	if (vi.driver[0])
		virt_sanitize(r->driver, sizeof(r->driver), vi.driver);
	snprintf(r->vdev, sizeof(r->vdev), "%s", dev);
	rec->sums = &r->sums;
	rec->entry = r;
	return true;
}

static bool virtio_vq_has_slot(const struct virtio_state *st, uint64_t vq)
{
	for (size_t k = 0; k < st->slots.n; k++)
		if (st->slots.rec[k].owner == vq)
			return true;
	return false;
}

/* A dead queue: its counts into its row, its slot back. Its names go too,
 * unless the address has a slot again (a new queue where the dead one
 * was). */
static void virtio_bury(struct virtio_state *st, size_t k)
{
	uint64_t vq = st->slots.rec[k].owner;

	virt_slots_bury(&st->slots, k, true);
	if (virtio_vq_has_slot(st, vq))
		return;
	virt_bpf_syscalls++;
	bpf_map_delete_elem(bpf_map__fd(st->skel->maps.info), &vq);
}

/* Adds since attach not yet completed, per queue (never negative), into
 * its row's inflight. */
static void virtio_add_inflight(struct virtio_state *st)
{
	for (size_t k = 0; k < st->slots.n; k++) {
		const struct virt_slot_rec *rec = &st->slots.rec[k];
		uint64_t open;

		if (!rec->owner)
			continue;
		open = rec->last[W(adds)] - rec->last[W(untracked)];
		if (open > rec->last[W(settled)])
			((struct vq_row *)rec->entry)->inflight += open - rec->last[W(settled)];
	}
}

/* ----------------------------------------------------------- refresh */


static int virtio_refresh(struct virt_family *fam)
{
	struct virtio_state *st = fam->priv;

	virt_slots_read(&st->slots, virtio_claim, st);
	/* queues deleted since the last refresh leave (after their last counts
	 * went into the row); all slots are read first, so a new queue at a
	 * dead one's address keeps the names */
	for (size_t k = 0; k < st->slots.n; k++)
		if (st->slots.rec[k].owner && st->slots.rec[k].dead)
			virtio_bury(st, k);
	for (size_t i = 0; i < st->rows.n; i++)
		virtio_row_to_base(virtio_row_at(st, i));
	virt_slots_sum(&st->slots);
	virtio_add_inflight(st);
	for (size_t i = 0; i < st->rows.n; i++) {
		struct vq_row *r = virtio_row_at(st, i);

		r->timed = fam->opts[OPT_LATENCY].b;
		virt_row_set(&r->k.row, NULL, 0, &r->sums.sum[HIST0]);
		if (r->sums.live) {
			virtio_find_device(r);
			virt_row_expose(&r->k.row, true);
		} else {
			virt_row_retire(&r->k.row);
		}
	}
	return 0;
}

/* -------------------------------------------------------------- fetch */

#define WORD(id, field) \
	[VIRT_M_VIRTIO_##id] = VIRT_ANSWER_SUM(VIRTIO_QUEUE, struct vq_row, k.row, sums, W(field))

static const struct virt_answer virtio_answers[VIRT_NMETRICS] = {
	WORD(SGS_OUT, sgs_out),
	WORD(SGS_IN, sgs_in),
	WORD(BYTES_OUT, bytes_out),
	WORD(BYTES_IN, bytes_in),
	WORD(ADDS, adds),
	WORD(COMPLETIONS, completions),
	WORD(KICKS, kicks),
	WORD(INTERRUPTS, interrupts),
	WORD(RING_FULL, ring_full),
	WORD(TRUNCATED, truncated),
	[VIRT_M_VIRTIO_LATENCY] = VIRT_ANSWER_BUCKET(VIRTIO_QUEUE_HIST),
	VIRT_ANSWER_PERCENTILES(VIRT_M_VIRTIO_LAT, VIRTIO_QUEUE, struct vq_row, k.row, k.row),
	[VIRT_M_VIRTIO_INFLIGHT] = VIRT_ANSWER_WORD_WHEN(VIRTIO_QUEUE, struct vq_row, k.row,
							 inflight, timed),
	[VIRT_M_VIRTIO_UNSEEN] = VIRT_ANSWER_SUM_WHEN(VIRTIO_QUEUE, struct vq_row, k.row,
						      sums, W(unseen), timed),
	[VIRT_M_VIRTIO_QUEUE_NAME] = VIRT_ANSWER_NAME(VIRTIO_QUEUE),
	[VIRT_M_VIRTIO_QUEUE_DRIVER] = VIRT_ANSWER_STRING(VIRTIO_QUEUE, struct vq_row, k.row,
							  driver, ""),
	[VIRT_M_VIRTIO_QUEUE_DEVICE] = VIRT_ANSWER_STRING(VIRTIO_QUEUE, struct vq_row, k.row,
							  device, ""),
};

/* A queue's labels: device (virtioN), driver (virtio_blk, virtio_net, ...:
 * the driver bound when the queue was first seen) and queue, all known from
 * first sight, so a queue's labels never change. The block or net device,
 * found in /sys later, is the metric virt.virtio.queue.device, not a label. */
static int virtio_labels(struct virt_family *fam, enum virt_indom_id indom, unsigned int inst,
			 pmLabelSet **lp)
{
	struct virt_row *row;

	if (!fam->priv || indom != VIRT_I_VIRTIO_QUEUE || !(row = virt_row_of(virt_indom(indom), inst)))
		return 0;
	return virt_label_queue(lp, row->name, VIRT_ENTRY_OF(row, struct vq_row)->driver);
}

VIRT_MODULE("virtio",
	.options = virtio_options, .noptions = NOPTS,
	.ready = virtio_ready, .priv_size = sizeof(struct virtio_state), .init = virtio_init,
	.attach = &virtio_ops, .ndrops = VIRTIO_DROPS, .detach = virtio_detach,
	.refresh = virtio_refresh, .answers = virtio_answers, .labels = virtio_labels);
