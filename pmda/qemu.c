/*
 * qemu family (module "qemu", host side): QEMU's emulated virtio-net device,
 * per QEMU process -- the device side of a VM that runs without vhost --
 * and, where QEMU was built with the dtrace trace backend, every virtqueue
 * of every virtio device it emulates (bpf/qemu.bpf.c).
 *
 * Processes: every process whose executable's name matches "match" (default
 * qemu-system-*, qemu-kvm), found by a scan of /proc at each attach attempt
 * (every poll interval while unattached: ready() only stats the processes
 * already known) and at most every 2 s in refreshes. Probes are per binary
 * (an inode), so each binary is looked at once (ELF: symbols in .symtab or
 * in its debuginfo file under
 * /usr/lib/debug/.build-id, USDT notes in .note.stapsdt) and its probes
 * attached once, for all its processes, current and future:
 *
 *   USDT probes (provider "qemu")   -> virt.qemu.vq.*
 *   the virtio-net functions' symbols -> virt.qemu.net.*
 *   neither                         -> the process is listed with
 *                                      probes "none: <binary> has neither
 *                                      USDT probes nor symbols"
 *
 * The family is unavailable while no matching process runs, or while none
 * of their binaries can be probed (the reason says which and why); it
 * attaches by itself when one appears.
 *
 * Instances: "<vm>" per QEMU process, its VM name (vmid.h), else its pid;
 * histogram instances "<vm>::<lo>-<hi>"; queues "<vm>/dev<k>/<n>" with k
 * numbering the process's virtio devices in order of first sight and n the
 * queue index (from virtio_queue_notify), or "<vm>/dev<k>/vq_<address>"
 * while the index is unknown. Exited processes leave at the next scan, with
 * their map entries.
 */
#include "virt.h"
#include "rows.h"
#include "qemu.h"
#include "qemu.skel.h"
#include "vmid.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum qemu_opt { OPT_MATCH, OPT_MAX_PROCS, OPT_MAX_QUEUES, OPT_USDT, NOPTS };

static const struct virt_option qemu_options[NOPTS] = {
	[OPT_MATCH] = { "match", VIRT_OPT_STRING, 0, 0, "qemu-system-*,qemu-kvm",
		"comma-separated shell patterns for the executable's file name of QEMU processes" },
	[OPT_MAX_PROCS] = { "max_processes", VIRT_OPT_UINT, 4, 65536, "256",
		"QEMU processes counted; more are counted as dropped" },
	[OPT_MAX_QUEUES] = { "max_queues", VIRT_OPT_UINT, 4, 65536, "1024",
		"QEMU virtqueues counted (USDT); more are counted as dropped" },
	[OPT_USDT] = { "usdt", VIRT_OPT_BOOL, 0, 0, "true",
		"attach QEMU's USDT probes (virt.qemu.vq.*) where the binary has them" },
};

#define NW (sizeof(struct qemu_net_stats) / sizeof(__u64))
#define NWD(field) (offsetof(struct qemu_net_stats, field) / sizeof(__u64))
#define VW (sizeof(struct qemu_vq_stats) / sizeof(__u64))
#define VWD(field) (offsetof(struct qemu_vq_stats, field) / sizeof(__u64))

/* The net functions, each by its names best first: virtio_net_receive_rcu()
 * may be inlined into its only other caller (same arguments). */
enum { SYM_RX, SYM_FLUSH, SYM_SENDV, NSYMS };
static const char *const net_syms[NSYMS][2] = {
	[SYM_RX] = { "virtio_net_receive_rcu", "virtio_net_do_receive" },
	[SYM_FLUSH] = { "virtio_net_flush_tx", NULL },
	[SYM_SENDV] = { "qemu_sendv_packet_async", NULL },
};

/* What is attached to a binary, in order: uprobes at the net functions
 * (binaries with symbols), then QEMU's USDT probes (provider "qemu"). */
