/*
 * Instance labels (pmdaLabel(3)): pmdaLabel asks virt_label_callback for
 * each instance of a metric's instance domain; the family that owns the
 * domain answers through its module's labels().
 */
#include "agent.h"
#include "rows.h"
#include "vmid.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The JSON string text of the character at s into out[8]: '"' and '\\'
 * escaped, control characters as \u00XX, a byte that is not valid UTF-8
 * as U+FFFD; *used the bytes of s it stands for. */
static size_t json_char(const char *s, char *out, size_t *used)
{
	unsigned char c = (unsigned char)*s;
	size_t n = vmid_utf8_len(s, strnlen(s, 4));

	*used = n ? n : 1;
	if (c == '"' || c == '\\') {
		out[0] = '\\', out[1] = (char)c;
		return 2;
	}
	if (c < 0x20 || c == 0x7f)
		return (size_t)snprintf(out, 8, "\\u%04x", c);
	if (!n)
		return (size_t)snprintf(out, 8, "\xef\xbf\xbd");
	memcpy(out, s, n);
	return n;
}

/* JSON string body of src, cut to len - 1 bytes between characters. */
static void json_escape(char *dst, size_t len, const char *src)
{
	size_t o = 0, used;
	char c[8];

	for (size_t n; *src && o + (n = json_char(src, c, &used)) < len; src += used) {
		memcpy(dst + o, c, n);
		o += n;
	}
	dst[o] = '\0';
}

int virt_label_add(pmLabelSet **lp, const char *name, const char *value)
{
	/* a VM's exact name escaped whole, every byte a \u00XX at worst */
	char esc[6 * VMID_LABEL_MAX + 1];
	int sts;

	json_escape(esc, sizeof(esc), value);
	sts = pmdaAddLabels(lp, "{\"%s\":\"%s\"}", name, esc);
	return sts < 0 ? sts : 0;
}

int virt_label_vm(pmLabelSet **lp, const struct vmid *vm)
{
	int sts = 0;

	if (!vm)
		return 0;
	/* the exact name (pmseries, pmdalibvirt joins), not the instance's */
	if (vm->named && (sts = virt_label_add(lp, "vm_name", vm->label)) < 0)
		return sts;
	if (vm->uuid[0] && (sts = virt_label_add(lp, "vm_uuid", vm->uuid)) < 0)
		return sts;
	if ((sts = virt_label_add(lp, "vmm", vmid_vmm_name(vm->vmm))) < 0)
		return sts;
	/* optional (a note): pmseries leaves it out of the instance's series
	 * identity, so a VM restarted under its name (a new pid) continues
	 * its series rather than starting another */
	sts = pmdaAddNotes(lp, "{\"vmm_pid\":%u}", vm->pid);
	return sts < 0 ? sts : 0;
}

/* A queue named "<device>/<queue>" (its instance name after any owner):
 * the labels device, driver (when known) and queue. */
int virt_label_queue(pmLabelSet **lp, const char *devq, const char *driver)
{
	const char *q = strchr(devq, '/');
	char dev[VIRT_NAME_MAX];
	int sts;

	if (!q || (size_t)(q - devq) >= sizeof(dev))
		return 0;
	snprintf(dev, sizeof(dev), "%.*s", (int)(q - devq), devq);
	if ((sts = virt_label_add(lp, "device", dev)) < 0)
		return sts;
	if (driver && driver[0] && (sts = virt_label_add(lp, "driver", driver)) < 0)
		return sts;
	return virt_label_add(lp, "queue", q + 1);
}

/* A histogram bucket "<prefix>::<lo>-<hi>": its prefix (the reason,
 * queue, hypercall, VM or process the instance domain is about) and
 * bounds, for pminfo -l, archives and tools that read instance labels
 * (PCP 6.0.3's pmseries does not load an instance's own labels: qa 404). */
static int label_bucket(pmInDom indom, unsigned int inst, pmLabelSet **lp)
{
	char *name, prefix[256];
	unsigned long long lo, hi;
	const char *sep;
	int n = 0;

	if (pmdaCacheLookup(indom, (int)inst, &name, NULL) != PMDA_CACHE_ACTIVE ||
	    !(sep = strstr(name, "::")) || (size_t)(sep - name) >= sizeof(prefix) ||
	    sscanf(sep + 2, "%llu-%llu%n", &lo, &hi, &n) != 2 || sep[2 + n] != '\0')
		return 0;
	snprintf(prefix, sizeof(prefix), "%.*s", (int)(sep - name), name);
	if ((n = virt_label_add(lp, "prefix", prefix)) < 0)
		return n;
	n = pmdaAddLabels(lp, "{\"lo\":%llu,\"hi\":%llu}", lo, hi);
	return n < 0 ? n : 0;
}

int virt_label_callback(pmInDom indom, unsigned int inst, pmLabelSet **lp)
{
	for (int id = 0; id < VIRT_NINDOMS; id++) {
		struct virt_family *fam;
		int sts;

		if (virt_indomtab[id].it_indom != indom)
			continue;
		/* buckets live in cache-managed domains only: a cache lookup
		 * on a table-backed one (the module domain) would create an
		 * empty cache that then hides its instances from pmdaInstance */
		if (!virt_indomtab[id].it_set && (sts = label_bucket(indom, inst, lp)) < 0)
			return sts;
		fam = &virt_families[virt_indom_family[id]];
		if (fam->mod && fam->mod->labels &&
		    (sts = fam->mod->labels(fam, (enum virt_indom_id)id, inst, lp)) < 0)
			return sts;
		break;
	}
	return *lp ? (*lp)->nlabels : 0;
}
