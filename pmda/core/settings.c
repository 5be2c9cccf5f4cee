/*
 * The agent's configuration: its own options, the family modules it loads
 * (modules/virt_<name>.so, refused unless built with the agent's tables and
 * layout, pmda/core/layout.h, and answering each of its family's metrics)
 * and virt.conf parsed into every family's options (pmda/core/config.c).
 */
#include "agent.h"
#include "config.h"
#include "rows.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *virt_config_path;
const char *virt_module_dir;
unsigned long long virt_poll_ms = 2000;

static const struct virt_option agent_options[] = {
	{ "poll_interval_ms", VIRT_OPT_UINT, 100, 3600000, "2000",
	  "how often families that are not attached retry (e.g. once kvm_amd or vhost_net is "
	  "loaded)" },
	{ "percentile_window_s", VIRT_OPT_UINT, 1, 3600, "10",
	  "the *_p50/_p90/_p99 metrics cover what the histograms counted in the last this "
	  "many seconds" },
	{ "bpf_stats", VIRT_OPT_BOOL, 0, 0, "false",
	  "true: keep the kernel's BPF run-time statistics on while the agent runs "
	  "(virt.control.module.prog_*); costs two clock reads per run of every BPF program "
	  "on the host" },
};
#define AGENT_NOPTS VIRT_ARRAY_SIZE(agent_options)
static union virt_optval agent_vals[AGENT_NOPTS];

static void log_config(void *arg, const char *msg)
{
	(void)arg;
	pmNotifyErr(LOG_ERR, "config: %s", msg);
}

/* An option's help as "# " lines of at most 78 columns, cut at spaces. */
static void print_help(const char *text)
{
	const char *p = text;

	while (*p) {
		size_t cut = strlen(p);

		if (cut > 76) {
			for (cut = 76; cut > 0 && p[cut] != ' '; cut--)
				;
			if (cut == 0)		/* a word longer than a line */
				cut = strcspn(p, " ");
		}
		printf("# %.*s\n", (int)cut, p);
		for (p += cut; *p == ' '; p++)
			;
	}
}

static void print_option(const struct virt_option *o)
{
	char help[1024];

	if (o->type == VIRT_OPT_UINT)
		snprintf(help, sizeof(help), "%s (%llu..%llu)", o->help, o->min, o->max);
	else
		snprintf(help, sizeof(help), "%s", o->help);
	print_help(help);
	printf("%s = %s\n", o->key, o->defval);
}

static void print_section(const char *name, const struct virt_option *o, unsigned int n)
{
	printf("[%s]\nenabled = true\n# attach method: auto = the cheapest that works here\n"
	       "method = auto\n", name);
	for (unsigned int i = 0; i < n; i++)
		print_option(&o[i]);
	printf("\n");
}

/* pmdavirt -C: the default configuration, from the option tables. */
void virt_print_config(void)
{
	printf("# pmdavirt configuration: $PCP_SYSCONF_DIR/virt/virt.conf\n"
	       "# One section per metric family module; values shown are the defaults.\n"
	       "# A bad key or value disables that module only: the PMDA log\n"
	       "# ($PCP_LOG_DIR/pmcd/virt.log) names the file, line and key.\n\n");
	printf("[agent]\n");
	for (unsigned int i = 0; i < AGENT_NOPTS; i++)
		print_option(&agent_options[i]);
	printf("\n");
	for (int f = 1; f < VIRT_NFAMILIES; f++)
		if (virt_families[f].mod)
			print_section(virt_families[f].name, virt_families[f].mod->options,
				      virt_families[f].mod->noptions);
}

/* pmdavirt -C's verdict: every family's module loaded, or 1 with each
 * refusal on stderr (the build makes virt.conf so: a module whose answers
 * or options do not fit fails the build). */
int virt_modules_refused(void)
{
	int n = 0;

	for (int f = 1; f < VIRT_NFAMILIES; f++)
		if (!virt_families[f].mod && ++n)
			fprintf(stderr, "%s: %s\n", virt_families[f].name, virt_families[f].reason);
	return n != 0;
}

/* Does the module share the agent's layout of the shared structs
 * (VIRT_MODULE_LAYOUT)? If not, its status names the records that differ. */
