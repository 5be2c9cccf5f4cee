/* libFuzzer harness for the virt.conf parser (pmda/core/config.c): any bytes in,
 * no crash, no leak, no sanitizer report; every reported problem carries
 * the file name. Built by `make fuzz` with clang -fsanitize=fuzzer,address,
 * undefined. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_message(void *arg, const char *msg)
{
	(void)arg;
	if (strncmp(msg, "virt.conf", 9) != 0 && msg[0] != '[')
		abort();		/* every message names the file (or section) */
}

static const struct virt_option opts[] = {
	{ "latency", VIRT_OPT_BOOL, 0, 0, "true", "h" },
	{ "max_vms", VIRT_OPT_UINT, 1, 65536, "1024", "h" },
	{ "path", VIRT_OPT_STRING, 0, 0, "/x", "h" },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	union virt_optval a[3], b[3];
	struct cfg_section secs[2] = {
		{ .name = "kvm", .opts = opts, .nopts = 3, .vals = a },
		{ .name = "vhost", .opts = opts, .nopts = 3, .vals = b },
	};

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	cfg_section_reset(&secs[0], check_message, NULL);
	cfg_section_reset(&secs[1], check_message, NULL);
	cfg_parse("virt.conf", (const char *)data, size, secs, 2, check_message, NULL);
	if (secs[0].broken && secs[0].broken_line <= 0)
		abort();
	cfg_section_free(&secs[0]);
	cfg_section_free(&secs[1]);
	return 0;
}