#define PROG(name) offsetof(struct qemu_bpf, progs.virt_qemu_uprobe_##name)
static const struct q_probe {
	size_t prog;			/* the skeleton's program: PROG() */
	const char *usdt;		/* its USDT probe, or NULL: a uprobe at sym */
	int sym;
	bool ret;			/* a uretprobe */
} probes[] = {
	{ PROG(rx), NULL, SYM_RX, false },
	{ PROG(rx_ret), NULL, SYM_RX, true },
	{ PROG(flush), NULL, SYM_FLUSH, false },
	{ PROG(flush_ret), NULL, SYM_FLUSH, true },
	{ PROG(sendv), NULL, SYM_SENDV, false },
	{ PROG(usdt_pop), "virtqueue_pop", 0, false },
	{ PROG(usdt_fill), "virtqueue_fill", 0, false },
	{ PROG(usdt_flush), "virtqueue_flush", 0, false },
	{ PROG(usdt_queue_notify), "virtio_queue_notify", 0, false },
	{ PROG(usdt_notify), "virtio_notify", 0, false },
	{ PROG(usdt_notify_irqfd), "virtio_notify_irqfd", 0, false },
};

/* ------------------------------------------------------------- state */

#define PROBES_MAX 200

/* A QEMU binary (by inode) and what could be attached to it. */
struct q_bin {
	dev_t dev;
	ino_t ino;
	char path[PATH_MAX];		/* as /proc/<pid>/exe named it */
	bool has_syms, has_usdt;
	uint64_t off[NSYMS];		/* file offsets of the net functions */
	const char *sym[NSYMS];		/* the names they were found by */
	char why[PROBES_MAX];		/* why not (has_syms and has_usdt false) */
	struct bpf_link *links[VIRT_ARRAY_SIZE(probes)];
	unsigned int nlinks;		/* attached: > 0 */
	char probes[PROBES_MAX];	/* "usdt+uprobe", "uprobe", "none: ..." */
};

/* A process's histograms: the first is its main row's. */
static const struct {
	enum virt_indom_id hindom;
	size_t word;
} hists[] = {
	{ VIRT_I_QEMU_RX_HIST, NWD(rx_hist) },
	{ VIRT_I_QEMU_TXP_HIST, NWD(txp_hist) },
	{ VIRT_I_QEMU_TXB_HIST, NWD(txb_hist) },
	{ VIRT_I_QEMU_TXS_HIST, NWD(txs_hist) },
};
#define NHISTS VIRT_ARRAY_SIZE(hists)

/* A QEMU process (keyed by pid): its net rows, one per histogram, and
 * counters. */
struct p_row {
	struct virt_keyed k;
	struct virt_row more[NHISTS - 1];	/* hists[1...] */
	uint32_t pid;
	uint64_t start;			/* the process's start time (vmid.h) */
	struct q_bin *bin;
	bool measured;			/* its binary has the net functions' symbols */
	struct virt_sums sums;		/* every word: earlier attaches' + last */
	uint64_t last[NW];		/* the procs map's value at the latest read */
	bool present;			/* in the latest /proc scan */
	bool counted;			/* in the procs map */
	uint64_t devs[64];		/* VirtIODevice * in order of first sight */
	unsigned int ndevs;
};

/* A virtqueue of a QEMU process (USDT), keyed by a hash of its key. */
struct v_row {
	struct virt_keyed k;
	struct qemu_vq_key key;
	uint64_t v[VW];
};

struct qemu_state {
	struct qemu_bpf *skel;
	struct q_bin **bins;
	size_t nbins, capbins;
	struct virt_table procs, vqs;	/* of p_row, of v_row */
	struct virt_bulk pbulk, vbulk, ibulk;
	time_t scanned;
	bool scan_ok;			/* some process's binary can be probed */
};

/* First attach: rows live until exit. */
static int qemu_init(struct virt_family *fam)
{
	struct qemu_state *st = fam->priv;

	st->procs = VIRT_TABLE_OF_SUMS(struct p_row, sums, NW);
	st->vqs = VIRT_TABLE_OF(struct v_row);
	if (virt_bulk_alloc(&st->pbulk, fam->opts[OPT_MAX_PROCS].u, sizeof(__u64),
			    sizeof(struct qemu_net_stats)) == 0 &&
	    virt_bulk_alloc(&st->vbulk, fam->opts[OPT_MAX_QUEUES].u, sizeof(struct qemu_vq_key),
			    sizeof(struct qemu_vq_stats)) == 0 &&
	    virt_bulk_alloc(&st->ibulk, fam->opts[OPT_MAX_QUEUES].u, sizeof(struct qemu_vq_key),
			    sizeof(struct qemu_vq_info)) == 0)
		return 0;
	virt_bulk_free(&st->pbulk);
	virt_bulk_free(&st->vbulk);
	virt_bulk_free(&st->ibulk);
	return -ENOMEM;
}

