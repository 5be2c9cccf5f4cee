/* VM identities (pmda/core/vmid.c): command lines of QEMU, Firecracker,
 * crosvm and cloud-hypervisor, libvirt's cgroup layouts, /proc/<pid>/stat,
 * sanitising of hostile names and unique names in a set, without /proc
 * (except the resolve of this very process at the end). */
#include "vmid.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* argv as /proc/<pid>/cmdline has it: each argument NUL-terminated */
static size_t cmdline(char *buf, size_t len, const char *const *argv)
{
	size_t o = 0;

	for (; *argv; argv++) {
		size_t n = strlen(*argv) + 1;

		if (o + n > len)
			break;
		memcpy(buf + o, *argv, n);
		o += n;
	}
	return o;
}

static char name[4096], uuid[VMID_UUID_LEN + 1];

static enum vmid_vmm parse(const char *const *argv)
{
	static char buf[8192];
	size_t n = cmdline(buf, sizeof(buf), argv);

	return vmid_parse_cmdline(buf, n, name, sizeof(name), uuid);
}

#define ARGV(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define U "5f2c9b1e-1d2a-4c3b-9e8f-0a1b2c3d4e5f"

static void check_qemu(void)
{
	CHECK(parse(ARGV("/usr/bin/qemu-system-x86_64", "-name", "guest=web01,debug-threads=on",
			 "-uuid", U, "-m", "512")) == VMID_QEMU);
	CHECK(strcmp(name, "web01") == 0);
	CHECK(strcmp(uuid, U) == 0);
	/* the implied key: -name NAME */
	CHECK(parse(ARGV("qemu-kvm", "-name", "db02")) == VMID_QEMU);
	CHECK(strcmp(name, "db02") == 0 && uuid[0] == '\0');
	/* libvirt's order: guest= after another key; ",," escapes a comma */
	parse(ARGV("qemu-system-aarch64", "-name", "process=qemu:x,guest=a,,b,,,debug-threads=on"));
	CHECK(strcmp(name, "a,b,") == 0);
	parse(ARGV("qemu-system-x86_64", "-name", "we,,b,debug-threads=on"));
	CHECK(strcmp(name, "we,b") == 0);
	/* a first parameter with '=' is a key, not the name */
	parse(ARGV("qemu-system-x86_64", "-name", "web=x"));
	CHECK(name[0] == '\0');
	/* the last -name wins; --name and --uuid too; upper case UUIDs */
	parse(ARGV("qemu-system-x86_64", "-name", "one", "--name", "guest=two",
		   "--uuid", "5F2C9B1E-1D2A-4C3B-9E8F-0A1B2C3D4E5F"));
	CHECK(strcmp(name, "two") == 0 && strcmp(uuid, U) == 0);
	/* malformed UUIDs are dropped */
	parse(ARGV("qemu-system-x86_64", "-uuid", "5f2c9b1e-1d2a-4c3b-9e8f-0a1b2c3d4e5"));
	CHECK(uuid[0] == '\0');
	parse(ARGV("qemu-system-x86_64", "-uuid", "5f2c9b1e+1d2a-4c3b-9e8f-0a1b2c3d4e5f"));
	CHECK(uuid[0] == '\0');
	parse(ARGV("qemu-system-x86_64", "-uuid", "zf2c9b1e-1d2a-4c3b-9e8f-0a1b2c3d4e5f"));
	CHECK(uuid[0] == '\0');
	/* -name at the end, with no value; empty values */
	CHECK(parse(ARGV("qemu-system-x86_64", "-name")) == VMID_QEMU && name[0] == '\0');
	parse(ARGV("qemu-system-x86_64", "-name", ""));
	CHECK(name[0] == '\0');
	parse(ARGV("qemu-system-x86_64", "-name", "guest="));
	CHECK(name[0] == '\0');
	parse(ARGV("qemu-system-x86_64", "-name", ",,,,"));
	CHECK(strcmp(name, ",,") == 0);
}

