#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void report(cfg_log_fn log, void *arg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void report(cfg_log_fn log, void *arg, const char *fmt, ...)
{
	char msg[CFG_LINE_MAX + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log)
		log(arg, msg);
}

int cfg_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < VIRT_ARRAY_SIZE(yes); i++) {
		if (strcmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

int cfg_parse_uint(const char *s, unsigned long long min,
		   unsigned long long max, unsigned long long *out)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -1;		/* no sign, no space, no empty string */
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int set_value(const struct virt_option *opt, union virt_optval *val,
		     const char *text)
{
	switch (opt->type) {
	case VIRT_OPT_BOOL:
		return cfg_parse_bool(text, &val->b);
	case VIRT_OPT_UINT:
		return cfg_parse_uint(text, opt->min, opt->max, &val->u);
	case VIRT_OPT_STRING: {
		char *copy = strdup(text);

		if (!copy)
			return -1;
		free(val->s);
		val->s = copy;
		return 0;
	}
	}
	return -1;
}

static const char *type_hint(const struct virt_option *opt, char *buf, size_t len)
{
	switch (opt->type) {
	case VIRT_OPT_BOOL:
		return "true or false";
	case VIRT_OPT_UINT:
		snprintf(buf, len, "an integer from %llu to %llu", opt->min, opt->max);
		return buf;
	case VIRT_OPT_STRING:
		return "a string";
	}
	return "?";
}

int cfg_section_reset(struct cfg_section *sec, cfg_log_fn log, void *arg)
{
	int bad = 0;

	sec->enabled = true;
	sec->method[0] = '\0';
	sec->broken = false;
	sec->broken_line = 0;
	for (unsigned int i = 0; i < sec->nopts; i++) {
		if (set_value(&sec->opts[i], &sec->vals[i], sec->opts[i].defval) < 0) {
			report(log, arg, "[%s] built-in default %s = %s is invalid",
			       sec->name, sec->opts[i].key, sec->opts[i].defval);
			sec->broken = true;
			bad++;
		}
	}
	return bad;
}

void cfg_section_free(struct cfg_section *sec)
{
	for (unsigned int i = 0; i < sec->nopts; i++) {
		if (sec->opts[i].type == VIRT_OPT_STRING) {
			free(sec->vals[i].s);
			sec->vals[i].s = NULL;
		}
	}
}

static char *trim(char *s)
{
	char *e;

	while (*s && isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if (!isprint((unsigned char)*s))
			return false;
	return true;
}

static struct cfg_section *find_section(struct cfg_section *secs,
					unsigned int nsecs, const char *name)
{
	for (unsigned int i = 0; i < nsecs; i++)
		if (strcmp(secs[i].name, name) == 0)
			return &secs[i];
	return NULL;
}

struct parse_state {
	const char *file;
	struct cfg_section *secs;
	unsigned int nsecs;
	struct cfg_section *cur;	/* NULL before a header or in an unknown one */
	bool in_unknown;
	cfg_log_fn log;
	void *arg;
	int problems;
};

static void problem(struct parse_state *ps, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void problem(struct parse_state *ps, int line, const char *fmt, ...)
{
	char what[CFG_LINE_MAX + 128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (ps->cur) {
		report(ps->log, ps->arg, "%s:%d: [%s] %s; module %s disabled",
		       ps->file, line, ps->cur->name, what, ps->cur->name);
		if (!ps->cur->broken)
			ps->cur->broken_line = line;
		ps->cur->broken = true;
	} else {
		report(ps->log, ps->arg, "%s:%d: %s", ps->file, line, what);
	}
	ps->problems++;
}

static void parse_header(struct parse_state *ps, int line, char *s)
{
	char *end = strchr(s, ']');
	char *name;

	ps->cur = NULL;
	ps->in_unknown = true;
	if (!end || *trim(end + 1) != '\0') {
		problem(ps, line, "malformed section header '%s' (expected [name])", s);
		return;
	}
	*end = '\0';
	name = trim(s + 1);
	ps->cur = find_section(ps->secs, ps->nsecs, name);
	if (!ps->cur) {
		problem(ps, line, "unknown section [%s] ignored", name);
		return;
	}
	ps->in_unknown = false;
}

static void parse_assignment(struct parse_state *ps, int line, char *s)
{
	char *eq = strchr(s, '=');
	char *key, *value, hint[96];
	const struct virt_option *opt = NULL;
	unsigned int i;

	if (!eq) {
		problem(ps, line, "expected 'key = value', found '%s'", s);
		return;
	}
	*eq = '\0';
	key = trim(s);
	value = trim(eq + 1);
	if (!ps->cur) {
		if (!ps->in_unknown)
			problem(ps, line, "key '%s' outside any [section]", key);
		return;			/* unknown section: reported at its header */
	}
	if (strcmp(key, "enabled") == 0) {
		if (cfg_parse_bool(value, &ps->cur->enabled) < 0)
			problem(ps, line, "key '%s': bad value '%s' (expected %s)",
				key, value, "true or false");
		return;
	}
	if (strcmp(key, "method") == 0) {
		size_t n = strspn(value, "abcdefghijklmnopqrstuvwxyz_");

		if (value[n] != '\0' || n == 0 || n >= sizeof(ps->cur->method))
			problem(ps, line, "key '%s': bad value '%s' (expected auto or a method name)",
				key, value);
		else
			snprintf(ps->cur->method, sizeof(ps->cur->method), "%s",
				 strcmp(value, "auto") == 0 ? "" : value);
		return;
	}
	for (i = 0; i < ps->cur->nopts; i++) {
		if (strcmp(ps->cur->opts[i].key, key) == 0) {
			opt = &ps->cur->opts[i];
			break;
		}
	}
	if (!opt) {
		problem(ps, line, "unknown key '%s'", key);
		return;
	}
	if (set_value(opt, &ps->cur->vals[i], value) < 0)
		problem(ps, line, "key '%s': bad value '%s' (expected %s)", key, value,
			type_hint(opt, hint, sizeof(hint)));
}

int cfg_parse(const char *file, const char *text, size_t len,
	      struct cfg_section *secs, unsigned int nsecs,
	      cfg_log_fn log, void *arg)
{
	struct parse_state ps = {
		.file = file, .secs = secs, .nsecs = nsecs, .log = log, .arg = arg,
	};
	char buf[CFG_LINE_MAX];
	size_t pos = 0;
	int line = 0;

	while (pos < len) {
		size_t n = 0;
		bool too_long = false;
		char *s;

		line++;
		while (pos < len && text[pos] != '\n') {
			if (n >= sizeof(buf) - 1)
				too_long = true;
			else if (text[pos] == '\0')
				buf[n++] = '\x01';	/* caught as non-printable */
			else
				buf[n++] = text[pos];
			pos++;
		}
		pos++;			/* the newline */
		buf[n] = '\0';
		if (too_long) {
			problem(&ps, line, "line longer than %d characters", CFG_LINE_MAX - 1);
			continue;
		}
		s = trim(buf);
		if (*s == '\0' || *s == '#' || *s == ';')
			continue;
		if (!printable(s)) {
			problem(&ps, line, "non-printable character in line");
			continue;
		}
		if (*s == '[')
			parse_header(&ps, line, s);
		else
			parse_assignment(&ps, line, s);
	}
	return ps.problems;
}
