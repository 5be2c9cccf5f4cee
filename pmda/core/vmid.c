/* VM identity of a VMM process (pmda/core/vmid.h). */
#include "vmid.h"
#include "array.h"
#include "hist.h"

#include <ctype.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *vmid_vmm_name(enum vmid_vmm vmm)
{
	switch (vmm) {
	case VMID_QEMU:
		return "qemu";
	case VMID_FIRECRACKER:
		return "firecracker";
	case VMID_CLOUD_HYPERVISOR:
		return "cloud-hypervisor";
	case VMID_CROSVM:
		return "crosvm";
	default:
		return "other";
	}
}

/* ----------------------------------------------------------- sanitise */

static bool is_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

/* Length of the valid UTF-8 sequence at s (r bytes left), 0 if invalid
 * (overlong, surrogate, beyond U+10FFFF, truncated); *cp its code point. */
static size_t utf8_seq(const unsigned char *s, size_t r, uint32_t *cp)
{
	size_t n;
	uint32_t min;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, min = 0x80, *cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, min = 0x800, *cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, min = 0x10000, *cp = s[0] & 0x07;
	else
		return 0;
	if (r < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if (!is_cont(s[i]))
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3f);
	}
	if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return n;
}

/* Characters kept: no C1 controls or no-break space, no General
 * Punctuation block (odd spaces, zero-width and bidi controls, line
 * separators), no BOM and no specials. */
static bool keep_cp(uint32_t cp)
{
	return cp >= 0xa1 && !(cp >= 0x2000 && cp <= 0x206f) && cp != 0xfeff &&
	       !(cp >= 0xfff0 && cp <= 0xffff);
}

size_t vmid_utf8_len(const char *s, size_t r)
{
	uint32_t cp;

	return (unsigned char)s[0] < 0x80 ? 1 : utf8_seq((const unsigned char *)s, r, &cp);
}

static bool keep_ascii(unsigned char c)
{
	return isascii(c) && (isalnum(c) || c == '_' || c == '.' || c == '-');
}

size_t vmid_sanitize(char *dst, size_t dlen, const char *src, size_t slen)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0, i = 0;

	while (i < slen && s[i]) {
		uint32_t cp = 0;
		size_t n = s[i] < 0x80 ? 1 : utf8_seq(s + i, slen - i, &cp);
		bool keep = n == 1 ? keep_ascii(s[i]) : n > 1 && keep_cp(cp);
		size_t out = keep ? n : 1;

		/* a character dropped whole is one '_', an invalid byte too */
		if (o + out + 1 > dlen)
			break;
		if (keep)
			memcpy(dst + o, s + i, n);
		else
			dst[o] = '_';
		o += out;
		i += n ? n : 1;
	}
	dst[o] = '\0';
	return o;
}

/* ------------------------------------------------------------ cmdline */

struct arg {
	const char *p;
	size_t len;
};

/* The next NUL-terminated argument of buf[len] from *off. */
static bool next_arg(const char *buf, size_t len, size_t *off, struct arg *a)
{
	const char *nul;

	if (*off >= len)
		return false;
	a->p = buf + *off;
	nul = memchr(a->p, '\0', len - *off);
	a->len = nul ? (size_t)(nul - a->p) : len - *off;
	*off += a->len + 1;
	return true;
}

static bool arg_is(const struct arg *a, const char *s)
{
	return a->len == strlen(s) && memcmp(a->p, s, a->len) == 0;
}

/* "--opt=VALUE": the value part, if a is that option. */
static bool arg_eq_value(const struct arg *a, const char *opt, struct arg *val)
{
	size_t n = strlen(opt);

	if (a->len <= n || memcmp(a->p, opt, n) != 0 || a->p[n] != '=')
		return false;
	val->p = a->p + n + 1;
	val->len = a->len - n - 1;
	return true;
}

static void copy_arg(char *dst, size_t dlen, const struct arg *a)
{
	size_t n = a->len < dlen - 1 ? a->len : dlen - 1;

	memcpy(dst, a->p, n);
	dst[n] = '\0';
}