static void check_others(void)
{
	CHECK(parse(ARGV("/usr/bin/firecracker", "--api-sock", "/run/fc.sock", "--id", "fc-7")) ==
	      VMID_FIRECRACKER);
	CHECK(strcmp(name, "fc-7") == 0);
	CHECK(parse(ARGV("firecracker", "--id=fc8")) == VMID_FIRECRACKER && strcmp(name, "fc8") == 0);
	CHECK(parse(ARGV("/usr/bin/jailer", "--id", "j1", "--exec-file", "/usr/bin/firecracker")) ==
	      VMID_FIRECRACKER && strcmp(name, "j1") == 0);
	CHECK(parse(ARGV("firecracker", "--id")) == VMID_FIRECRACKER && name[0] == '\0');
	CHECK(parse(ARGV("crosvm", "run", "--name", "android0", "--cpus", "2", "vmlinux")) ==
	      VMID_CROSVM && strcmp(name, "android0") == 0);
	CHECK(parse(ARGV("crosvm", "run", "--name=x1")) == VMID_CROSVM && strcmp(name, "x1") == 0);
	CHECK(parse(ARGV("/opt/cloud-hypervisor", "--cpus", "boot=2",
			 "--platform", ("num_pci_segments=1,uuid=" U ",oem_strings=[a]"))) ==
	      VMID_CLOUD_HYPERVISOR);
	CHECK(name[0] == '\0' && strcmp(uuid, U) == 0);
	/* another program's options mean nothing */
	CHECK(parse(ARGV("/usr/bin/python3", "-name", "guest=evil", "--id", "x")) == VMID_OTHER);
	CHECK(name[0] == '\0' && uuid[0] == '\0');
	/* no argv at all (kernel threads, zombies) */
	CHECK(vmid_parse_cmdline("", 0, name, sizeof(name), uuid) == VMID_OTHER && name[0] == '\0');
	/* a last argument without its NUL (found by the fuzzer) */
	CHECK(vmid_parse_cmdline("qemu\0-name\0guest=ab", 20, name, sizeof(name), uuid) ==
	      VMID_QEMU && strcmp(name, "ab") == 0);
	CHECK(vmid_parse_cmdline("firecracker\0--id\0abc", 20, name, sizeof(name), uuid) ==
	      VMID_FIRECRACKER && strcmp(name, "abc") == 0);
}

static int cg(const char *text, const char *want, const char *wdriver)
{
	char n[256], d[16];
	bool ok = vmid_parse_cgroup(text, strlen(text), n, sizeof(n), d);

	if (!want)
		return !ok && n[0] == '\0';
	if (!ok || strcmp(n, want) != 0 || strcmp(d, wdriver) != 0) {
		fprintf(stderr, "cgroup \"%s\": \"%s\"/\"%s\", want \"%s\"/\"%s\"\n", text, n, d, want,
			wdriver);
		return 0;
	}
	return 1;
}

static void check_cgroup(void)
{
	/* cgroup v2 */
	CHECK(cg("0::/machine.slice/machine-qemu\\x2d1\\x2dweb01.scope/libvirt/emulator\n", "web01", "qemu"));
	CHECK(cg("0::/machine.slice/machine-qemu\\x2d12\\x2dmy\\x2dvm.scope\n", "my-vm", "qemu"));
	CHECK(cg("0::/machine.slice/machine-ch\\x2d3\\x2dch1.scope/libvirt\n", "ch1", "ch"));
	/* cgroup v1: the name in any controller's line */
	CHECK(cg("12:pids:/system.slice/libvirtd.service\n"
		 "11:cpu,cpuacct:/machine.slice/machine-qemu\\x2d2\\x2ddb.scope/emulator\n"
		 "1:name=systemd:/machine.slice/machine-qemu\\x2d2\\x2ddb.scope\n"
		 "0::/\n", "db", "qemu"));
	/* the pre-machined layout */
	CHECK(cg("4:cpu:/machine/web02.libvirt-qemu/emulator\n", "web02", "qemu"));
	/* escapes: '/' is '-', bytes are \xNN; a bad escape stays as is */
	CHECK(cg("0::/machine.slice/machine-qemu\\x2d1\\x2da-b\\x3a\\x3ac\\xzz.scope\n",
		 "a/b::c\\xzz", "qemu"));
	/* not machines */
	CHECK(cg("0::/user.slice/user-1000.slice/session-2.scope\n", NULL, NULL));
	CHECK(cg("0::/machine.slice/machine-qemu\\x2dx\\x2dweb.scope\n", NULL, NULL));
	CHECK(cg("0::/machine.slice/machine-qemu\\x2d1\\x2d.scope\n", NULL, NULL));
	CHECK(cg("0::/machine.slice/machine-.scope\n", NULL, NULL));
	CHECK(cg("0::/machine.slice/machine-\\x2d1\\x2dweb.scope\n", NULL, NULL));
	CHECK(cg("no colons here\n::\n:\n", NULL, NULL));
	CHECK(cg("", NULL, NULL));
	CHECK(!vmid_parse_cgroup("4:c:/web02.libvirt-\0q\n", 20, name, sizeof(name), uuid));
	/* a systemd-nspawn machine: no DRIVER-ID- part */
	CHECK(cg("0::/machine.slice/machine-fedora.scope\n", NULL, NULL));
}

