/*
 * The PMDA log: virt_log for the agent and its modules, libbpf's messages,
 * and the lines of an attach held until the attach says whether to write
 * them.
 */
#include "agent.h"

#include <bpf/libbpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The log lines of an attach (libbpf's messages, each method's failure,
 * the BTF index) are held, and written only if the attach succeeds or
 * fails for a reason not logged before: a family retrying with the same
 * failure would write the same dozen lines at every try. */
static struct {
	FILE *f;
	char *text;
	size_t len;
} held;

void virt_log(int priority, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (held.f)
		fprintf(held.f, "%d %s\n", priority, msg);
	else
		pmNotifyErr(priority, "%s", msg);
}

/* libbpf hands over multi-line messages (a verifier log on a failed load):
 * one log line each, so the reason for a rejection reaches the PMDA log. */
int virt_libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	int priority = level == LIBBPF_WARN ? LOG_WARNING : LOG_DEBUG;
	char msg[16384];
	int lines = 0;

	if (level == LIBBPF_DEBUG && !pmDebugOptions.appl0)
		return 0;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	for (char *line = msg, *end; *line; line = end) {
		end = line + strcspn(line, "\n");
		if (*end)
			*end++ = '\0';
		if (!*line || lines++ >= 400)
			continue;
		if (held.f)
			fprintf(held.f, "%d libbpf: %s\n", priority, line);
		else
			pmNotifyErr(priority, "libbpf: %s", line);
	}
	return 0;
}

void virt_log_hold(void)
{
	held.f = open_memstream(&held.text, &held.len);
}

void virt_log_release(bool write)
{
	if (!held.f)
		return;
	fclose(held.f);
	held.f = NULL;
	for (char *line = held.text, *end; write && line && *line; line = end) {
		char *text;
		int priority = (int)strtol(line, &text, 10);

		end = line + strcspn(line, "\n");
		if (*end)
			*end++ = '\0';
		pmNotifyErr(priority, "%s", text + 1);
	}
	free(held.text);
	held.text = NULL;
}
