/*
 * Attach targets of BTF-typed programs (fentry, fexit, tp_btf) found in one
 * hash index instead of libbpf's scans.
 *
 * libbpf 1.1 resolves each program's target at load with a linear pass over
 * vmlinux BTF (find_kernel_btf_id() -> btf__find_by_name_kind(), ~130 000
 * types); a target in a module (kvm, virtio_ring, vhost on Debian) costs a
 * whole failed vmlinux pass first. With a few dozen programs that was ~44%
 * of the agent's start-up in the test VM (perf). Here the handlers of those
 * section kinds are ours (libbpf_register_prog_handler(): custom handlers
 * are matched before libbpf's own): they look the target up in an index of
 * the FUNC and btf_trace_* TYPEDEF names of vmlinux and of every module,
 * built at the first lookup and released after each attach pass, so no
 * module BTF is held between passes. The order is libbpf's: vmlinux, then
 * modules by BTF object id, lowest type id first.
 */
#include "agent.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TRACE_PREFIX "btf_trace_"

struct target {
	const char *name;	/* in its BTF's string section */
	uint32_t id;
	uint16_t obj;		/* 0: vmlinux; else modules[obj - 1] */
	uint16_t kind;
};

struct module_btf {
	struct btf *btf;
	int fd;
};

static struct {
	bool built;
	int err;		/* why vmlinux BTF could not be read */
	int mod_err;		/* why module BTFs could not (all) be read */
	struct btf *vmlinux;
	struct module_btf *mods;
	size_t nmods;
	struct target *tab;	/* open addressing, cap a power of two */
	size_t cap, n;
} ix;

static size_t name_hash(const char *s, unsigned int kind)
{
	uint64_t h = 0xcbf29ce484222325ull ^ kind;	/* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return (size_t)h;
}

static struct target *slot_of(struct target *tab, size_t cap, const char *name,
			      unsigned int kind)
{
	size_t i = name_hash(name, kind) & (cap - 1);

	while (tab[i].name && (tab[i].kind != kind || strcmp(tab[i].name, name) != 0))
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static int grow(void)
{
	size_t cap = ix.cap ? ix.cap * 2 : 1 << 16;
	struct target *tab = calloc(cap, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < ix.cap; i++)
		if (ix.tab[i].name)
			*slot_of(tab, cap, ix.tab[i].name, ix.tab[i].kind) = ix.tab[i];
	free(ix.tab);
	ix.tab = tab;
	ix.cap = cap;
	return 0;
}

/* The first type of a name wins, as in libbpf's scan. */
static int add_types(const struct btf *btf, uint32_t first, uint16_t obj)
{
	uint32_t n = btf__type_cnt(btf);

	for (uint32_t id = first; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		unsigned int kind = btf_kind(t);
		const char *name;
		struct target *s;

		if (kind != BTF_KIND_FUNC && kind != BTF_KIND_TYPEDEF)
			continue;
		name = btf__name_by_offset(btf, t->name_off);
		if (!name || (kind == BTF_KIND_TYPEDEF &&
			      strncmp(name, TRACE_PREFIX, sizeof(TRACE_PREFIX) - 1) != 0))
			continue;
		if ((ix.n + 1) * 2 > ix.cap && grow() < 0)
			return -ENOMEM;
		s = slot_of(ix.tab, ix.cap, name, kind);
		if (!s->name) {
			*s = (struct target){ name, id, obj, (uint16_t)kind };
			ix.n++;
		}
	}
	return 0;
}

/* One kernel module's BTF (what libbpf's load_module_btfs() keeps) into
 * the index; a BTF object that is not a module's, or is gone meanwhile, is
 * skipped. 0 or -errno. */
static int add_module(uint32_t id)
{
	struct bpf_btf_info info;
	struct module_btf *m;
	uint32_t len = sizeof(info);
	char name[64] = "";
	int fd = bpf_btf_get_fd_by_id(id);

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	memset(&info, 0, sizeof(info));
	info.name = (uint64_t)(uintptr_t)name;
	info.name_len = sizeof(name);
	if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0 || !info.kernel_btf ||
	    strcmp(name, "vmlinux") == 0) {
		close(fd);
		return 0;
	}
	m = realloc(ix.mods, (ix.nmods + 1) * sizeof(*m));
	if (!m) {
		close(fd);
		return -ENOMEM;
	}
	ix.mods = m;
	m = &ix.mods[ix.nmods];
	m->btf = btf__load_from_kernel_by_id_split(id, ix.vmlinux);
	if (!m->btf) {
		close(fd);
		return errno == ENOENT ? 0 : -errno;
	}
	m->fd = fd;
	ix.nmods++;
	return add_types(m->btf, btf__type_cnt(ix.vmlinux), (uint16_t)ix.nmods);
}

