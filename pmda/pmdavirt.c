/*
 * pmdavirt: the PCP agent for virtualization metrics (domain VIRT_DOMAIN).
 *
 * The agent owns the namespace (metrics/<family>.def), the config file and the
 * status metrics; each metric family is a module (modules/virt_<name>.so)
 * with its own BPF object. A module that is disabled, broken or cannot attach
 * leaves its metrics in the namespace with no values, and never takes the
 * agent or another family down. Families that are not attached are polled
 * cheaply (module->ready) and attach by themselves when the kernel grows what
 * they need, e.g. when kvm_amd or vhost_net is loaded after boot.
 */
#include "virt.h"
#include "config.h"
#include "privs.h"
#include "rows.h"

#include <bpf/libbpf.h>
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define VIRT_VERSION "0.1.0"

/* ---------------------------------------------------------------- tables */

struct metric_info {
	enum virt_metric_id id;
	enum virt_family_id family;
	const char *name;		/* below "virt." */
};

static const struct metric_info metric_info[VIRT_NMETRICS] = {
#define VIRT_METRIC(fam, id, name, item, type, indom, sem, units) \
	[VIRT_M_##id] = { VIRT_M_##id, VIRT_F_##fam, name },
#include "../metrics/all.def"
};

#define U_NONE	PMDA_PMUNITS(0, 0, 0, 0, 0, 0)
#define U_COUNT	PMDA_PMUNITS(0, 0, 1, 0, 0, PM_COUNT_ONE)
#define U_NSEC	PMDA_PMUNITS(0, 1, 0, 0, PM_TIME_NSEC, 0)
#define U_BYTE	PMDA_PMUNITS(1, 0, 0, PM_SPACE_BYTE, 0, 0)
#define I_NULL	PM_INDOM_NULL
#define SERIAL(id) VIRT_SERIAL_##id
enum {
#define VIRT_INDOM(fam, id, serial, text) VIRT_SERIAL_##id = serial,
#include "../metrics/all.def"
	VIRT_SERIAL_NOINDOM = -1
};
#define INDOM_OF(indom) ((pmInDom)(SERIAL(indom) < 0 ? PM_INDOM_NULL : (pmInDom)SERIAL(indom)))

static pmdaMetric metrictab[VIRT_NMETRICS] = {
#define VIRT_METRIC(fam, id, name, item, type, indom, sem, units)		\
	[VIRT_M_##id] = { (void *)&metric_info[VIRT_M_##id],			\
		{ PMDA_PMID(VIRT_CLUSTER_##fam, item), type, INDOM_OF(indom), sem, \
		  U_##units } },
#include "../metrics/all.def"
};

static pmdaInstid module_insts[VIRT_NFAMILIES - 1];

static pmdaIndom indomtab[VIRT_NINDOMS] = {
#define VIRT_INDOM(fam, id, serial, text) [VIRT_I_##id] = { serial, 0, NULL },
#include "../metrics/all.def"
};

static const enum virt_family_id indom_family[VIRT_NINDOMS] = {
#define VIRT_INDOM(fam, id, serial, text) [VIRT_I_##id] = VIRT_F_##fam,
#include "../metrics/all.def"
};

static struct virt_family families[VIRT_NFAMILIES] = {
#define VIRT_FAMILY(id, fname, clus) [VIRT_F_##id] = { .name = fname, .cluster = clus },
#include "../metrics/all.def"
};

pmInDom virt_indom(enum virt_indom_id id)
{
	return indomtab[id].it_indom;
}

void virt_set_reason(struct virt_family *fam, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fam->reason, sizeof(fam->reason), fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------ PMNS dump */

/* Print the namespace in PMNS syntax (pmdavirt -n): every non-leaf node,
 * outermost first, with its children in table order. Used at build time for
 * the pmns file that Install merges and newhelp compiles the help against. */
static void print_node(const char *node)
{
	size_t len = strlen(node);
	char *kids[VIRT_NMETRICS] = { NULL };
	size_t nkids = 0;

	printf("%s {\n", node);
	for (int m = 0; m < VIRT_NMETRICS; m++) {
		char full[256];
		const char *rest;
		size_t n;
		bool dup = false;

		snprintf(full, sizeof(full), "virt.%s", metric_info[m].name);
		if (strncmp(full, node, len) != 0 || full[len] != '.')
			continue;
		rest = full + len + 1;
		n = strcspn(rest, ".");
		for (size_t k = 0; k < nkids; k++)
			dup |= strlen(kids[k]) == n && strncmp(kids[k], rest, n) == 0;
		if (dup)
			continue;
		kids[nkids++] = strndup(rest, n);
		if (rest[n] == '\0')
			printf("    %s\t%d:%u:%u\n", rest, VIRT_DOMAIN,
			       pmID_cluster(metrictab[m].m_desc.pmid),
			       pmID_item(metrictab[m].m_desc.pmid));
		else
			printf("    %.*s\n", (int)n, rest);
	}
	printf("}\n\n");
	for (size_t k = 0; k < nkids; k++)
		free(kids[k]);
}

static void print_pmns(void)
{
	char *nodes[VIRT_NMETRICS * 8] = { NULL };
	size_t nnodes = 0;

	for (int depth = 1; depth < 8; depth++) {
		for (int m = 0; m < VIRT_NMETRICS; m++) {
			char full[256], *p = full;
			bool dup = false;

			snprintf(full, sizeof(full), "virt.%s", metric_info[m].name);
			for (int d = 0; d < depth && p; d++)
				p = strchr(p + 1, '.');
			if (!p)
				continue;
			*p = '\0';
			for (size_t i = 0; i < nnodes; i++)
				dup |= strcmp(nodes[i], full) == 0;
			if (!dup) {
				nodes[nnodes++] = strdup(full);
				print_node(full);
			}
		}
	}
	for (size_t i = 0; i < nnodes; i++)
		free(nodes[i]);
}

/* --------------------------------------------------------------- config */

static char *config_path;
static char *module_dir;
static unsigned long long poll_ms = 2000;

static const struct virt_option agent_options[] = {
	{ "poll_interval_ms", VIRT_OPT_UINT, 100, 3600000, "2000",
	  "how often families that are not attached retry (e.g. once kvm_amd or vhost_net is loaded)" },
	{ "percentile_window_s", VIRT_OPT_UINT, 1, 3600, "10",
	  "the *_p50/_p90/_p99 metrics cover what the histograms counted in the last this many seconds" },
};
#define AGENT_NOPTS (sizeof(agent_options) / sizeof(agent_options[0]))
static union virt_optval agent_vals[AGENT_NOPTS];

static void log_config(void *arg, const char *msg)
{
	(void)arg;
	pmNotifyErr(LOG_ERR, "config: %s", msg);
}

static void print_section(const char *name, const struct virt_option *o, unsigned int n)
{
	printf("[%s]\nenabled = true\n# attach method: auto = the cheapest that works here\nmethod = auto\n", name);
	for (unsigned int i = 0; i < n; i++) {
		if (o[i].type == VIRT_OPT_UINT)
			printf("# %s (%llu..%llu)\n", o[i].help, o[i].min, o[i].max);
		else
			printf("# %s\n", o[i].help);
		printf("%s = %s\n", o[i].key, o[i].defval);
	}
	printf("\n");
}

/* pmdavirt -C: the default configuration, from the option tables. */
static void print_config(void)
{
	printf("# pmdavirt configuration: $PCP_SYSCONF_DIR/virt/virt.conf\n"
	       "# One section per metric family module; values shown are the defaults.\n"
	       "# A bad key or value disables that module only: the PMDA log\n"
	       "# ($PCP_LOG_DIR/pmcd/virt.log) names the file, line and key.\n\n");
	printf("[agent]\n");
	for (unsigned int i = 0; i < AGENT_NOPTS; i++)
		printf("# %s\n%s = %s\n", agent_options[i].help, agent_options[i].key,
		       agent_options[i].defval);
	printf("\n");
	for (int f = 1; f < VIRT_NFAMILIES; f++)
		if (families[f].mod)
			print_section(families[f].name, families[f].mod->options,
				      families[f].mod->noptions);
}

static void load_modules(void)
{
	for (int f = 0; f < VIRT_NFAMILIES; f++) {
		struct virt_family *fam = &families[f];
		char path[PATH_MAX];
		const struct virt_module *mod;
		void *dl;

		if (f == VIRT_F_CONTROL)
			continue;
		snprintf(path, sizeof(path), "%s/virt_%s.so", module_dir, fam->name);
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
		fam->mod = mod;
		fam->opts = calloc(mod->noptions ? mod->noptions : 1, sizeof(*fam->opts));
	}
}

/* Parse virt.conf into the families' options. A family whose module failed
 * to load still gets its section checked for "enabled"; its other options
 * cannot be checked, and its status keeps the reason it did not load. */
static void load_config(void)
{
	struct cfg_section secs[VIRT_NFAMILIES];
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	secs[0] = (struct cfg_section){ .name = "agent", .opts = agent_options,
					.nopts = AGENT_NOPTS, .vals = agent_vals };
	for (int i = 1; i < VIRT_NFAMILIES; i++) {
		const struct virt_module *mod = families[i].mod;

		secs[i] = (struct cfg_section){ .name = families[i].name,
			.opts = mod ? mod->options : NULL, .nopts = mod ? mod->noptions : 0,
			.vals = families[i].opts };
	}
	for (int i = 0; i < VIRT_NFAMILIES; i++)
		cfg_section_reset(&secs[i], log_config, NULL);

	f = fopen(config_path, "r");
	if (!f) {
		pmNotifyErr(LOG_WARNING, "config: %s: %s; every module enabled with defaults",
			    config_path, strerror(errno));
	} else {
		FILE *mem = open_memstream(&text, &len);
		char buf[4096];
		size_t n;

		while (mem && (n = fread(buf, 1, sizeof(buf), f)) > 0)
			fwrite(buf, 1, n, mem);
		fclose(f);
		if (mem)
			fclose(mem);
		cfg_parse(config_path, text, len, secs, VIRT_NFAMILIES, log_config, NULL);
		free(text);
	}
	poll_ms = agent_vals[0].u;
	virt_rows_set_window(agent_vals[1].u * 1000);
	for (int i = 1; i < VIRT_NFAMILIES; i++) {
		struct virt_family *fam = &families[i];

		fam->state = VIRT_DISABLED;
		_Static_assert(sizeof(fam->want_method) == sizeof(secs[i].method), "method size");
		memcpy(fam->want_method, secs[i].method, sizeof(fam->want_method));
		if (!fam->mod && secs[i].enabled)	/* its options are unknown without */
			fam->state = VIRT_UNAVAILABLE;	/* it: reason says why it did not load */
		else if (secs[i].broken && fam->mod)
			virt_set_reason(fam, "bad configuration at %s:%d (details in the PMDA log)",
					config_path, secs[i].broken_line);
		else if (!secs[i].enabled || !fam->mod)
			fam->reason[0] = '\0';
		else
			fam->state = VIRT_UNAVAILABLE;
	}
}

/* ------------------------------------------------------ attach / detach */

static void set_state(struct virt_family *fam, enum virt_state state)
{
	static const char *const names[] = { "disabled", "unavailable", "active" };

	if (fam->state != state)
		pmNotifyErr(LOG_INFO, "%s: %s%s%s", fam->name, names[state],
			    state == VIRT_ACTIVE ? " via " : fam->reason[0] ? ": " : "",
			    state == VIRT_ACTIVE ? fam->method : fam->reason);
	fam->state = state;
}

static uint64_t now_ms(void)
{
	return virt_mono_ns() / 1000000;
}

/* Everything runs in the one thread that answers pmcd, and pmcd gives an
 * agent 5 s (pmcd -t) before it drops it: say which step was slow. */
#define VIRT_SLOW_MS 1000

static void note_slow(const struct virt_family *fam, const char *what, uint64_t start)
{
	uint64_t ms = now_ms() - start;

	if (ms >= VIRT_SLOW_MS)
		pmNotifyErr(LOG_WARNING, "%s: %s took %llu ms", fam->name, what, (unsigned long long)ms);
}

/* Failed attaches of a family whose prerequisites are there (ready())
 * are retried after 1, 2, 4 ... up to 32 poll intervals, not at every
 * poll: each try loads and verifies the whole BPF object. The prerequisites
 * going away and coming back (a kernel module reloaded) start over. */
#define RETRY_MAX_SHIFT 5
static struct {
	unsigned int failures;
	uint64_t at_ms;
} retry[VIRT_NFAMILIES];

static bool retry_due(struct virt_family *fam)
{
	return !retry[fam - families].failures || now_ms() >= retry[fam - families].at_ms;
}

static void retry_later(struct virt_family *fam)
{
	unsigned int n = retry[fam - families].failures++;
	uint64_t wait = poll_ms << (n < RETRY_MAX_SHIFT ? n : RETRY_MAX_SHIFT);

	retry[fam - families].at_ms = now_ms() + wait;
	pmNotifyErr(LOG_INFO, "%s: next attach attempt in %llu s", fam->name,
		    (unsigned long long)(wait + 999) / 1000);
}

static void try_attach(struct virt_family *fam)
{
	uint64_t start;
	int rc;

	if (!fam->mod)
		return;
	if (fam->mod->ready && !fam->mod->ready(fam)) {
		retry[fam - families].failures = 0;
		return;
	}
	if (!retry_due(fam))
		return;
	fam->attach_attempts++;
	fam->reason[0] = '\0';
	start = now_ms();
	rc = fam->mod->attach(fam);
	if (rc == VIRT_ATTACHED) {
		pmNotifyErr(LOG_INFO, "%s: attached in %llu ms", fam->name,
			    (unsigned long long)(now_ms() - start));
		retry[fam - families].failures = 0;
		set_state(fam, VIRT_ACTIVE);
	} else {
		note_slow(fam, "failed attach", start);
		if (!fam->reason[0])
			virt_set_reason(fam, "attach failed: %s", strerror(rc < 0 ? -rc : EAGAIN));
		set_state(fam, VIRT_UNAVAILABLE);
		if (rc < 0)
			retry_later(fam);
	}
}

static void detach(struct virt_family *fam)
{
	if (fam->state == VIRT_ACTIVE && fam->mod->detach)
		fam->mod->detach(fam);
	fam->programs = 0;
	fam->method[0] = '\0';
}

/* Called every poll interval and once at start-up. */
static void poll_families(void)
{
	for (int i = 1; i < VIRT_NFAMILIES; i++) {
		struct virt_family *fam = &families[i];
		uint64_t start;
		bool ready;

		if (fam->state == VIRT_UNAVAILABLE) {
			try_attach(fam);
			continue;
		}
		if (fam->state != VIRT_ACTIVE || !fam->mod->ready)
			continue;
		start = now_ms();
		ready = fam->mod->ready(fam);
		note_slow(fam, "readiness check", start);
		if (!ready) {
			/* e.g. the kernel module we probe was unloaded */
			detach(fam);
			if (!fam->reason[0])
				virt_set_reason(fam, "kernel support went away");
			set_state(fam, VIRT_UNAVAILABLE);
		}
	}
	virt_btf_targets_release();
}

/* ----------------------------------------------------------------- fetch */

static uint64_t refreshes;

/* Percentile windows of rows gone idle are freed: once a
 * megabyte of them is, hand the pages back to the system, which glibc
 * does not do by itself for freed chunks below allocations still in use. */
static void give_back_windows(void)
{
	static size_t freed;

	freed += virt_rows_freed();
	if (freed >= 1 << 20) {
		malloc_trim(0);
		freed = 0;
	}
}

static void refresh_family(struct virt_family *fam)
{
	uint64_t start;
	int rc;

	if (fam->state != VIRT_ACTIVE || !fam->mod->refresh)
		return;
	refreshes++;
	start = now_ms();
	rc = fam->mod->refresh(fam);
	note_slow(fam, "refresh", start);
	if (rc < 0)
		pmNotifyErr(LOG_WARNING, "%s: refresh failed: %s", fam->name, strerror(-rc));
	give_back_windows();
}

static int virt_fetch(int numpmid, pmID *pmidlist, pmResult **resp, pmdaExt *pmda)
{
	bool want[VIRT_NFAMILIES] = { false };

	for (int i = 0; i < numpmid; i++) {
		unsigned int cluster = pmID_cluster(pmidlist[i]);

		for (int f = 1; f < VIRT_NFAMILIES; f++)
			if ((unsigned int)families[f].cluster == cluster)
				want[f] = true;
	}
	for (int f = 1; f < VIRT_NFAMILIES; f++)
		if (want[f])
			refresh_family(&families[f]);
	return pmdaFetch(numpmid, pmidlist, resp, pmda);
}

static int virt_instance(pmInDom indom, int inst, char *name, pmInResult **result,
			 pmdaExt *pmda)
{
	for (int i = 0; i < VIRT_NINDOMS; i++)
		if (indomtab[i].it_indom == indom)
			refresh_family(&families[indom_family[i]]);
	return pmdaInstance(indom, inst, name, result, pmda);
}

static const char *status_string(const struct virt_family *fam, char *buf, size_t len)
{
	switch (fam->state) {
	case VIRT_ACTIVE:
		return "active";
	case VIRT_DISABLED:
		if (!fam->reason[0])
			return "disabled";
		snprintf(buf, len, "disabled: %s", fam->reason);
		return buf;
	case VIRT_UNAVAILABLE:
		snprintf(buf, len, "unavailable: %s", fam->reason[0] ? fam->reason : "unknown");
		return buf;
	}
	return "?";
}

static int fetch_control(enum virt_metric_id id, unsigned int inst, pmAtomValue *atom)
{
	static char status[VIRT_NFAMILIES][VIRT_REASON_MAX + 32];
	struct virt_family *fam;

	if (id == VIRT_M_VERSION) {
		atom->cp = VIRT_VERSION;
		return PMDA_FETCH_STATIC;
	}
	if (id == VIRT_M_REFRESHES) {
		atom->ull = refreshes;
		return PMDA_FETCH_STATIC;
	}
	if (id == VIRT_M_BPF_CALLS) {
		atom->ull = virt_bpf_syscalls;
		return PMDA_FETCH_STATIC;
	}
	if (inst == 0 || inst >= VIRT_NFAMILIES)
		return PM_ERR_INST;
	fam = &families[inst];
	switch (id) {
	case VIRT_M_MODULE_STATUS:
		atom->cp = (char *)status_string(fam, status[inst], sizeof(status[inst]));
		return PMDA_FETCH_STATIC;
	case VIRT_M_MODULE_METHOD:
		atom->cp = fam->state == VIRT_ACTIVE ? fam->method : "none";
		return PMDA_FETCH_STATIC;
	case VIRT_M_MODULE_ATTACH_ATTEMPTS:
		atom->ull = fam->attach_attempts;
		return PMDA_FETCH_STATIC;
	case VIRT_M_MODULE_DROPPED:
		atom->ull = fam->dropped;
		return PMDA_FETCH_STATIC;
	case VIRT_M_MODULE_PROGRAMS:
		atom->ul = fam->state == VIRT_ACTIVE ? fam->programs : 0;
		return PMDA_FETCH_STATIC;
	case VIRT_M_MODULE_ATTACH_NS:
		if (fam->state != VIRT_ACTIVE)
			return PMDA_FETCH_NOVALUES;
		atom->ull = fam->attach_ns;
		return PMDA_FETCH_STATIC;
	default:
		return PM_ERR_PMID;
	}
}

static int virt_fetch_callback(pmdaMetric *mdesc, unsigned int inst, pmAtomValue *atom)
{
	const struct metric_info *mi = mdesc->m_user;
	struct virt_family *fam = &families[mi->family];

	if (mi->family == VIRT_F_CONTROL)
		return fetch_control(mi->id, inst, atom);
	if (fam->state != VIRT_ACTIVE || !fam->mod->fetch)
		return PMDA_FETCH_NOVALUES;
	return fam->mod->fetch(fam, mi->id, inst, atom);
}

/* ------------------------------------------------------------- main loop */

/* libbpf hands over multi-line messages (a verifier log on a failed load):
 * one log line each, so the reason for a rejection reaches the PMDA log. */
static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char msg[16384];
	int lines = 0;

	if (level == LIBBPF_DEBUG && !pmDebugOptions.appl0)
		return 0;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	for (char *line = msg, *end; *line; line = end) {
		end = line + strcspn(line, "\n");
		if (*end)
			*end++ = '\0';
		if (*line && lines++ < 400)
			pmNotifyErr(level == LIBBPF_WARN ? LOG_WARNING : LOG_DEBUG, "libbpf: %s", line);
	}
	return 0;
}

/* Instance id == family index: stable across restarts and releases. */
static void setup_module_indom(void)
{
	for (int f = 1; f < VIRT_NFAMILIES; f++)
		module_insts[f - 1] = (pmdaInstid){ f, (char *)families[f].name };
	indomtab[VIRT_I_MODULE].it_numinst = VIRT_NFAMILIES - 1;
	indomtab[VIRT_I_MODULE].it_set = module_insts;
}

#ifdef VIRT_SAN_LOG
/* make check-asan: sanitizer reports go to files the test run collects
 * (the agent's stderr belongs to pmcd's pipe setup). */
const char *__asan_default_options(void);	/* NOLINT(bugprone-reserved-identifier) */
const char *__ubsan_default_options(void);	/* NOLINT(bugprone-reserved-identifier) */
const char *__asan_default_options(void)	/* NOLINT(bugprone-reserved-identifier) */
{
	return "log_path=" VIRT_SAN_LOG "/asan:detect_leaks=1:print_suppressions=0";
}
const char *__ubsan_default_options(void)	/* NOLINT(bugprone-reserved-identifier) */
{
	return "log_path=" VIRT_SAN_LOG "/ubsan:print_stacktrace=1";
}
/* libpcp_pmda's pmdaDaemon() state lives until exit and has no free call */
const char *__lsan_default_suppressions(void);	/* NOLINT(bugprone-reserved-identifier) */
const char *__lsan_default_suppressions(void)	/* NOLINT(bugprone-reserved-identifier) */
{
	return "leak:libpcp_pmda.so\n";
}
#endif

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* Until pmcd closes the pipe or sends SIGTERM (select() is never restarted
 * after a signal handler, so the flag is seen at once): both end with the
 * families detached and a normal exit. */
static void main_loop(pmdaInterface *dispatch)
{
	int fd = __pmdaInFd(dispatch);
	uint64_t next_poll = now_ms() + poll_ms;
	/* percentile windows need histogram snapshots whether or not a
	 * client fetches: refresh the active families this often */
	uint64_t snap_ms = virt_rows_window() / VIRT_WIN_PERIODS;
	uint64_t next_snap = now_ms() + snap_ms;

	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	while (!stop_requested) {
		uint64_t now = now_ms();
		struct timeval tv;
		fd_set rfds;
		int rc;

		uint64_t next;

		if (now >= next_poll) {
			poll_families();
			next_poll = now + poll_ms;
		}
		if (now >= next_snap) {
			for (int f = 1; f < VIRT_NFAMILIES; f++)
				refresh_family(&families[f]);
			next_snap = now + snap_ms;
		}
		next = next_poll < next_snap ? next_poll : next_snap;
		tv.tv_sec = (time_t)((next - now) / 1000);
		tv.tv_usec = (suseconds_t)((next - now) % 1000) * 1000;
		FD_ZERO(&rfds);
		FD_SET(fd, &rfds);
		rc = select(fd + 1, &rfds, NULL, NULL, &tv);
		if (rc < 0 && errno != EINTR) {
			pmNotifyErr(LOG_ERR, "select: %s", strerror(errno));
			break;
		}
		if (rc > 0 && FD_ISSET(fd, &rfds) && __pmdaMainPDU(dispatch) < 0)
			break;			/* pmcd closed the pipe */
	}
}

static void shutdown_families(void)
{
	for (int i = 1; i < VIRT_NFAMILIES; i++)
		if (families[i].state == VIRT_ACTIVE)
			detach(&families[i]);
}

/* Before the first attach, so every attach (also hot attach later) runs
 * with what the agent keeps; a failure is logged, not fatal. */
static void drop_privileges(void)
{
	char why[256];

	if (virt_drop_privileges(why, sizeof(why)) < 0)
		pmNotifyErr(LOG_WARNING, "privileges: could not drop capabilities (%s); running with all of them",
			    why);
	else
		pmNotifyErr(LOG_INFO, "privileges: kept capabilities 0x%llx (bpf, perfmon, sys_admin, syslog, sys_resource), no_new_privs",
			    (unsigned long long)virt_privs_keep_mask());
}

/* pmdavirt -A: attach (and keep polling, so hot attach works), no PCP. */
static void attach_only(void)
{
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	while (!stop_requested) {
		poll_families();
		for (unsigned long long ms = 0; ms < poll_ms && !stop_requested; ms += 100)
			usleep(100000);
	}
	shutdown_families();
}

static pmLongOptions longopts[] = {
	PMDA_OPTIONS_HEADER("Options"),
	PMOPT_DEBUG,
	PMDAOPT_DOMAIN,
	PMDAOPT_LOGFILE,
	{ "config", 1, 'c', "FILE", "configuration file [default $PCP_SYSCONF_DIR/virt/virt.conf]" },
	{ "modules", 1, 'M', "DIR", "family modules directory [default $PCP_PMDAS_DIR/virt/modules]" },
	{ "pmns", 0, 'n', NULL, "print the namespace in PMNS syntax and exit" },
	{ "default-config", 0, 'C', NULL, "print the default virt.conf and exit" },
	{ "attach-only", 0, 'A', NULL, "attach the enabled families and hold until SIGTERM, without pmcd (debugging, benchmarks)" },
	PMOPT_HELP,
	PMDA_OPTIONS_END
};

static pmdaOptions opts = {
	.short_options = "D:d:l:c:M:nCA?",
	.long_options = longopts,
};

int main(int argc, char **argv)
{
	pmdaInterface dispatch;
	static char helpfile[MAXPATHLEN], defconf[MAXPATHLEN], defmods[MAXPATHLEN];
	int c, err, dump = 0, sep = pmPathSeparator();

	pmSetProgname(argv[0]);
	pmsprintf(helpfile, sizeof(helpfile), "%s%c" "virt" "%c" "help",
		  pmGetConfig("PCP_PMDAS_DIR"), sep, sep);
	pmsprintf(defconf, sizeof(defconf), "%s%cvirt%cvirt.conf",
		  pmGetConfig("PCP_SYSCONF_DIR"), sep, sep);
	pmsprintf(defmods, sizeof(defmods), "%s%cvirt%cmodules",
		  pmGetConfig("PCP_PMDAS_DIR"), sep, sep);
	config_path = defconf;
	module_dir = defmods;

	pmdaDaemon(&dispatch, PMDA_INTERFACE_7, pmGetProgname(), VIRT_DOMAIN,
		   "virt.log", helpfile);
	while ((c = pmdaGetOptions(argc, argv, &opts, &dispatch)) != EOF) {
		switch (c) {
		case 'c':
			config_path = opts.optarg;
			break;
		case 'M':
			module_dir = opts.optarg;
			break;
		case 'n':
		case 'C':
		case 'A':
			dump = c;
			break;
		default:
			break;
		}
	}
	if (opts.errors) {
		pmdaUsageMessage(&opts);
		exit(1);
	}
	if (dump == 'n') {
		print_pmns();
		return 0;
	}
	if (dump == 'C') {
		load_modules();
		print_config();
		return 0;
	}

	pmdaOpenLog(&dispatch);
	libbpf_set_print(libbpf_log);
	if ((err = virt_btf_targets_register()) < 0)
		pmNotifyErr(LOG_WARNING, "fentry/fexit/tp_btf handlers not registered (%s): libbpf finds attach targets itself",
			    strerror(-err));
	load_modules();
	load_config();
	drop_privileges();
	if (dump == 'A') {
		attach_only();
		return 0;
	}

	dispatch.version.seven.fetch = virt_fetch;
	dispatch.version.seven.instance = virt_instance;
	pmdaSetFetchCallBack(&dispatch, virt_fetch_callback);
	setup_module_indom();
	pmdaInit(&dispatch, indomtab, VIRT_NINDOMS, metrictab, VIRT_NMETRICS);

	/* Attaching runs the BPF verifier, which can take longer than pmcd
	 * waits for a PMDA: connect first, tell pmcd we are not ready (Install
	 * registers us with "notready"), attach, then declare ready. */
	pmdaConnect(&dispatch);
	poll_families();
	pmdaSendError(&dispatch, PM_ERR_PMDAREADY);
	main_loop(&dispatch);
	shutdown_families();
	return 0;
}