/* snprintf that may truncate (paths in reasons): say so to the compiler */
static void __attribute__((format(printf, 3, 4))) say(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, len, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------ ELF inspection */

/* File offset of virtual address v, from the PT_LOAD segments of e. */
static bool vaddr_to_offset(Elf *e, uint64_t v, uint64_t *off)
{
	size_t n;

	if (elf_getphdrnum(e, &n) != 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (v >= ph.p_vaddr && v < ph.p_vaddr + ph.p_memsz) {
			*off = v - ph.p_vaddr + ph.p_offset;
			return true;
		}
	}
	return false;
}

static Elf_Scn *section_named(Elf *e, const char *want)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(e, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(e, shstrndx, sh.sh_name)) &&
		    strcmp(name, want) == 0)
			return scn;
	}
	return NULL;
}

/* Address of the function called name in e's .symtab (0: not there). */
static uint64_t symtab_func(Elf *e, const char *name)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		if (!(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    s.st_shndx == SHN_UNDEF || !s.st_value)
				continue;
			if ((n = elf_strptr(e, sh.sh_link, s.st_name)) && strcmp(n, name) == 0)
				return s.st_value;
		}
	}
	return 0;
}

/* /usr/lib/debug/.build-id/xx/yyyy.debug of e, "" if e has no build id. */
static void debug_file(Elf *e, char *path, size_t len)
{
	Elf_Scn *scn = section_named(e, ".note.gnu.build-id");
	Elf_Data *d;
	GElf_Nhdr nh;
	size_t off = 0, noff, doff;

	path[0] = '\0';
	if (!scn || !(d = elf_getdata(scn, NULL)))
		return;
	while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
		const unsigned char *id = (const unsigned char *)d->d_buf + doff;
		size_t n;

		if (nh.n_type != NT_GNU_BUILD_ID || nh.n_descsz < 2)
			continue;
		n = (size_t)snprintf(path, len, "/usr/lib/debug/.build-id/%02x/", id[0]);
		for (size_t i = 1; i < nh.n_descsz && n + 3 < len; i++)
			n += (size_t)snprintf(path + n, len - n, "%02x", id[i]);
		snprintf(path + n, len - n, ".debug");
		return;
	}
}

