/*
 * virt.conf parser: INI-style sections, one per family module.
 *
 *   # comment            ; comment
 *   [kvm]
 *   enabled = true
 *   max_vms = 1024
 *
 * Every section also takes "enabled = true|false" and "method = auto|<name>"
 * (pin the attach method, e.g. fentry, kprobe, tp_btf, raw_tp, tracepoint).
 *
 * Pure C (no PCP), so it is unit-tested and fuzzed on its own. Every problem
 * is reported through the log callback with file, line and key; a problem in
 * a section marks that section broken (the agent then disables its module),
 * the rest of the file still applies.
 */
#ifndef VIRT_CONFIG_H
#define VIRT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include "array.h"

enum virt_opt_type { VIRT_OPT_BOOL, VIRT_OPT_UINT, VIRT_OPT_STRING };

struct virt_option {
	const char *key;
	enum virt_opt_type type;
	unsigned long long min, max;	/* VIRT_OPT_UINT range, inclusive */
	const char *defval;		/* as it would be written in the file */
	const char *help;		/* one line, printed into the default virt.conf */
};

union virt_optval {
	bool b;
	unsigned long long u;
	char *s;			/* owned by the section; see cfg_section_reset */
};

/* What the parser knows about one section: its options and where to put
 * the values. "enabled" is implicit in every section. */
struct cfg_section {
	const char *name;
	const struct virt_option *opts;
	unsigned int nopts;
	union virt_optval *vals;	/* nopts entries */
	bool enabled;
	char method[32];		/* "method = ..." (implicit key): "" = auto */
	bool broken;			/* a value in this section was bad */
	int broken_line;		/* line of the first problem in it */
};

typedef void (*cfg_log_fn)(void *arg, const char *msg);

#define CFG_LINE_MAX 1024

/* Set defaults (enabled = true, method auto, every option's defval) and
 * clear broken. */
int cfg_section_reset(struct cfg_section *sec, cfg_log_fn log, void *arg);
/* Free string values. */
void cfg_section_free(struct cfg_section *sec);

/* Parse text (need not be NUL-terminated) named file in messages. Returns the
 * number of problems reported (0 = clean). Unknown sections are reported but
 * break nothing; problems before any section header are reported as such. */
int cfg_parse(const char *file, const char *text, size_t len,
	      struct cfg_section *secs, unsigned int nsecs,
	      cfg_log_fn log, void *arg);

/* Value parsers (also unit-tested alone in qa/unit/t_config). 0 or -1. */
int cfg_parse_bool(const char *s, bool *out);
int cfg_parse_uint(const char *s, unsigned long long min,
		   unsigned long long max, unsigned long long *out);

#endif