static bool layout_matches(struct virt_family *fam, const char *path,
			   const struct virt_layout *ml)
{
	const struct virt_layout *al = VIRT_MODULE_LAYOUT;
	char diff[VIRT_REASON_MAX] = "";
	size_t n = 0;

	if (ml && ml->hash == al->hash)
		return true;
	/* what differs: records of the agent's the module has otherwise or
	 * not at all, then records the agent does not have */
	for (unsigned int i = 0; ml && i < al->nrecords && n < sizeof(diff); i++) {
		const struct virt_layout_record *a = &al->records[i], *m = NULL;

		for (unsigned int j = 0; j < ml->nrecords && !m; j++)
			if (strcmp(ml->records[j].name, a->name) == 0)
				m = &ml->records[j];
		if (!m)
			n += snprintf(diff + n, sizeof(diff) - n, "%s%s: missing", n ? "; " : "", a->name);
		else if (m->size != a->size)
			n += snprintf(diff + n, sizeof(diff) - n, "%s%s: %llu bytes, the agent's %llu",
				      n ? "; " : "", a->name, (unsigned long long)m->size,
				      (unsigned long long)a->size);
		else if (m->hash != a->hash)
			n += snprintf(diff + n, sizeof(diff) - n, "%s%s: laid out otherwise",
				      n ? "; " : "", a->name);
	}
	for (unsigned int j = 0; ml && j < ml->nrecords && n < sizeof(diff); j++) {
		bool known = false;

		for (unsigned int i = 0; i < al->nrecords && !known; i++)
			known = strcmp(ml->records[j].name, al->records[i].name) == 0;
		if (!known)
			n += snprintf(diff + n, sizeof(diff) - n, "%s%s: not in the agent",
				      n ? "; " : "", ml->records[j].name);
	}
	pmNotifyErr(LOG_ERR, "%s: layout %016llx, the agent's %016llx: %s", path,
		    ml ? (unsigned long long)ml->hash : 0ULL, (unsigned long long)al->hash,
		    ml ? diff : "no layout");
	virt_set_reason(fam, "%s: built with another layout of the structs shared with the agent "
			"(%s): rebuild and install both", path, ml ? diff : "none recorded");
	return false;
}

/* Does the answer fit the metric: an instance domain's answer on the
 * metric's instance domain, a state's or event records' on none? */
static bool answer_fits(const struct virt_answer *a, pmInDom indom)
{
	switch (a->kind) {
	case VIRT_ANS_NONE:
		return false;
	case VIRT_ANS_NOVALUES:
		return true;
	case VIRT_ANS_STATE:
	case VIRT_ANS_EVENTS:
		return indom == PM_INDOM_NULL;
	default:
		return virt_indom(a->indom) == indom;
	}
}

/* Every metric of family f answered, on its instance domain, all answers
 * on one instance domain from one entry type, no other family's metric
 * answered: 0, or -1 with the first mismatch in why. */
int virt_answers_check(enum virt_family_id f, const struct virt_answer *answers, char *why,
		       size_t len)
{
	const char *entry[VIRT_NINDOMS] = { NULL };
	int first[VIRT_NINDOMS];

	for (int m = 0; m < VIRT_NMETRICS; m++) {
		const struct virt_answer *a = answers ? &answers[m] : NULL;
		const char *name = virt_metric_info[m].name;
		bool mine = virt_metric_info[m].family == f;

		if (!mine || virt_metric_info[m].event_param) {
			if (a && a->kind != VIRT_ANS_NONE && a->kind != VIRT_ANS_NOVALUES)
				return snprintf(why, len, "answers virt.%s, %s", name, mine ?
						"an event parameter (values only in records)" :
						"another family's metric"), -1;
			continue;
		}
		if (!a || !answer_fits(a, virt_metrictab[m].m_desc.indom))
			return snprintf(why, len, "virt.%s %s", name, a && a->kind != VIRT_ANS_NONE ?
					"answered on another instance domain" : "has no answer"), -1;
		/* struct virt_keyed: the head of every table's entry */
		if (!a->entry || strcmp(a->entry, "struct virt_keyed") == 0)
			continue;
		if (!entry[a->indom]) {
			entry[a->indom] = a->entry;
			first[a->indom] = m;
		} else if (strcmp(entry[a->indom], a->entry) != 0) {
			return snprintf(why, len, "virt.%s answers from %s, virt.%s from %s, one instance domain",
					virt_metric_info[first[a->indom]].name, entry[a->indom], name,
					a->entry), -1;
		}
	}
	return 0;
}

/* A module whose answers do not fit the tables is refused (pmdavirt -C,
 * at build time, then fails). */