static void copy_uuid(char *uuid, const char *p, size_t len)
{
	static const int dash[] = { 8, 13, 18, 23 };

	uuid[0] = '\0';
	if (len != VMID_UUID_LEN)
		return;
	for (size_t i = 0, d = 0; i < len; i++) {
		if (d < 4 && (int)i == dash[d]) {
			if (p[i] != '-')
				return;
			d++;
		} else if (!isxdigit((unsigned char)p[i])) {
			return;
		}
	}
	for (size_t i = 0; i < len; i++)
		uuid[i] = (char)tolower((unsigned char)p[i]);
	uuid[len] = '\0';
}

/* One QemuOpts value from p (",," is a comma, a single ',' ends it) into
 * out[olen]; returns where the next parameter starts. */
static const char *qemu_opt_value(const char *p, const char *end, char *out, size_t olen)
{
	size_t o = 0;

	while (p < end) {
		if (*p == ',') {
			if (p + 1 < end && p[1] == ',')
				p++;
			else
				break;
		}
		if (o + 1 < olen)
			out[o++] = *p;
		p++;
	}
	out[o] = '\0';
	return p < end ? p + 1 : end;
}

/* QEMU's -name value: "NAME" (the implied key guest) or
 * "guest=NAME,process=...,debug-threads=on"; the last guest wins. As in
 * QEMU's opts_do_parse(), a first parameter whose name part (up to '=' or
 * ',') is not followed by '=' is the value of the implied key. */
static void qemu_name(const struct arg *a, char *name, size_t nlen)
{
	const char *p = a->p, *end = a->p + a->len;
	bool first = true;

	while (p < end) {
		size_t klen = 0;
		char val[512];

		while (p + klen < end && p[klen] != '=' && p[klen] != ',')
			klen++;
		if (p + klen < end && p[klen] == '=') {
			bool guest = klen == 5 && memcmp(p, "guest", 5) == 0;

			p = qemu_opt_value(p + klen + 1, end, val, sizeof(val));
			if (guest)
				snprintf(name, nlen, "%s", val);
		} else if (first) {
			p = qemu_opt_value(p, end, val, sizeof(val));
			snprintf(name, nlen, "%s", val);
		} else {
			p = qemu_opt_value(p, end, val, sizeof(val));	/* a flag */
		}
		first = false;
	}
}

/* cloud-hypervisor's --platform "k=v,...": the uuid. */
static void platform_uuid(const struct arg *a, char *uuid)
{
	const char *p = a->p, *end = a->p + a->len;

	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *e = comma ? comma : end;

		if (e - p > 5 && memcmp(p, "uuid=", 5) == 0)
			copy_uuid(uuid, p + 5, (size_t)(e - p - 5));
		p = e + 1;
	}
}

static enum vmid_vmm vmm_of(const struct arg *argv0)
{
	const char *b = argv0->p, *end = argv0->p + argv0->len, *s;
	struct arg base;

	for (s = b; s < end; s++)
		if (*s == '/')
			b = s + 1;
	base = (struct arg){ b, (size_t)(end - b) };
	if (base.len >= 4 && memcmp(base.p, "qemu", 4) == 0)
		return VMID_QEMU;
	if (arg_is(&base, "firecracker") || arg_is(&base, "jailer"))
		return VMID_FIRECRACKER;
	if (arg_is(&base, "cloud-hypervisor"))
		return VMID_CLOUD_HYPERVISOR;
	if (arg_is(&base, "crosvm"))
		return VMID_CROSVM;
	return VMID_OTHER;
}

/* The option's value: "OPT VALUE" (the next argument) or "OPT=VALUE". */
static bool opt_value(const char *buf, size_t len, size_t *off, const struct arg *a,
		      const char *opt, struct arg *val)
{
	if (arg_eq_value(a, opt, val))
		return true;
	return arg_is(a, opt) && next_arg(buf, len, off, val);
}

