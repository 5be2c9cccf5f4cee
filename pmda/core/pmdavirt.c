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
#include "agent.h"
#include "privs.h"
#include "rows.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

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
	uint64_t next_poll = virt_now_ms() + virt_poll_ms;
	/* percentile windows need histogram snapshots whether or not a
	 * client fetches: refresh the active families this often */
	uint64_t snap_ms = virt_rows_window() / VIRT_WIN_PERIODS;
	uint64_t next_snap = virt_now_ms() + snap_ms;

	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	while (!stop_requested) {
		uint64_t now = virt_now_ms();
		struct timeval tv;
		fd_set rfds;
		int rc;

		uint64_t next;

		if (now >= next_poll) {
			virt_poll_families();
			next_poll = now + virt_poll_ms;
		}
		if (now >= next_snap) {
			for (int f = 1; f < VIRT_NFAMILIES; f++)
				virt_refresh_family(&virt_families[f]);
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

/* What the enabled families' configurations need kept (virt_module.caps),
 * the families named in who. */
static uint64_t module_caps(char *who, size_t len)
{
	uint64_t m = 0;

	who[0] = '\0';
	for (int f = 1; f < VIRT_NFAMILIES; f++) {
		const struct virt_family *fam = &virt_families[f];
		uint64_t c;

		if (!fam->mod || !fam->mod->caps || fam->state == VIRT_DISABLED ||
		    !(c = fam->mod->caps(fam)))
			continue;
		m |= c;
		snprintf(who + strlen(who), len - strlen(who), " + 0x%llx for %s",
			 (unsigned long long)c, fam->name);
	}
	return m;
}

/* Before the first attach, so every attach (also hot attach later) runs
 * with what the agent keeps; a failure is logged, not fatal. */
static void drop_privileges(void)
{
	char why[256], who[128];
	uint64_t extra = module_caps(who, sizeof(who));

	if (virt_drop_privileges(extra, why, sizeof(why)) < 0)
		pmNotifyErr(LOG_WARNING, "privileges: could not drop capabilities (%s); running with all of them",
			    why);
	else
		pmNotifyErr(LOG_INFO, "privileges: kept capabilities 0x%llx (bpf, perfmon, sys_admin, syslog, sys_resource%s), no_new_privs",
			    (unsigned long long)virt_privs_keep_mask(extra), who);
}

/* No transparent huge pages for the agent's memory: its heap is a few
 * MiB of small rows that come and go, and with THP "always" (Debian's
 * default) a 2 MiB range of it holding a single live page becomes a whole
 * huge page (page faults, and khugepaged's collapse with max_ptes_none at
 * 511): measured in the test VM, 12 MiB of a 34 MiB RSS in huge pages,
 * and RSS steps of 2 MiB with nothing allocated (qa 504). */
static void no_huge_pages(void)
{
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0)
		pmNotifyErr(LOG_INFO, "transparent huge pages stay on for the agent: %s",
			    strerror(errno));
}

/* pmdavirt -A: attach (and keep polling, so hot attach works), no PCP. */
static void attach_only(void)
{
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	while (!stop_requested) {
		virt_poll_families();
		for (unsigned long long ms = 0; ms < virt_poll_ms && !stop_requested; ms += 100)
			usleep(100000);
	}
	virt_shutdown_families();
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
	virt_config_path = defconf;
	virt_module_dir = defmods;

	pmdaDaemon(&dispatch, PMDA_INTERFACE_7, pmGetProgname(), VIRT_DOMAIN,
		   "virt.log", helpfile);
	while ((c = pmdaGetOptions(argc, argv, &opts, &dispatch)) != EOF) {
		switch (c) {
		case 'c':
			virt_config_path = opts.optarg;
			break;
		case 'M':
			virt_module_dir = opts.optarg;
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
		virt_print_pmns();
		return 0;
	}
	if (dump == 'C') {
		virt_load_modules();
		virt_print_config();
		return virt_modules_refused();
	}

	pmdaOpenLog(&dispatch);
	no_huge_pages();
	libbpf_set_print(virt_libbpf_log);
	if ((err = virt_btf_targets_register()) < 0)
		pmNotifyErr(LOG_WARNING, "fentry/fexit/tp_btf handlers not registered (%s): libbpf finds attach targets itself",
			    strerror(-err));
	virt_load_modules();
	virt_load_config();
	drop_privileges();
	if (dump == 'A') {
		attach_only();
		return 0;
	}

	dispatch.version.seven.fetch = virt_fetch;
	dispatch.version.seven.instance = virt_instance;
	pmdaSetFetchCallBack(&dispatch, virt_fetch_callback);
	pmdaSetLabelCallBack(&dispatch, virt_label_callback);
	virt_setup_module_indom();
	pmdaInit(&dispatch, virt_indomtab, VIRT_NINDOMS, virt_metrictab, VIRT_NMETRICS);

	/* Attaching runs the BPF verifier, which can take longer than pmcd
	 * waits for a PMDA: connect first, tell pmcd we are not ready (Install
	 * registers us with "notready"), attach, then declare ready. */
	pmdaConnect(&dispatch);
	virt_poll_families();
	pmdaSendError(&dispatch, PM_ERR_PMDAREADY);
	main_loop(&dispatch);
	virt_shutdown_families();
	return 0;
}