static bool answers_match(struct virt_family *fam, const char *path, const struct virt_module *mod)
{
	char why[VIRT_REASON_MAX];

	if (virt_answers_check((enum virt_family_id)(fam - virt_families), mod->answers, why,
			       sizeof(why)) == 0)
		return true;
	pmNotifyErr(LOG_ERR, "%s: %s", path, why);
	virt_set_reason(fam, "%s: %s: rebuild the module", path, why);
	return false;
}

void virt_load_modules(void)
{
	for (int f = 0; f < VIRT_NFAMILIES; f++) {
		struct virt_family *fam = &virt_families[f];
		char path[PATH_MAX];
		const struct virt_module *mod;
		void *dl;

		if (f == VIRT_F_CONTROL)
			continue;
		snprintf(path, sizeof(path), "%s/virt_%s.so", virt_module_dir, fam->name);
		dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!dl) {
			virt_set_reason(fam, "cannot load module: %s", dlerror());
			continue;
		}
		mod = dlsym(dl, "virt_module");
		if (!mod || strcmp(mod->name, fam->name) != 0) {
			virt_set_reason(fam, "%s: not a pmdavirt module for %s", path, fam->name);
			dlclose(dl);
			continue;
		}
		if (mod->abi != VIRT_MODULE_ABI) {
			virt_set_reason(fam, "%s: built for module version %u with metric tables %08x, "
					"the agent has %u with %08x: rebuild and install both",
					path, (unsigned int)(mod->abi >> 32), (unsigned int)mod->abi,
					VIRT_MODULE_VERSION, (unsigned int)VIRT_TABLES_CRC);
			dlclose(dl);
			continue;
		}
		if (!layout_matches(fam, path, mod->layout) || !answers_match(fam, path, mod)) {
			dlclose(dl);
			continue;
		}
		fam->mod = mod;
		fam->opts = calloc(mod->noptions ? mod->noptions : 1, sizeof(*fam->opts));
	}
}

/* Parse virt.conf into the families' options. A family whose module failed
 * to load still gets its section checked for "enabled"; its other options
 * cannot be checked, and its status keeps the reason it did not load. */
void virt_load_config(void)
{
	struct cfg_section secs[VIRT_NFAMILIES];
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	secs[0] = (struct cfg_section){ .name = "agent", .opts = agent_options,
					.nopts = AGENT_NOPTS, .vals = agent_vals };
	for (int i = 1; i < VIRT_NFAMILIES; i++) {
		const struct virt_module *mod = virt_families[i].mod;

		secs[i] = (struct cfg_section){ .name = virt_families[i].name,
			.opts = mod ? mod->options : NULL, .nopts = mod ? mod->noptions : 0,
			.vals = virt_families[i].opts };
	}
	for (int i = 0; i < VIRT_NFAMILIES; i++)
		cfg_section_reset(&secs[i], log_config, NULL);

	f = fopen(virt_config_path, "r");
	if (!f) {
		pmNotifyErr(LOG_WARNING, "config: %s: %s; every module enabled with defaults",
			    virt_config_path, strerror(errno));
	} else {
		FILE *mem = open_memstream(&text, &len);
		char buf[4096];
		size_t n;

		while (mem && (n = fread(buf, 1, sizeof(buf), f)) > 0)
			fwrite(buf, 1, n, mem);
		fclose(f);
		if (mem)
			fclose(mem);
		cfg_parse(virt_config_path, text, len, secs, VIRT_NFAMILIES, log_config, NULL);
		free(text);
	}
	virt_poll_ms = agent_vals[0].u;
	virt_rows_set_window(agent_vals[1].u * 1000);
	virt_progstats_hold(agent_vals[2].b);
	for (int i = 1; i < VIRT_NFAMILIES; i++) {
		struct virt_family *fam = &virt_families[i];

		fam->state = VIRT_DISABLED;
		_Static_assert(sizeof(fam->want_method) == sizeof(secs[i].method), "method size");
		memcpy(fam->want_method, secs[i].method, sizeof(fam->want_method));
		if (secs[i].broken && fam->mod)
			virt_set_reason(fam, "bad configuration at %s:%d (details in the PMDA log)",
					virt_config_path, secs[i].broken_line);
		else if (secs[i].enabled)	/* without a module, reason says why */
			fam->state = VIRT_UNAVAILABLE;
		else
			fam->reason[0] = '\0';
	}
}