static Elf *elf_open(const char *path, int *fd)
{
	Elf *e;

	if ((*fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	if (!(e = elf_begin(*fd, ELF_C_READ, NULL)) || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(*fd);
		return NULL;
	}
	return e;
}

/* Offsets of the net functions in b (in its own symbol table or in its
 * debuginfo file): all of them, or has_syms stays false. */
static void find_symbols(struct q_bin *b, Elf *e)
{
	char dpath[PATH_MAX];
	Elf *se = e, *de = NULL;
	int dfd = -1;
	size_t s = 0;
	uint64_t v;

	if (!section_named(e, ".symtab")) {	/* stripped */
		debug_file(e, dpath, sizeof(dpath));
		if (!dpath[0] || !(de = elf_open(dpath, &dfd)))
			return;
		se = de;
	}
	for (; s < NSYMS; s++) {
		const char *const *n = net_syms[s];

		if (!(v = symtab_func(se, n[0])) && n[1] && (v = symtab_func(se, n[1])))
			n++;
		if (!v || !vaddr_to_offset(e, v, &b->off[s]))
			break;
		b->sym[s] = n[0];
	}
	b->has_syms = s == NSYMS;
	if (!b->has_syms && !b->why[0])
		say(b->why, sizeof(b->why), "%s has symbols but not %s", b->path, net_syms[s][0]);
	if (de) {
		elf_end(de);
		close(dfd);
	}
}

/* What can be probed in the binary at path (a /proc/<pid>/exe). */
static void inspect(struct q_bin *b, const char *path)
{
	Elf *e;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE || !(e = elf_open(path, &fd))) {
		say(b->why, sizeof(b->why), "%s: not a readable ELF file", b->path);
		return;
	}
	b->has_usdt = section_named(e, ".note.stapsdt") != NULL;
	find_symbols(b, e);
	elf_end(e);
	close(fd);
	if (!b->has_syms && !b->has_usdt && !b->why[0])
		say(b->why, sizeof(b->why), "%s has neither USDT probes nor symbols", b->path);
}

/* ----------------------------------------------------------- attach */

static void bin_detach(struct q_bin *b)
{
	for (unsigned int i = 0; i < b->nlinks; i++)
		bpf_link__destroy(b->links[i]);
	b->nlinks = 0;
}

static struct bpf_link *probe_attach(const struct qemu_bpf *skel, const struct q_probe *p,
				     const struct q_bin *b, const char *exe)
{
	struct bpf_program *prog = *(struct bpf_program *const *)(const void *)
		((const char *)skel + p->prog);

	if (p->usdt)
		return bpf_program__attach_usdt(prog, -1, exe, "qemu", p->usdt, NULL);
	return bpf_program__attach_uprobe(prog, p->ret, -1, exe, (size_t)b->off[p->sym]);
}

/* Attach what b offers, through exe (a /proc/<pid>/exe of one of its
 * processes: the same inode even if the file was replaced since). */
static void bin_attach(struct virt_family *fam, struct q_bin *b, const char *exe)
{
	struct qemu_state *st = fam->priv;
	bool usdt = b->has_usdt && fam->opts[OPT_USDT].b;

	if (b->nlinks || (!b->has_syms && !usdt))
		return;
	for (size_t i = 0; i < VIRT_ARRAY_SIZE(probes); i++) {
		const struct q_probe *p = &probes[i];
		char why[PROBES_MAX];

		if (p->usdt ? !usdt : !b->has_syms)
			continue;
		if ((b->links[b->nlinks] = probe_attach(st->skel, p, b, exe))) {
			b->nlinks++;
			continue;
		}
		say(why, sizeof(why), "attach %s: %s", p->usdt ? p->usdt : b->sym[p->sym],
		    strerror(errno));
		bin_detach(b);
		say(b->probes, sizeof(b->probes), "failed: %s", why);
		pmNotifyErr(LOG_WARNING, "qemu: %s: %s", b->path, why);
		return;
	}
	snprintf(b->probes, sizeof(b->probes), "%s%s%s", usdt ? "usdt" : "",
		 usdt && b->has_syms ? "+" : "", b->has_syms ? "uprobe" : "");
	fam->programs += b->nlinks;
}

/* ------------------------------------------------------------- scan */

static bool matches(const char *patterns, const char *name)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", patterns);
	for (char *p = strtok_r(buf, ", ", &save); p; p = strtok_r(NULL, ", ", &save))
		if (fnmatch(p, name, 0) == 0)
			return true;
	return false;
}

static struct q_bin *bin_of(struct qemu_state *st, const struct stat *sb, const char *target,
			    const char *exe)
{
	struct q_bin *b;

	for (size_t i = 0; i < st->nbins; i++)
		if (st->bins[i]->dev == sb->st_dev && st->bins[i]->ino == sb->st_ino)
			return st->bins[i];
	if (VIRT_GROW(st->bins, st->capbins, st->nbins + 1) < 0 || !(b = calloc(1, sizeof(*b))))
		return NULL;
	b->dev = sb->st_dev;
	b->ino = sb->st_ino;
	snprintf(b->path, sizeof(b->path), "%s", target);
	inspect(b, exe);
	if (!b->has_syms && !b->has_usdt)
		say(b->probes, sizeof(b->probes), "none: %s", b->why);
	st->bins[st->nbins++] = b;
	return b;
}

static void proc_free(struct qemu_state *st, struct p_row *r);

/* The row of process pid, named by its VM (vmid.h); created when asked
 * (a new process, or a reused pid: the old row goes). A row of an exited
 * process that held the name goes too: a VM restarted under its name gets
 * the same instance name, with counters from zero. */
static struct p_row *proc_of(struct qemu_state *st, uint32_t pid, bool create)
{
	struct p_row *r = virt_table_find(&st->procs, pid), *old;
	const struct vmid *vm;
	char name[VMID_NAME_MAX + 1];

	if (!create)
		return r;
	if (!(vm = virt_vm_of(pid)))
		return NULL;		/* gone */
	if (r && r->start == vm->start)
		return r;
	if (r)
		proc_free(st, r);
	snprintf(name, sizeof(name), "%s", vm->name);
	if ((old = virt_table_find_name(&st->procs, name)))
		proc_free(st, old);
	if (!(r = virt_table_add(&st->procs, pid, virt_indom(VIRT_I_QEMU_PROC),
				 virt_indom(VIRT_I_QEMU_RX_HIST), name)))
		return NULL;
	r->pid = pid;
	r->start = vm->start;
	/* no _pNN metrics for these: no percentile windows (~3.3 KB each) */
	r->k.row.no_percentiles = true;
	for (size_t h = 1; h < NHISTS; h++) {
		virt_row_init(&r->more[h - 1], PM_INDOM_NULL, virt_indom(hists[h].hindom), name);
		r->more[h - 1].no_percentiles = true;
	}
	return r;
}

