#!/usr/bin/env bash
# Sampling never waits for HTTP clients: clients that connect and never
# read, or read a byte a second, leave the tick rate untouched.
source "$(dirname "$0")/lib.sh"
start_agent --interval 100ms --process-series all
python3 - "$AGENT_PORT" <<'PY' &
import socket, sys, time
port = int(sys.argv[1])
socks = []
for i in range(20):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" if i % 2 else b"GET /met")
    socks.append(s)
end = time.time() + 4
while time.time() < end:
    for s in socks[1::2]:
        try:
            s.recv(1)
        except OSError:
            pass
    time.sleep(1)
PY
PIDS+=($!)
sleep 0.5
t1=$(metrics | awk '/^gpulse_agent_ticks_total/ {print $2}')
sleep 2
t2=$(metrics | awk '/^gpulse_agent_ticks_total/ {print $2}')
note "ticks $t1 -> $t2 in 2 s with 20 stalled clients"
[ $((t2 - t1)) -ge 15 ] || fail "sampling slowed down by stalled clients ($t1 -> $t2)"
stop_agent