enum vmid_vmm vmid_parse_cmdline(const char *buf, size_t len, char *name, size_t nlen,
				 char *uuid)
{
	struct arg a, v;
	size_t off = 0;
	enum vmid_vmm vmm;

	name[0] = uuid[0] = '\0';
	if (!next_arg(buf, len, &off, &a))
		return VMID_OTHER;
	vmm = vmm_of(&a);
	while (next_arg(buf, len, &off, &a)) {
		switch (vmm) {
		case VMID_QEMU:
			if (arg_is(&a, "-name") || arg_is(&a, "--name")) {
				if (next_arg(buf, len, &off, &v))
					qemu_name(&v, name, nlen);
			} else if ((arg_is(&a, "-uuid") || arg_is(&a, "--uuid")) &&
				   next_arg(buf, len, &off, &v)) {
				copy_uuid(uuid, v.p, v.len);
			}
			break;
		case VMID_FIRECRACKER:
			if (opt_value(buf, len, &off, &a, "--id", &v))
				copy_arg(name, nlen, &v);
			break;
		case VMID_CROSVM:
			if (opt_value(buf, len, &off, &a, "--name", &v))
				copy_arg(name, nlen, &v);
			break;
		case VMID_CLOUD_HYPERVISOR:
			if (opt_value(buf, len, &off, &a, "--platform", &v))
				platform_uuid(&v, uuid);
			break;
		default:
			return vmm;
		}
	}
	return vmm;
}

/* ------------------------------------------------------------- cgroup */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Undo systemd's unit name escaping (unit_name_escape(): "\xNN" for a
 * byte, '-' for '/') of p[len] into out[olen]. */
static void unit_unescape(const char *p, size_t len, char *out, size_t olen)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 1 < olen; i++) {
		int hi = i + 3 < len && p[i] == '\\' && p[i + 1] == 'x' ? hexval(p[i + 2]) : -1;
		int lo = hi >= 0 ? hexval(p[i + 3]) : -1;

		if (lo >= 0) {
			out[o++] = (char)(unsigned char)(hi * 16 + lo);
			i += 3;
		} else {
			out[o++] = p[i];
			if (p[i] == '-')
				out[o - 1] = '/';
		}
	}
	out[o] = '\0';
}

/* "machine-<escaped DRIVER-ID-NAME>.scope" (libvirt's machine name for
 * machined, virDomainDriverGenerateMachineName()), or the older
 * "NAME.libvirt-DRIVER" directory. */
static bool machine_component(const char *p, size_t len, char *name, size_t nlen, char *driver)
{
	static const char pre[] = "machine-", suf[] = ".scope", old[] = ".libvirt-";
	char raw[1024], *s, *d;
	const char *o;

	if (memchr(p, '\0', len))
		return false;
	if (len > sizeof(pre) + sizeof(suf) - 2 && memcmp(p, pre, sizeof(pre) - 1) == 0 &&
	    memcmp(p + len - (sizeof(suf) - 1), suf, sizeof(suf) - 1) == 0) {
		unit_unescape(p + sizeof(pre) - 1, len - (sizeof(pre) - 1) - (sizeof(suf) - 1),
			      raw, sizeof(raw));
		if (!(s = strchr(raw, '-')) || s == raw || (size_t)(s - raw) >= 16)
			return false;
		d = s + 1;
		if (!isdigit((unsigned char)*d))
			return false;
		while (isdigit((unsigned char)*d))
			d++;
		if (*d != '-' || !d[1])
			return false;
		snprintf(driver, 16, "%.*s", (int)(s - raw), raw);
		snprintf(name, nlen, "%s", d + 1);
		return true;
	}
	for (o = p; o + sizeof(old) - 1 < p + len; o++)
		if (memcmp(o, old, sizeof(old) - 1) == 0 && o > p) {
			size_t dl = (size_t)(p + len - o) - (sizeof(old) - 1);

			if (dl == 0)
				return false;
			snprintf(driver, 16, "%.*s", (int)(dl < 15 ? dl : 15), o + sizeof(old) - 1);
			snprintf(name, nlen, "%.*s", (int)(o - p), p);
			return true;
		}
	return false;
}

bool vmid_parse_cgroup(const char *text, size_t len, char *name, size_t nlen, char *driver)
{
	const char *line = text, *end = text + len;

	name[0] = driver[0] = '\0';
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *le = nl ? nl : end, *c1, *c2, *p;

		/* "hierarchy-ID:controllers:path" */
		if ((c1 = memchr(line, ':', (size_t)(le - line))) &&
		    (c2 = memchr(c1 + 1, ':', (size_t)(le - c1 - 1)))) {
			for (p = c2 + 1; p < le;) {
				const char *slash = memchr(p, '/', (size_t)(le - p));
				const char *ce = slash ? slash : le;

				if (ce > p && machine_component(p, (size_t)(ce - p), name, nlen, driver))
					return true;
				p = ce + 1;
			}
		}
		line = le + 1;
	}
	return false;
}