/* A process is gone: its instances, rows and map entries go too. */
static void proc_free(struct qemu_state *st, struct p_row *r)
{
	for (size_t q = 0; q < st->vqs.n;) {
		struct v_row *v = (struct v_row *)st->vqs.v[q];

		if (v->key.tgid != r->pid) {
			q++;
			continue;
		}
		if (st->skel) {
			virt_bpf_syscalls += 2;
			bpf_map_delete_elem(bpf_map__fd(st->skel->maps.vqs), &v->key);
			bpf_map_delete_elem(bpf_map__fd(st->skel->maps.vqinfo), &v->key);
		}
		virt_table_remove(&st->vqs, v);
	}
	if (st->skel && r->counted) {
		uint64_t k = r->pid;

		virt_bpf_syscalls++;
		bpf_map_delete_elem(bpf_map__fd(st->skel->maps.procs), &k);
	}
	for (size_t h = 1; h < NHISTS; h++)
		virt_row_release(&r->more[h - 1]);
	virt_table_remove(&st->procs, r);
}

/* The executable of pid: target = its path, exe = a path to open it by.
 * /proc/<pid>/exe (the very inode, even if the file was replaced) needs
 * ptrace access, which the agent lacks for other users' processes (QEMU
 * run by libvirt as libvirt-qemu: the agent keeps no CAP_SYS_PTRACE); then
 * an absolute argv[0] from the world-readable cmdline stands in. */
static bool exe_of(unsigned long pid, char *exe, size_t elen, char *target, size_t tlen)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(exe, elen, "/proc/%lu/exe", pid);
	if ((n = readlink(exe, target, tlen - 1)) > 0) {
		target[n] = '\0';
		if (n > 10 && strcmp(target + n - 10, " (deleted)") == 0)
			target[n - 10] = '\0';
		return true;
	}
	if (errno != EACCES && errno != EPERM)
		return false;		/* kernel threads, gone */
	snprintf(path, sizeof(path), "/proc/%lu/cmdline", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, target, tlen - 1);
	close(fd);
	if (n <= 0 || target[0] != '/')
		return false;
	target[n] = '\0';		/* argv[0] ends at its NUL */
	snprintf(exe, elen, "%s", target);
	return true;
}

/* Walk /proc for QEMU processes: rows for new ones, exited ones freed,
 * new binaries inspected (and attached when the family is active). */
static void scan(struct virt_family *fam)
{
	struct qemu_state *st = fam->priv;
	const char *match = fam->opts[OPT_MATCH].s ? fam->opts[OPT_MATCH].s : "";
	DIR *d = opendir("/proc");
	struct dirent *de;
	char why[PROBES_MAX] = "";

	st->scanned = time(NULL);
	if (!d)
		return;
	for (size_t i = 0; i < st->procs.n; i++)
		((struct p_row *)st->procs.v[i])->present = false;
	st->scan_ok = false;
	while ((de = readdir(d))) {
		char exe[PATH_MAX], target[PATH_MAX];
		const char *base;
		struct p_row *r;
		struct q_bin *b;
		struct stat sb;
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (*end || !pid)
			continue;
		if (!exe_of(pid, exe, sizeof(exe), target, sizeof(target)))
			continue;
		base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
		if (!matches(match, base) || stat(exe, &sb) < 0)
			continue;
		if (!(b = bin_of(st, &sb, target, exe)) || !(r = proc_of(st, (uint32_t)pid, true)))
			continue;
		r->present = true;
		r->bin = b;
		r->measured = b->has_syms;
		if (st->skel)
			bin_attach(fam, b, exe);
		if (b->has_syms || b->has_usdt)
			st->scan_ok = true;
		else if (!why[0])
			snprintf(why, sizeof(why), "%s", b->why);
	}
	closedir(d);
	for (size_t i = 0; i < st->procs.n;)
		if (!((struct p_row *)st->procs.v[i])->present)
			proc_free(st, (struct p_row *)st->procs.v[i]);
		else
			i++;
	if (!st->scan_ok)
		virt_set_reason(fam, "%s", why[0] ? why : "no QEMU process running");
}