static int san(const char *in, size_t len, const char *want)
{
	char out[VMID_NAME_MAX + 1];

	vmid_sanitize(out, sizeof(out), in, len);
	if (strcmp(out, want) != 0) {
		fprintf(stderr, "sanitize: \"%s\", want \"%s\"\n", out, want);
		return 0;
	}
	return 1;
}
#define SAN(in, want) san(in, sizeof(in) - 1, want)

static void check_sanitize(void)
{
	char big[301], want[VMID_NAME_MAX + 1], out[VMID_NAME_MAX + 1], utf[301];

	CHECK(SAN("web01", "web01"));
	CHECK(SAN("web-01.prod", "web-01.prod"));		/* '-' kept */
	CHECK(SAN("a::b", "a__b"));
	CHECK(SAN("x::0-1", "x__0-1"));
	CHECK(SAN("\"quoted\" 'q' `b` \\", "_quoted___q___b___"));
	CHECK(SAN("tab\tnl\ncr\rdel\x7f" "esc\x1b", "tab_nl_cr_del_esc_"));
	CHECK(SAN("a/b c,d{e}", "a_b_c_d_e_"));
	CHECK(SAN("caf\xc3\xa9", "caf\xc3\xa9"));			/* é kept */
	CHECK(SAN("\xe6\x97\xa5\xe6\x9c\xac", "\xe6\x97\xa5\xe6\x9c\xac"));	/* 日本 */
	CHECK(SAN("\xf0\x9f\x90\xa7", "\xf0\x9f\x90\xa7"));		/* a 4-byte one */
	CHECK(SAN("a\xc2\x85" "b", "a_b"));				/* C1 control NEL */
	CHECK(SAN("a\xc2\xa0" "b", "a_b"));				/* no-break space */
	CHECK(SAN("a\xe2\x80\xae" "b", "a_b"));				/* RIGHT-TO-LEFT OVERRIDE */
	CHECK(SAN("a\xe2\x80\xa8" "b", "a_b"));				/* LINE SEPARATOR */
	CHECK(SAN("a\xef\xbb\xbf" "b", "a_b"));				/* BOM */
	CHECK(SAN("a\xc0\xaf" "b", "a__b"));				/* overlong '/' */
	CHECK(SAN("a\xed\xa0\x80" "b", "a___b"));			/* a surrogate */
	CHECK(SAN("a\xf4\x90\x80\x80" "b", "a____b"));			/* beyond U+10FFFF */
	CHECK(SAN("a\xe6\x97", "a__"));					/* truncated */
	CHECK(SAN("\xff\xfe", "__"));
	CHECK(SAN("", ""));
	CHECK(san("ab\0cd", 5, "ab"));					/* stops at a NUL */
	/* 300 bytes: cut at VMID_NAME_MAX */
	memset(big, 'v', 300);
	big[300] = '\0';
	memset(want, 'v', VMID_NAME_MAX);
	want[VMID_NAME_MAX] = '\0';
	CHECK(san(big, 300, want));
	/* 300 bytes of 3-byte characters: cut on a character boundary */
	for (int i = 0; i < 100; i++)
		memcpy(utf + (size_t)3 * (size_t)i, "\xe6\x97\xa5", 3);
	utf[300] = '\0';
	CHECK(vmid_sanitize(out, sizeof(out), utf, 300) == 63);
	CHECK(strlen(out) == 63 && memcmp(out, utf, 63) == 0);
	/* a smaller buffer */
	CHECK(vmid_sanitize(out, 4, "abcdef", 6) == 3 && strcmp(out, "abc") == 0);
	CHECK(vmid_sanitize(out, 3, "\xe6\x97\xa5", 3) == 0 && out[0] == '\0');
}

