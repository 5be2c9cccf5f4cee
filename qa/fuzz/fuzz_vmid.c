/* libFuzzer harness for the VM identity parsers (pmda/core/vmid.c): the same
 * bytes as a command line, a cgroup file, a stat line and a name. No crash,
 * no sanitizer report; a sanitised name is within VMID_NAME_MAX, holds no
 * ':', space, quote, backslash, '/', ',' or control byte and is valid UTF-8
 * ('-' is kept); a UUID is empty or canonical; names in a set are distinct
 * also as bucket prefixes ('-' and '_' alike); a VM's exact
 * name (its label) is a prefix of the raw one within VMID_LABEL_MAX, whole
 * but for a cut character. Built by `make fuzz`. */
#include "vmid.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_name(const char *s)
{
	size_t n = strlen(s);

	if (n > VMID_NAME_MAX)
		abort();
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f || strchr(": \"'\\/,", c))
			abort();
	}
}

static void check_uuid(const char *u)
{
	size_t n = strlen(u);

	if (n != 0 && (n != VMID_UUID_LEN || u[8] != '-' || u[23] != '-'))
		abort();
	for (size_t i = 0; i < n; i++)
		if (u[i] >= 'A' && u[i] <= 'Z')
			abort();
}

/* vmid_set_name on the raw name: the label its first bytes, cut only to
 * fit VMID_LABEL_MAX and never inside a valid UTF-8 character */
static void check_label(const char *raw)
{
	struct vmid id = { .pid = 7 };
	size_t n, r = strlen(raw);

	vmid_set_name(&id, raw);
	check_name(id.name);
	n = strlen(id.label);
	if (n > VMID_LABEL_MAX || memcmp(id.label, raw, n) != 0 || id.named != (r > 0))
		abort();
	if (n < r && n < VMID_LABEL_MAX - 3)
		abort();
	for (size_t i = 0; i < n;) {
		size_t c = vmid_utf8_len(id.label + i, n - i);

		if (!c && vmid_utf8_len(raw + i, r - i) > 1)
			abort();
		i += c ? c : 1;
	}
}

static bool all_alive(const struct vmid *id)
{
	return id->pid % 3 != 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	char name[512], uuid[VMID_UUID_LEN + 1], driver[16], clean[VMID_NAME_MAX + 1];
	struct vmid_set s = { .alive = all_alive };

	vmid_parse_cmdline(buf, size, name, sizeof(name), uuid);
	check_uuid(uuid);
	vmid_sanitize(clean, sizeof(clean), name, strlen(name));
	check_name(clean);
	check_label(name);
	if (vmid_parse_cgroup(buf, size, name, sizeof(name), driver) && (!name[0] || !driver[0]))
		abort();
	vmid_sanitize(clean, sizeof(clean), name, strlen(name));
	check_name(clean);
	(void)vmid_parse_starttime(buf, size);
	/* names from the bytes, a few colliding, into one set */
	for (uint32_t pid = 1; pid <= 8; pid++) {
		struct vmid id = { .pid = pid * 1000003u, .start = 1 };
		size_t off = size ? pid * 7 % size : 0;

		vmid_sanitize(id.base, sizeof(id.base), buf + off, size - off);
		check_name(id.base);
		if (!vmid_set_insert(&s, &id))
			abort();
	}
	for (size_t i = 0; i < s.n; i++) {
		check_name(s.v[i]->name);
		for (size_t j = 0; j < i; j++)
			if (vmid_same_bucket_prefix(s.v[i]->name, s.v[j]->name) && all_alive(s.v[i]) &&
			    all_alive(s.v[j]))
				abort();
	}
	vmid_set_clear(&s);
	return 0;
}