/* --------------------------------------------------------------- /proc */

uint64_t vmid_parse_starttime(const char *text, size_t len)
{
	const char *p = NULL, *end = text + len;
	unsigned long long v = 0;

	for (const char *s = text; s < end; s++)
		if (*s == ')')
			p = s + 1;
	if (!p)
		return 0;
	/* field 3 (state) is the first after ')'; starttime is field 22 */
	for (int field = 2; field < 22 && p < end; field++) {
		while (p < end && *p == ' ')
			p++;
		if (field == 21)
			break;
		while (p < end && *p != ' ')
			p++;
	}
	while (p < end && isdigit((unsigned char)*p))
		v = v * 10 + (unsigned long long)(*p++ - '0');
	return v;
}

/* Up to len - 1 bytes of a /proc file, NUL-terminated; -1 if unreadable. */
static ssize_t read_proc(uint32_t pid, const char *what, char *buf, size_t len)
{
	char path[64];
	ssize_t n, got = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/%s", pid, what);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	while ((size_t)got < len - 1 && (n = read(fd, buf + got, len - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	return got;
}

uint64_t vmid_starttime(uint32_t pid)
{
	char buf[1024];
	ssize_t n = read_proc(pid, "stat", buf, sizeof(buf));

	return n > 0 ? vmid_parse_starttime(buf, (size_t)n) : 0;
}

static enum vmid_vmm vmm_of_driver(const char *driver)
{
	if (strcmp(driver, "qemu") == 0)
		return VMID_QEMU;
	if (strcmp(driver, "ch") == 0)
		return VMID_CLOUD_HYPERVISOR;
	return VMID_OTHER;
}

/* At most max bytes of src, not cutting a valid UTF-8 character. */
static size_t cut_at_char(const char *src, size_t max)
{
	size_t n = strnlen(src, max + 1);

	if (n <= max)
		return n;
	n = max;
	while (n > 0 && is_cont((unsigned char)src[n]))
		n--;
	/* src[n] starts a character: keep what precedes it unless the bytes
	 * backed over were stray continuation bytes, not its tail */
	if (vmid_utf8_len(src + n, strnlen(src + n, 4)) <= max - n)
		n = max;
	return n;
}

void vmid_set_name(struct vmid *id, const char *raw)
{
	size_t n = cut_at_char(raw, VMID_LABEL_MAX);

	id->named = raw[0] && vmid_sanitize(id->base, sizeof(id->base), raw, strlen(raw)) > 0;
	if (id->named) {
		memcpy(id->label, raw, n);
		id->label[n] = '\0';
	} else {
		id->label[0] = '\0';
		snprintf(id->base, sizeof(id->base), "%u", id->pid);
	}
	snprintf(id->name, sizeof(id->name), "%s", id->base);
}

/* The name from the command line (exact under libvirt: it passes
 * -name guest=DOMAIN), else the libvirt scope's (which libvirt may have
 * shortened), else "<pid>". */
static void resolve_name(uint32_t pid, struct vmid *out, const char *cmdname)
{
	char raw[VMID_NAME_MAX * 8] = "", driver[16];
	char *cg;
	ssize_t n;

	if (cmdname[0]) {
		vmid_set_name(out, cmdname);
		return;
	}
	if ((cg = malloc(16384)) && (n = read_proc(pid, "cgroup", cg, 16384)) > 0 &&
	    vmid_parse_cgroup(cg, (size_t)n, raw, sizeof(raw), driver) && raw[0] &&
	    out->vmm == VMID_OTHER)
		out->vmm = vmm_of_driver(driver);
	free(cg);
	vmid_set_name(out, raw);
}

/* A pidfd of pid, + 1; 0 when there is none (Linux before 5.3, out of
 * fds): it becomes readable once the process exited (pidfd_poll()),
 * whatever process gets its pid next. */
static int pidfd_of(uint32_t pid)
{
#ifdef SYS_pidfd_open
	long fd = syscall(SYS_pidfd_open, (pid_t)pid, 0);

	return fd >= 0 ? (int)fd + 1 : 0;
#else
	(void)pid;
	return 0;
#endif
}

void vmid_close(struct vmid *id)
{
	if (id->pidfd)
		close(id->pidfd - 1);
	id->pidfd = 0;
}

