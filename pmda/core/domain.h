/* The PMDA domain number, read by virt.h, pmdaproc.sh (Install, Remove) and
 * the GNUmakefile: the one place it is written. */
#define VIRT 498
