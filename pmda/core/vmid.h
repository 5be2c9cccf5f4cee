/*
 * VM identity of a VMM process: the name an operator knows the VM by, its
 * UUID and the kind of VMM, from /proc/<pid>/cmdline and /proc/<pid>/cgroup.
 *
 * Names come from untrusted processes. A name is sanitised (vmid_sanitize):
 * ASCII letters, digits, '-', '_' and '.' and valid UTF-8 characters from
 * U+00A1 up are kept, every other byte (':', '/', ',', space, quotes,
 * backslash, control characters, invalid UTF-8) becomes '_'; at most
 * VMID_NAME_MAX bytes, cut before a UTF-8 character that does not fit. So
 * a VM named web-01 has instances "web-01", "web-01/vcpu0", ...; a name is
 * one word for pmie's and pmrep's instance syntax, holds no "::" and can be
 * quoted in JSON labels as it is. Its histogram buckets have each '-' as
 * '_' ("web_01::1024-2047", hist.h: grafana-pcp splits at the first '-').
 *
 * Names are unique among the live VMs of a set, and so are their bucket
 * prefixes: a VM whose name is taken by another live VM, or that differs
 * from one only by '-' against '_' (web-01, web_01), gets "<name>~<pid>"
 * (the base cut to keep the whole within VMID_NAME_MAX). A VM without a
 * name is called "<pid>".
 *
 * The exact name, as the VMM or libvirt gave it ("my vm" where the instance
 * is my_vm), is kept for the vm_name label, which pmseries and pmdalibvirt
 * joins match: raw bytes, at most VMID_LABEL_MAX, cut before a UTF-8
 * character that does not fit; the label's JSON escaping is labels.c's.
 */
#ifndef VIRT_VMID_H
#define VIRT_VMID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VMID_NAME_MAX 64		/* bytes of a name, without the NUL */
#define VMID_LABEL_MAX 255		/* bytes of the exact name, without the NUL */
#define VMID_UUID_LEN 36

enum vmid_vmm {
	VMID_OTHER,
	VMID_QEMU,
	VMID_FIRECRACKER,
	VMID_CLOUD_HYPERVISOR,
	VMID_CROSVM,
};

struct vmid {
	uint32_t pid;
	uint64_t start;			/* /proc/<pid>/stat starttime: pid reuse */
	int pidfd;			/* the process's pidfd + 1 (0: none), the set's */
	enum vmid_vmm vmm;
	bool named;			/* name is the VM's, not "<pid>" */
	char base[VMID_NAME_MAX + 1];	/* sanitised name before uniqueness */
	char name[VMID_NAME_MAX + 1];	/* unique among the set's live VMs */
	char label[VMID_LABEL_MAX + 1];	/* the exact name, "" if not named */
	char uuid[VMID_UUID_LEN + 1];	/* lower case, "" if unknown */
};

const char *vmid_vmm_name(enum vmid_vmm vmm);

/* Bytes of the valid UTF-8 character at s (r bytes left, r >= 1): 1 for
 * ASCII, 0 if invalid (overlong, surrogate, beyond U+10FFFF, truncated). */
size_t vmid_utf8_len(const char *s, size_t r);

/* Sanitise slen bytes of src (see above) into dst of dlen bytes (>= 1);
 * returns the length written. */
size_t vmid_sanitize(char *dst, size_t dlen, const char *src, size_t slen);

/* From the bytes of /proc/<pid>/cmdline (NUL-separated arguments): the VMM
 * kind, the raw (unsanitised) name into name[nlen] ("" if none) and the
 * UUID into uuid[VMID_UUID_LEN + 1] ("" if none or malformed).
 * QEMU: -name NAME / -name guest=NAME,... (",," is a comma), -uuid;
 * Firecracker (and its jailer): --id; crosvm: --name; cloud-hypervisor:
 * no name option, the UUID of --platform uuid=. */
enum vmid_vmm vmid_parse_cmdline(const char *buf, size_t len, char *name, size_t nlen,
				 char *uuid);

/* The libvirt domain name in the text of /proc/<pid>/cgroup (cgroup v2
 * "0::/machine.slice/machine-qemu\x2dN\x2dNAME.scope/..." or v1 lines
 * "N:ctrl:/machine.slice/..."; systemd's \xNN escapes decoded) into
 * name[nlen], and the driver ("qemu", "ch", "lxc") into driver[16]. */
bool vmid_parse_cgroup(const char *text, size_t len, char *name, size_t nlen, char *driver);

/* Field 22 of /proc/<pid>/stat text (after the comm's last ')'), 0 if
 * malformed. */
uint64_t vmid_parse_starttime(const char *text, size_t len);

/* A VM's names from its raw name (NUL-terminated; "" for none): base and
 * name sanitised, label the exact name bounded, named when there is one;
 * "<pid>" (of id->pid) without. */
void vmid_set_name(struct vmid *id, const char *raw);

/* Resolve pid from /proc: false when the process is gone. out->name is
 * the base name (no uniqueness yet); out->pidfd is the caller's to close
 * (vmid_close) or to give to a set. */
bool vmid_resolve(uint32_t pid, struct vmid *out);
void vmid_close(struct vmid *id);
/* The start time of pid now, 0 if gone. */
uint64_t vmid_starttime(uint32_t pid);

/* The identities of live VMM processes, each resolved once. */
struct vmid_set {
	struct vmid **v;
	size_t n, cap;
	/* is the process behind id still the same one (NULL: /proc) */
	bool (*alive)(const struct vmid *id);
};

/* Do names a and b make the same bucket prefix ('-' and '_' alike)? */
bool vmid_same_bucket_prefix(const char *a, const char *b);

/* Insert a resolved identity (copied), unique-named against the live
 * ones; an entry of the same pid or of a dead process with the same name
 * is dropped. The stored identity, valid until the next insert or
 * lookup, or NULL when out of memory. */
const struct vmid *vmid_set_insert(struct vmid_set *s, const struct vmid *id);
/* The identity of pid, resolved from /proc if new or if the process
 * exited (its pidfd readable; without one, another start time), or NULL
 * when gone. Valid as above. */
const struct vmid *vmid_set_lookup(struct vmid_set *s, uint32_t pid);
void vmid_set_clear(struct vmid_set *s);

#endif