/* Is pid still the process id was resolved from? While it runs, one poll
 * of its pidfd says so, not three syscalls for /proc/<pid>/stat per
 * lookup; once it exited, it is until its parent reaps it (a zombie keeps
 * its start time) and its pid is another process's. */
static bool still_running(const struct vmid *id)
{
	uint64_t start;

	if (id->pidfd) {
		struct pollfd p = { .fd = id->pidfd - 1, .events = POLLIN };

		if (poll(&p, 1, 0) == 0)
			return true;
	}
	start = vmid_starttime(id->pid);
	return start && start == id->start;
}

bool vmid_resolve(uint32_t pid, struct vmid *out)
{
	size_t len = (size_t)128 * 1024;
	char *cmd = malloc(len), name[VMID_NAME_MAX * 8];
	ssize_t n;

	memset(out, 0, sizeof(*out));
	out->pid = pid;
	out->pidfd = pidfd_of(pid);	/* before the start time: then it is that process's */
	if (!cmd || !(out->start = vmid_starttime(pid)) ||
	    (n = read_proc(pid, "cmdline", cmd, len)) < 0) {
		free(cmd);
		vmid_close(out);
		return false;
	}
	out->vmm = vmid_parse_cmdline(cmd, (size_t)n, name, sizeof(name), out->uuid);
	free(cmd);
	resolve_name(pid, out, name);
	/* the pid may have been reused while we read */
	if (vmid_starttime(pid) == out->start)
		return true;
	vmid_close(out);
	return false;
}

/* ----------------------------------------------------------------- set */

static bool alive(const struct vmid_set *s, const struct vmid *id)
{
	return s->alive ? s->alive(id) : still_running(id);
}

static void drop(struct vmid_set *s, size_t i)
{
	vmid_close(s->v[i]);
	free(s->v[i]);
	s->v[i] = s->v[--s->n];
}

/* "<base cut at a character boundary>~<pid>" within VMID_NAME_MAX. */
static void suffixed(struct vmid *id)
{
	char sfx[16];
	size_t n = strlen(id->base), room;

	snprintf(sfx, sizeof(sfx), "~%u", id->pid);
	room = VMID_NAME_MAX - strlen(sfx);
	if (n > room) {
		n = room;
		while (n > 0 && is_cont((unsigned char)id->base[n]))
			n--;
	}
	snprintf(id->name, sizeof(id->name), "%.*s%s", (int)n, id->base, sfx);
}

bool vmid_same_bucket_prefix(const char *a, const char *b)
{
	while (*a && virt_bucket_char(*a) == virt_bucket_char(*b))
		a++, b++;
	return *a == *b;
}

const struct vmid *vmid_set_insert(struct vmid_set *s, const struct vmid *id)
{
	struct vmid *e;
	bool taken = false;

	for (size_t i = 0; i < s->n;) {
		if (s->v[i]->pid == id->pid ||
		    (strcmp(s->v[i]->base, id->base) == 0 && !alive(s, s->v[i]))) {
			drop(s, i);
			continue;
		}
		if (vmid_same_bucket_prefix(s->v[i]->name, id->base))
			taken = true;
		i++;
	}
	if (s->n == s->cap) {
		for (size_t i = 0; i < s->n;)
			if (!alive(s, s->v[i]))
				drop(s, i);
			else
				i++;
	}
	if (VIRT_GROW(s->v, s->cap, s->n + 1) < 0 || !(e = malloc(sizeof(*e))))
		return NULL;
	*e = *id;
	if (taken)
		suffixed(e);
	else
		snprintf(e->name, sizeof(e->name), "%s", e->base);
	s->v[s->n++] = e;
	return e;
}

const struct vmid *vmid_set_lookup(struct vmid_set *s, uint32_t pid)
{
	const struct vmid *e;
	struct vmid id;

	for (size_t i = 0; i < s->n; i++)
		if (s->v[i]->pid == pid) {
			if (still_running(s->v[i]))
				return s->v[i];
			break;
		}
	if (!vmid_resolve(pid, &id))
		return NULL;
	if (!(e = vmid_set_insert(s, &id)))
		vmid_close(&id);
	return e;
}

void vmid_set_clear(struct vmid_set *s)
{
	while (s->n)
		drop(s, s->n - 1);
	free(s->v);
	s->v = NULL;
	s->cap = 0;
}
