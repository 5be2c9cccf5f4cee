/* vhostdrv's main, also run on a thread of kvmguest (kvmguest -H): the vhost
 * device's worker is then a worker of that VMM's. */
#ifndef VHOSTDRV_H
#define VHOSTDRV_H
int vhostdrv_main(int argc, char **argv);
#endif