/* the instance's name sanitised, the label's exact and bounded */
static void check_set_name(void)
{
	struct vmid id = { .pid = 4242 };
	char big[301], utf[301];

	vmid_set_name(&id, "web-01");
	CHECK(id.named && strcmp(id.name, "web-01") == 0 && strcmp(id.base, "web-01") == 0);
	CHECK(strcmp(id.label, "web-01") == 0);
	vmid_set_name(&id, "my vm");
	CHECK(strcmp(id.name, "my_vm") == 0 && strcmp(id.label, "my vm") == 0);
	vmid_set_name(&id, "a\"b\\c\nd::e \xff");
	CHECK(strcmp(id.name, "a_b_c_d__e__") == 0 && strcmp(id.label, "a\"b\\c\nd::e \xff") == 0);
	/* no name: "<pid>", no label */
	vmid_set_name(&id, "");
	CHECK(!id.named && strcmp(id.name, "4242") == 0 && id.label[0] == '\0');
	/* 300 bytes: VMID_LABEL_MAX of them in the label, 64 in the name */
	memset(big, 'v', 300);
	big[300] = '\0';
	vmid_set_name(&id, big);
	CHECK(strlen(id.label) == VMID_LABEL_MAX && strlen(id.name) == VMID_NAME_MAX);
	/* 3-byte characters: cut before the one that does not fit (255 = 3 x 85,
	 * so one byte in front shifts the boundary) */
	utf[0] = 'x';
	for (int i = 0; i < 99; i++)
		memcpy(utf + 1 + (size_t)3 * (size_t)i, "\xe6\x97\xa5", 3);
	utf[298] = '\0';
	vmid_set_name(&id, utf);
	CHECK(strlen(id.label) == 253 && memcmp(id.label, utf, 253) == 0);
	/* stray continuation bytes at the bound are not a character to keep
	 * whole: plain bytes, cut at the bound */
	memset(big, 0x80, 300);
	big[0] = 'y';
	vmid_set_name(&id, big);
	CHECK(strlen(id.label) == VMID_LABEL_MAX);
	CHECK(vmid_utf8_len("a", 1) == 1 && vmid_utf8_len("\xe6\x97\xa5", 3) == 3);
	CHECK(vmid_utf8_len("\xe6\x97", 2) == 0 && vmid_utf8_len("\x80", 1) == 0);
}

static void check_stat(void)
{
	/* a comm with spaces and ')' in it: fields count after the last ')' */
	static const char st[] = "4242 (qemu) x (y)) S 1 4242 4242 0 -1 4194560 100 0 0 0 "
				 "5 6 0 0 20 0 3 0 987654 123456 7";

	CHECK(vmid_parse_starttime(st, sizeof(st) - 1) == 987654);
	CHECK(vmid_parse_starttime("1 (x) S 1", 9) == 0);
	CHECK(vmid_parse_starttime("no paren", 8) == 0);
}

/* ------------------------------------------------------------------ set */

static uint32_t dead_pid;

static bool fake_alive(const struct vmid *id)
{
	return id->pid != dead_pid;
}

static struct vmid vm(uint32_t pid, const char *base)
{
	struct vmid id = { .pid = pid, .start = 1, .vmm = VMID_QEMU, .named = true };

	snprintf(id.base, sizeof(id.base), "%s", base);
	return id;
}

/* web-01 and web_01 would share the bucket prefix web_01: the later one
 * is suffixed, as if the name were taken */
static void check_set_bucket_prefix(void)
{
	struct vmid_set s = { .alive = fake_alive };
	struct vmid h = vm(10, "web-01"), u = vm(20, "web_01"), o = vm(30, "web-02");
	const struct vmid *r;

	CHECK(vmid_same_bucket_prefix("web-01", "web_01") && vmid_same_bucket_prefix("a", "a"));
	CHECK(!vmid_same_bucket_prefix("web-01", "web-0") && !vmid_same_bucket_prefix("web", "web-01"));
	r = vmid_set_insert(&s, &h);
	CHECK(r && strcmp(r->name, "web-01") == 0);
	r = vmid_set_insert(&s, &u);
	CHECK(r && strcmp(r->name, "web_01~20") == 0);
	r = vmid_set_insert(&s, &o);
	CHECK(r && strcmp(r->name, "web-02") == 0);
	vmid_set_clear(&s);
}

