#!/usr/bin/python3
"""udpsink.py PORT: receive and drop UDP datagrams on 127.0.0.1:PORT, the
host end of the virtio bench's packets (qemu's user networking delivers
10.0.2.2:PORT there). Without a listener the host answers with ICMP port
unreachable, and in this QEMU 7.2 + slirp the guest's TX queue then stalled
for good (NETDEV WATCHDOG: transmit queue 0 timed out)."""
import socket
import sys

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind(("127.0.0.1", int(sys.argv[1])))
while True:
    s.recv(65536)
