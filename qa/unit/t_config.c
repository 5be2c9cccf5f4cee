/* virt.conf parser (pmda/core/config.c): values, defaults and every error path. */
#include "config.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static char log_buf[8192];
static int log_lines;

static void logger(void *arg, const char *msg)
{
	(void)arg;
	strncat(log_buf, msg, sizeof(log_buf) - strlen(log_buf) - 2);
	strcat(log_buf, "\n");
	log_lines++;
}

static const struct virt_option opts[] = {
	{ "latency", VIRT_OPT_BOOL, 0, 0, "true", "h" },
	{ "max_vms", VIRT_OPT_UINT, 1, 100, "10", "h" },
	{ "path", VIRT_OPT_STRING, 0, 0, "/x", "h" },
};

static union virt_optval kv[3], vv[3];
static struct cfg_section secs[2];

static int parse(const char *text)
{
	log_buf[0] = '\0';
	log_lines = 0;
	secs[0] = (struct cfg_section){ .name = "kvm", .opts = opts, .nopts = 3, .vals = kv };
	secs[1] = (struct cfg_section){ .name = "virtio", .opts = opts, .nopts = 3, .vals = vv };
	cfg_section_reset(&secs[0], logger, NULL);
	cfg_section_reset(&secs[1], logger, NULL);
	return cfg_parse("virt.conf", text, strlen(text), secs, 2, logger, NULL);
}

int main(void)
{
	/* defaults */
	CHECK(parse("") == 0);
	CHECK(secs[0].enabled && kv[0].b && kv[1].u == 10 && strcmp(kv[2].s, "/x") == 0);

	/* values, comments, whitespace, both sections */
	CHECK(parse("# c\n; c\n[kvm]\n  latency = off  \nmax_vms=100\npath = /a b\n"
		    "[ virtio ]\nenabled = false\n") == 0);
	CHECK(!kv[0].b && kv[1].u == 100 && strcmp(kv[2].s, "/a b") == 0);
	CHECK(secs[0].enabled && !secs[0].broken);
	CHECK(!secs[1].enabled && !secs[1].broken);

	/* bad value: file, line, key and the expected range are named; only
	 * that section is broken */
	CHECK(parse("[virtio]\n[kvm]\n\nmax_vms = 101\n") == 1);
	CHECK(secs[0].broken && !secs[1].broken && secs[0].broken_line == 4);
	CHECK(strstr(log_buf, "virt.conf:4: [kvm] key 'max_vms': bad value '101' "
			      "(expected an integer from 1 to 100); module kvm disabled") != NULL);
	CHECK(parse("[kvm]\nmax_vms = -1\n") == 1 && secs[0].broken);
	CHECK(parse("[kvm]\nmax_vms = 1x\n") == 1 && secs[0].broken);
	CHECK(parse("[kvm]\nmax_vms = \n") == 1 && secs[0].broken);
	CHECK(parse("[kvm]\nmax_vms = 99999999999999999999999\n") == 1);
	CHECK(parse("[kvm]\nlatency = maybe\n") == 1 && secs[0].broken);
	CHECK(strstr(log_buf, "expected true or false") != NULL);
	CHECK(parse("[kvm]\nenabled = 2\n") == 1 && secs[0].broken);

	/* unknown key, missing '=', key before any section, unknown section */
	CHECK(parse("[kvm]\nlatencyy = true\n") == 1 && secs[0].broken);
	CHECK(strstr(log_buf, "virt.conf:2: [kvm] unknown key 'latencyy'") != NULL);
	CHECK(parse("[kvm]\nlatency\n") == 1 && secs[0].broken);
	CHECK(parse("latency = true\n[kvm]\n") == 1 && !secs[0].broken);
	CHECK(strstr(log_buf, "virt.conf:1: key 'latency' outside any [section]") != NULL);
	CHECK(parse("[vhostt]\nfoo = 1\n[kvm]\nlatency = no\n") == 1);
	CHECK(strstr(log_buf, "virt.conf:1: unknown section [vhostt] ignored") != NULL);
	CHECK(!secs[0].broken && !kv[0].b);	/* the rest of the file still applies */
	CHECK(parse("[kvm\n") == 1);
	CHECK(parse("[kvm] x\n") == 1);

	/* binary junk, NUL bytes, over-long lines, no trailing newline */
	CHECK(parse("[kvm]\nlatency = \x01\n") == 1 && secs[0].broken);
	{
		char big[3000];

		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		CHECK(parse(big) == 1);
		CHECK(strstr(log_buf, "line longer than") != NULL);
	}
	{
		const char nul[] = "[kvm]\nlat\0ency = 1\n";

		log_buf[0] = '\0';
		cfg_section_reset(&secs[0], logger, NULL);
		CHECK(cfg_parse("virt.conf", nul, sizeof(nul) - 1, secs, 2, logger, NULL) == 1);
	}
	CHECK(parse("[kvm]\nmax_vms = 5") == 0 && kv[1].u == 5);

	/* method: implicit in every section */
	CHECK(parse("[kvm]\nmethod = raw_tp\n[virtio]\nmethod = auto\n") == 0);
	CHECK(strcmp(secs[0].method, "raw_tp") == 0 && secs[1].method[0] == '\0');
	CHECK(parse("[kvm]\nmethod = raw-tp\n") == 1 && secs[0].broken);
	CHECK(parse("[kvm]\nmethod =\n") == 1 && secs[0].broken);

	/* value parsers used by storable metrics */
	{
		unsigned long long u;
		bool b;

		CHECK(cfg_parse_uint("0", 0, 5, &u) == 0 && u == 0);
		CHECK(cfg_parse_uint("+1", 0, 5, &u) < 0);
		CHECK(cfg_parse_uint(" 1", 0, 5, &u) < 0);
		CHECK(cfg_parse_bool("yes", &b) == 0 && b);
		CHECK(cfg_parse_bool("TRUE", &b) < 0);
	}
	cfg_section_free(&secs[0]);
	cfg_section_free(&secs[1]);
	return UNIT_DONE();
}