static void check_set(void)
{
	struct vmid_set s = { .alive = fake_alive };
	struct vmid a = vm(100, "web01"), b = vm(200, "web01"), c = vm(300, "web01");
	struct vmid lng = vm(400, ""), lng2 = vm(4000000, ""), fb = vm(4242, "4242"), n4242 = vm(77, "4242");
	const struct vmid *r;
	char want[VMID_NAME_MAX + 1];

	r = vmid_set_insert(&s, &a);
	CHECK(r && strcmp(r->name, "web01") == 0);
	/* two live VMs with one name: the later one is "<name>~<pid>" */
	r = vmid_set_insert(&s, &b);
	CHECK(r && strcmp(r->name, "web01~200") == 0);
	/* the first one exits; a restart under the name gets the plain name */
	dead_pid = 100;
	r = vmid_set_insert(&s, &c);
	CHECK(r && strcmp(r->name, "web01") == 0);
	CHECK(s.n == 2);
	/* the same pid again (re-resolved): replaces its entry */
	dead_pid = 0;
	r = vmid_set_insert(&s, &b);
	CHECK(r && strcmp(r->name, "web01~200") == 0 && s.n == 2);
	check_set_bucket_prefix();
	/* a suffix on a full-length name keeps it within VMID_NAME_MAX */
	memset(lng.base, 'x', VMID_NAME_MAX);
	lng.base[VMID_NAME_MAX] = '\0';
	lng2.base[0] = '\0';
	memcpy(lng2.base, lng.base, sizeof(lng.base));
	CHECK(vmid_set_insert(&s, &lng) != NULL);
	r = vmid_set_insert(&s, &lng2);
	memset(want, 'x', VMID_NAME_MAX - 8);
	snprintf(want + VMID_NAME_MAX - 8, 9, "~4000000");
	CHECK(r && strlen(r->name) == VMID_NAME_MAX && strcmp(r->name, want) == 0);
	/* a VM named like another's "<pid>" fallback */
	fb.named = false;
	CHECK(vmid_set_insert(&s, &fb) != NULL);
	r = vmid_set_insert(&s, &n4242);
	CHECK(r && strcmp(r->name, "4242~77") == 0);
	/* many: grows, and sweeps the dead first */
	for (uint32_t p = 1000; p < 1100; p++) {
		struct vmid x = vm(p, "many");

		r = vmid_set_insert(&s, &x);
		CHECK(r != NULL);
	}
	CHECK(s.n == 106);
	vmid_set_clear(&s);
	CHECK(s.n == 0 && s.v == NULL);
}

/* This very process from /proc: not a VMM, named "<pid>". */
static void check_resolve_self(void)
{
	struct vmid_set s = { 0 };
	const struct vmid *r = vmid_set_lookup(&s, (uint32_t)getpid());
	char want[16];

	snprintf(want, sizeof(want), "%d", getpid());
	CHECK(r && r->vmm == VMID_OTHER && !r->named && strcmp(r->name, want) == 0);
	CHECK(r && r->start != 0 && r->start == vmid_starttime((uint32_t)getpid()));
	/* again: the same entry, not re-resolved */
	CHECK(vmid_set_lookup(&s, (uint32_t)getpid()) == r && s.n == 1);
	CHECK(vmid_set_lookup(&s, 0x7ffffff0u) == NULL);
	vmid_set_clear(&s);
	CHECK(strcmp(vmid_vmm_name(VMID_CLOUD_HYPERVISOR), "cloud-hypervisor") == 0);
	CHECK(strcmp(vmid_vmm_name(VMID_OTHER), "other") == 0);
}

/* A child from /proc, found again by its pidfd while it runs; once it
 * exited, the same while it is a zombie (its stat's start time), gone
 * once reaped. */
static void check_exited_child(void)
{
	struct vmid_set s = { 0 };
	const struct vmid *r;
	pid_t pid = fork();

	if (pid == 0) {
		pause();
		_exit(0);
	}
	CHECK(pid > 0);
	r = vmid_set_lookup(&s, (uint32_t)pid);
	CHECK(r && r->pidfd > 0 && r->start == vmid_starttime((uint32_t)pid));
	CHECK(vmid_set_lookup(&s, (uint32_t)pid) == r && s.n == 1);
	kill(pid, SIGKILL);
	while (waitid(P_PID, (id_t)pid, NULL, WEXITED | WNOWAIT) < 0)
		;
	CHECK(vmid_set_lookup(&s, (uint32_t)pid) == r && s.n == 1);
	waitpid(pid, NULL, 0);
	CHECK(vmid_set_lookup(&s, (uint32_t)pid) == NULL);
	vmid_set_clear(&s);
	CHECK(s.n == 0);
}

int main(void)
{
	check_qemu();
	check_others();
	check_cgroup();
	check_sanitize();
	check_set_name();
	check_stat();
	check_set();
	check_resolve_self();
	check_exited_child();
	return UNIT_DONE();
}