/* While attached: is a process whose binary took probes still there? One
 * stat per known process (the /proc scan, and reading binaries, are the
 * attach's and the refreshes'). Not attached: an attach finds out. */
static bool qemu_ready(struct virt_family *fam)
{
	const struct qemu_state *st = fam->priv;
	const char *why = "no QEMU process running";

	if (!st || !st->skel)
		return true;
	for (size_t i = 0; i < st->procs.n; i++) {
		const struct p_row *r = (const struct p_row *)st->procs.v[i];

		if (!r->bin || !virt_pid_alive(r->pid))
			continue;
		if (r->bin->has_syms || r->bin->has_usdt)
			return true;
		why = r->bin->why;
	}
	virt_set_reason(fam, "%s", why);
	return false;
}

/* Map sizes; no QEMU process whose binary can take probes: not yet. */
static int qemu_configure(struct virt_family *fam, struct virt_skel *obj, const char *method,
			  char *why, size_t len)
{
	struct qemu_state *st = fam->priv;
	struct qemu_bpf *skel = (struct qemu_bpf *)obj;

	(void)method;
	bpf_map__set_max_entries(skel->maps.procs, (__u32)fam->opts[OPT_MAX_PROCS].u);
	bpf_map__set_max_entries(skel->maps.vqs, (__u32)fam->opts[OPT_MAX_QUEUES].u);
	bpf_map__set_max_entries(skel->maps.vqinfo, (__u32)fam->opts[OPT_MAX_QUEUES].u);
	scan(fam);
	if (st->scan_ok)
		return 0;
	snprintf(why, len, "%s", fam->reason);
	return VIRT_NOT_YET;
}

/* The skeleton attaches nothing (no target in the programs' sections): a
 * scan attaches every probe-able binary, and counts its links. */
static int qemu_attached(struct virt_family *fam, struct virt_skel *obj, char *why, size_t len)
{
	struct qemu_state *st = fam->priv;

	st->skel = (struct qemu_bpf *)obj;
	fam->programs = 0;
	scan(fam);
	if (fam->programs)
		return 0;
	snprintf(why, len, "nothing to attach");
	for (size_t i = 0; i < st->nbins; i++)
		if (strncmp(st->bins[i]->probes, "failed: ", 8) == 0) {
			say(why, len, "%s: %s", st->bins[i]->path, st->bins[i]->probes + 8);
			break;
		}
	st->skel = NULL;
	return VIRT_NOT_YET;		/* again at the next poll, not later */
}

static const char *const qemu_methods[] = { "uprobe" };

VIRT_ATTACH_OPS(qemu_ops, qemu_bpf, VIRT_METHODS(qemu_methods),
	.configure = qemu_configure, .attached = qemu_attached);

static void qemu_detach(struct virt_family *fam)
{
	struct qemu_state *st = fam->priv;

	if (!st)
		return;
	for (size_t i = 0; i < st->nbins; i++) {
		bin_detach(st->bins[i]);
		if (st->bins[i]->has_syms || st->bins[i]->has_usdt)	/* not "none: ..." */
			st->bins[i]->probes[0] = '\0';
	}
	/* what this object counted moves into the rows' bases */
	for (size_t i = 0; i < st->procs.n; i++) {
		struct p_row *r = (struct p_row *)st->procs.v[i];

		virt_sums_rebase(&r->sums);
		memset(r->last, 0, sizeof(r->last));
		r->counted = false;
	}
	while (st->vqs.n)
		virt_table_remove(&st->vqs, st->vqs.v[st->vqs.n - 1]);
	st->skel = NULL;
}

/* ----------------------------------------------------------- refresh */

static void read_procs(struct qemu_state *st)
{
	struct bpf_map *map = st->skel->maps.procs;
	int got = virt_map_dump_percpu(bpf_map__fd(map), &st->pbulk, sizeof(__u64), NW,
				       bpf_map__max_entries(map));

	for (int i = 0; i < got; i++) {
		uint64_t pid = ((uint64_t *)st->pbulk.keys)[i];
		struct p_row *r = proc_of(st, (uint32_t)pid, false);

		if (!r) {		/* exited before the scan saw it */
			virt_bpf_syscalls++;
			bpf_map_delete_elem(bpf_map__fd(map), &pid);
			continue;
		}
		memcpy(r->last, (const uint64_t *)st->pbulk.vals + (size_t)i * NW, sizeof(r->last));
		r->counted = true;
	}
	for (size_t i = 0; i < st->procs.n; i++) {
		struct p_row *r = (struct p_row *)st->procs.v[i];

		virt_sums_begin(&r->sums);
		virt_sums_add(&r->sums, r->last);
		for (size_t h = 0; h < NHISTS; h++) {
			struct virt_row *row = h ? &r->more[h - 1] : &r->k.row;

			virt_row_set(row, NULL, 0, &r->sums.sum[hists[h].word]);
			virt_row_expose(row, true);
		}
	}
}