static int index_all(void)
{
	uint32_t id = 0;
	int err;

	if (!(ix.vmlinux = btf__load_vmlinux_btf()))
		return -errno;
	if ((err = add_types(ix.vmlinux, 1, 0)) < 0)
		return err;
	while (bpf_btf_get_next_id(id, &id) == 0)
		if ((err = add_module(id)) < 0) {
			ix.mod_err = err;
			return 0;
		}
	if (errno != ENOENT)
		ix.mod_err = -errno;
	return 0;
}

static int build(void)
{
	uint64_t t0 = virt_mono_ns();
	int err;

	ix.built = true;
	err = index_all();
	if (err)
		virt_log(LOG_WARNING, "attach targets: no kernel BTF index: %s", strerror(-err));
	else
		virt_log(LOG_INFO, "attach targets: %zu names of vmlinux and %zu modules indexed in %llu ms%s%s",
			    ix.n, ix.nmods, (unsigned long long)(virt_mono_ns() - t0) / 1000000,
			    ix.mod_err ? "; module BTF: " : "", ix.mod_err ? strerror(-ix.mod_err) : "");
	return err;
}

/* glibc keeps freed heap pages (the BTF and the table are megabytes, and
 * other allocations sit above them): hand them back, or the agent's RSS
 * stays ~9 MiB higher after the first attach pass. */
void virt_btf_targets_release(void)
{
	bool built = ix.built;

	for (size_t i = 0; i < ix.nmods; i++) {
		btf__free(ix.mods[i].btf);
		close(ix.mods[i].fd);
	}
	free(ix.mods);
	btf__free(ix.vmlinux);
	free(ix.tab);
	memset(&ix, 0, sizeof(ix));
	if (built)
		malloc_trim(0);
}

/* The kind and name libbpf's find_attach_btf_id() looks for. */
static int find_target(const char *func, enum bpf_attach_type type, int *obj_fd, uint32_t *id)
{
	char name[256];
	unsigned int kind = BTF_KIND_FUNC;
	const struct target *t;

	if (!ix.built)
		ix.err = build();
	if (ix.err)
		return ix.err;
	if (type == BPF_TRACE_RAW_TP) {
		kind = BTF_KIND_TYPEDEF;
		snprintf(name, sizeof(name), TRACE_PREFIX "%s", func);
		func = name;
	}
	t = slot_of(ix.tab, ix.cap, func, kind);
	if (!t->name)	/* like libbpf: a module error matters only on a miss */
		return ix.mod_err ? ix.mod_err : -ESRCH;
	*obj_fd = t->obj ? ix.mods[t->obj - 1].fd : 0;
	*id = t->id;
	return 0;
}

static int prepare_load(struct bpf_program *prog, struct bpf_prog_load_opts *opts,
			long cookie)
{
	const char *sec = bpf_program__section_name(prog);
	const char *func = strchr(sec, '/');
	int err, fd = 0;
	uint32_t id = 0;

	(void)cookie;
	if (!func) {
		virt_log(LOG_WARNING, "program %s: section %s names no attach target",
			    bpf_program__name(prog), sec);
		return -EINVAL;
	}
	err = find_target(func + 1, opts->expected_attach_type, &fd, &id);
	if (err) {
		virt_log(LOG_INFO, "program %s: no kernel BTF for %s: %s",
			    bpf_program__name(prog), func + 1, strerror(-err));
		return err;
	}
	opts->attach_btf_obj_fd = (uint32_t)fd;
	opts->attach_btf_id = id;
	return 0;
}

static int attach(const struct bpf_program *prog, long cookie, struct bpf_link **link)
{
	(void)cookie;
	*link = bpf_program__attach_trace(prog);
	return *link ? 0 : -errno;
}

int virt_btf_targets_register(void)
{
	static const struct {
		const char *sec;
		enum bpf_attach_type type;
	} secs[] = {
		{ "fentry+", BPF_TRACE_FENTRY },
		{ "fexit+", BPF_TRACE_FEXIT },
		{ "tp_btf+", BPF_TRACE_RAW_TP },
	};
	const struct libbpf_prog_handler_opts o = {
		.sz = sizeof(o),
		.prog_prepare_load_fn = prepare_load,
		.prog_attach_fn = attach,
	};

	for (size_t i = 0; i < VIRT_ARRAY_SIZE(secs); i++) {
		int err = libbpf_register_prog_handler(secs[i].sec, BPF_PROG_TYPE_TRACING,
						       secs[i].type, &o);

		if (err < 0)
			return err;
	}
	return 0;
}
