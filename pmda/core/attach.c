/*
 * The attach engine: one attach of a family's skeleton as its attach ops
 * say (pmda/core/virt.h: struct virt_attach_ops), method after method,
 * each method's variant's programs loaded as the module's switches say.
 */
#include "agent.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool what_matches(const char *what, const char *name)
{
	size_t n = strlen(what);

	if (n && what[n - 1] == '*')
		return strncmp(name, what, n - 1) == 0;
	return strcmp(name, what) == 0;
}

/* Only the method's variant's programs load (virt_<family>_<method>_<what>),
 * and of those only the ones whose switches are on. */
static void autoload_variant(struct virt_family *fam, const struct virt_attach_ops *ops,
			     struct bpf_object *obj, const char *method)
{
	char prefix[64];
	struct bpf_program *prog;
	size_t plen = (size_t)snprintf(prefix, sizeof(prefix), "virt_%s_%s_", fam->name, method);

	bpf_object__for_each_program(prog, obj) {
		const char *name = bpf_program__name(prog);
		bool on = strncmp(name, prefix, plen) == 0;

		for (unsigned int i = 0; on && i < ops->nswitches; i++)
			if (what_matches(ops->switches[i].what, name + plen))
				on = *(const bool *)((const char *)fam->priv + ops->switches[i].on);
		bpf_program__set_autoload(prog, on);
	}
}

void virt_skel_destroy(struct virt_skel *skel)
{
	if (!skel)
		return;
	bpf_object__destroy_skeleton(skel->skeleton);	/* what __destroy() does */
	free(skel);
}

/* Programs that will load (a family's configure may have turned some of
 * the variant's off). */
static unsigned int autoloaded(struct bpf_object *obj)
{
	struct bpf_program *prog;
	unsigned int n = 0;

	bpf_object__for_each_program(prog, obj)
		n += bpf_program__autoload(prog);
	return n;
}

/* One method's whole attach; the object is destroyed on any failure
 * (*not_yet set when configure or attached found nothing to attach to). */
static struct virt_skel *attach_one(struct virt_family *fam, const struct virt_attach_ops *ops,
				    const char *method, char *why, size_t len, bool *not_yet)
{
	uint64_t t0 = virt_mono_ns(), t1, t2;
	struct virt_skel *skel = ops->open();
	unsigned int n;
	int err;

	if (!skel) {
		snprintf(why, len, "open: %s", strerror(errno));
		return NULL;
	}
	if (ops->configure && (err = ops->configure(fam, skel, method, why, len)) != 0)
		goto fail;
	autoload_variant(fam, ops, skel->obj, method);
	n = autoloaded(skel->obj);
	t1 = virt_mono_ns();
	if ((err = bpf_object__load_skeleton(skel->skeleton))) {
		snprintf(why, len, "load: %s", strerror(-err));
		goto fail;
	}
	t2 = virt_mono_ns();
	if ((err = bpf_object__attach_skeleton(skel->skeleton))) {
		snprintf(why, len, "attach: %s", strerror(-err));
		goto fail;
	}
	virt_log(LOG_INFO, "%s: %s: open %llu ms, load %llu ms (%u programs), attach %llu ms",
		    fam->name, method, (unsigned long long)(t1 - t0) / 1000000,
		    (unsigned long long)(t2 - t1) / 1000000, n,
		    (unsigned long long)(virt_mono_ns() - t2) / 1000000);
	fam->programs = n;		/* attached() may count its own links */
	if (ops->attached && (err = ops->attached(fam, skel, why, len)) != 0)
		goto fail;
	return skel;
fail:
	*not_yet |= err == VIRT_NOT_YET;
	virt_skel_destroy(skel);
	return NULL;
}

struct virt_skel *virt_attach_skel(struct virt_family *fam, const struct virt_attach_ops *ops,
				   int *rc)
{
	bool not_yet = false;
	char why[VIRT_REASON_MAX], all[VIRT_REASON_MAX] = "", later[VIRT_REASON_MAX] = "";
	uint64_t start = virt_mono_ns();
	size_t len = 0;

	for (unsigned int i = 0; i < ops->nmethods; i++) {
		const char *m = ops->methods[i];
		struct virt_skel *skel;

		if (fam->want_method[0] && strcmp(fam->want_method, m) != 0)
			continue;
		why[0] = '\0';
		if ((skel = attach_one(fam, ops, m, why, sizeof(why), &not_yet))) {
			snprintf(fam->method, sizeof(fam->method), "%s", m);
			fam->attach_ns = virt_mono_ns() - start;
			fam->obj = skel->obj;
			return skel;
		}
		virt_log(LOG_INFO, "%s: %s attach failed: %s", fam->name, m, why);
		if (not_yet && !later[0])	/* the reason alone: no method failed */
			snprintf(later, sizeof(later), "%s", why);
		if (len < sizeof(all))
			len += (size_t)snprintf(all + len, sizeof(all) - len, "%s%s: %s",
						len ? "; " : "", m, why);
	}
	if (!all[0]) {
		len = (size_t)snprintf(all, sizeof(all), "method %s not offered (offers:",
				       fam->want_method);
		for (unsigned int i = 0; i < ops->nmethods && len < sizeof(all); i++)
			len += (size_t)snprintf(all + len, sizeof(all) - len, " %s", ops->methods[i]);
		if (len < sizeof(all))
			snprintf(all + len, sizeof(all) - len, ")");
	}
	virt_set_reason(fam, "%s", not_yet ? later : all);
	*rc = not_yet ? VIRT_NOT_YET : -ENOENT;
	return NULL;
}