/* The table's key for a queue: both halves folded (the table mixes the
 * bits; same_vq tells queues whose keys collide apart). */
static uint64_t vq_hash(const struct qemu_vq_key *k)
{
	return k->vq ^ ((uint64_t)k->tgid << 32 | k->tgid);
}

static bool same_vq(const void *entry, const void *key)
{
	const struct qemu_vq_key *a = &((const struct v_row *)entry)->key, *b = key;

	return a->tgid == b->tgid && a->vq == b->vq;
}

static struct v_row *vq_of(struct qemu_state *st, const struct qemu_vq_key *k)
{
	return virt_table_find_if(&st->vqs, vq_hash(k), same_vq, k);
}

/* Device number of vdev within its process (first sight order). */
static unsigned int dev_number(struct p_row *p, uint64_t vdev)
{
	for (unsigned int i = 0; i < p->ndevs; i++)
		if (p->devs[i] == vdev)
			return i;
	if (p->ndevs < VIRT_ARRAY_SIZE(p->devs))
		p->devs[p->ndevs++] = vdev;
	return p->ndevs - 1;
}

/* A queue seen for the first time: named from what vqinfo knows now. */
static struct v_row *vq_add(struct qemu_state *st, const struct qemu_vq_key *k,
			    const struct qemu_vq_info *info)
{
	struct p_row *p = proc_of(st, (uint32_t)k->tgid, false);
	char name[VIRT_NAME_MAX];
	struct v_row *v;
	int n;

	if (!p)
		return NULL;
	if (info && info->vdev)
		n = snprintf(name, sizeof(name), "%s/dev%u/", p->k.row.name, dev_number(p, info->vdev));
	else
		n = snprintf(name, sizeof(name), "%s/dev_unknown/", p->k.row.name);
	if (info && info->index >= 0)
		snprintf(name + n, sizeof(name) - (size_t)n, "%lld", (long long)info->index);
	else
		snprintf(name + n, sizeof(name) - (size_t)n, "vq_%llx", (unsigned long long)k->vq);
	if (!(v = virt_table_add(&st->vqs, vq_hash(k), virt_indom(VIRT_I_QEMU_VQ),
				 PM_INDOM_NULL, name)))
		return NULL;
	v->key = *k;
	return v;
}

static const struct qemu_vq_info *info_of(struct qemu_state *st, int ninfo,
					  const struct qemu_vq_key *k)
{
	const struct qemu_vq_key *keys = st->ibulk.keys;

	for (int i = 0; i < ninfo; i++)
		if (keys[i].tgid == k->tgid && keys[i].vq == k->vq)
			return (const struct qemu_vq_info *)st->ibulk.vals + i;
	return NULL;
}

static void read_vqs(struct qemu_state *st)
{
	struct bpf_map *map = st->skel->maps.vqs;
	int got = virt_map_dump_percpu(bpf_map__fd(map), &st->vbulk, sizeof(struct qemu_vq_key), VW,
				       bpf_map__max_entries(map));
	int ninfo = 0;
	bool fresh = false;

	for (int i = 0; i < got; i++) {
		const struct qemu_vq_key *k = (const struct qemu_vq_key *)st->vbulk.keys + i;
		struct v_row *v = vq_of(st, k);

		if (!v) {
			if (!fresh) {	/* names of new queues: one bulk read */
				ninfo = virt_map_dump(bpf_map__fd(st->skel->maps.vqinfo),
						      st->ibulk.keys, sizeof(struct qemu_vq_key),
						      st->ibulk.vals, sizeof(struct qemu_vq_info),
						      bpf_map__max_entries(st->skel->maps.vqinfo));
				fresh = true;
			}
			if (!(v = vq_add(st, k, info_of(st, ninfo, k))))
				continue;
		}
		memcpy(v->v, (const uint64_t *)st->vbulk.vals + (size_t)i * VW, sizeof(uint64_t) * VW);
		virt_row_expose(&v->k.row, true);
	}
}

static int qemu_refresh(struct virt_family *fam)
{
	struct qemu_state *st = fam->priv;

	if (time(NULL) - st->scanned >= 2)
		scan(fam);
	read_procs(st);
	read_vqs(st);
	return 0;
}

/* -------------------------------------------------------------- fetch */

#define NET(id, field) [VIRT_M_QEMU_##id] = \
	VIRT_ANSWER_SUM_WHEN(QEMU_PROC, struct p_row, k.row, sums, NWD(field), measured)
#define VQ(id, field) [VIRT_M_QEMU_VQ_##id] = \
	VIRT_ANSWER_WORD(QEMU_VQ, struct v_row, k.row, v[VWD(field)])

/* the net counters have no value (not measured, not zero) for processes
 * whose binary has no symbols */
static const struct virt_answer qemu_answers[VIRT_NMETRICS] = {
	[VIRT_M_QEMU_RX_BYTES] = VIRT_ANSWER_BUCKET(QEMU_RX_HIST),
	[VIRT_M_QEMU_TX_PACKETS] = VIRT_ANSWER_BUCKET(QEMU_TXP_HIST),
	[VIRT_M_QEMU_TX_BYTES] = VIRT_ANSWER_BUCKET(QEMU_TXB_HIST),
	[VIRT_M_QEMU_TX_SIZES] = VIRT_ANSWER_BUCKET(QEMU_TXS_HIST),
	NET(RX_DELIVERED, rx_packets),
	NET(RX_DELIVERED_BYTES, rx_bytes),
	NET(RX_DEFERRED, rx_dropped),
	NET(TX_FLUSHES, tx_flushes),
	NET(TX_SENT, tx_packets),
	NET(TX_SENT_BYTES, tx_bytes),
	NET(TX_BUSY, tx_busy),
	VQ(POPS, pops),
	VQ(FILLS, fills),
	VQ(FILL_BYTES, fill_bytes),
	VQ(FLUSHES, flushes),
	VQ(KICKS, kicks),
	VQ(NOTIFIES, notifies),
	[VIRT_M_QEMU_PROCESS_NAME] = VIRT_ANSWER_NAME(QEMU_PROC),
	[VIRT_M_QEMU_PROCESS_BUCKET_PREFIX] = VIRT_ANSWER_BUCKET_PREFIX(QEMU_PROC),
	/* the strings of a process's binary */
	[VIRT_M_QEMU_PROCESS_PROBES] = VIRT_ANSWER_STRING_VIA(QEMU_PROC, struct p_row, k.row, bin,
							       struct q_bin, probes, "none"),
	[VIRT_M_QEMU_PROCESS_BINARY] = VIRT_ANSWER_STRING_VIA(QEMU_PROC, struct p_row, k.row, bin,
							       struct q_bin, path, ""),
};

/* "<vm>/<device>/<queue>": the device and queue labels of a virtqueue */
/* A process's labels: its VM's; a virtqueue's: its VM's, device, queue. */
static int qemu_labels(struct virt_family *fam, enum virt_indom_id indom, unsigned int inst,
		       pmLabelSet **lp)
{
	struct qemu_state *st = fam->priv;
	struct virt_row *row;
	const char *d;
	uint32_t pid;
	int sts;

	if (!st || !(row = virt_row_of(virt_indom(indom), inst)))
		return 0;
	if (indom == VIRT_I_QEMU_PROC)
		pid = VIRT_ENTRY_OF(row, struct p_row)->pid;
	else if (indom == VIRT_I_QEMU_VQ)
		pid = (uint32_t)VIRT_ENTRY_OF(row, struct v_row)->key.tgid;
	else
		return 0;
	if ((sts = virt_label_vm(lp, virt_vm_of(pid))) < 0 || indom == VIRT_I_QEMU_PROC)
		return sts;
	return (d = strchr(row->name, '/')) ? virt_label_queue(lp, d + 1, NULL) : 0;
}

VIRT_MODULE("qemu",
	.options = qemu_options, .noptions = NOPTS,
	.ready = qemu_ready, .priv_size = sizeof(struct qemu_state), .init = qemu_init,
	.attach = &qemu_ops, .ndrops = QEMU_DROPS, .detach = qemu_detach,
	.refresh = qemu_refresh, .answers = qemu_answers, .labels = qemu_labels);
