#!/usr/bin/env python3
"""Open many GET /api/v1/events streams over HTTPS to 127.0.0.1, as one client flooding the
controller would, for tests/integration/test_api_streams.sh.

  sse_flood.py PORT CA HOLD_UNTIL_FILE TOKEN:COUNT...

For each TOKEN:COUNT in order, COUNT requests one after the other; each reply's status is read
(10 s deadline). A 200 stream is kept open; any other reply is read to its end, which must come
within 10 s (the server closes a refused connection). Prints one line per TOKEN:COUNT:
"<index> <status>=<n> ... closed=<refused replies whose connection the server closed>", then
"HOLDING <open streams>", and keeps the streams open until HOLD_UNTIL_FILE exists (at most
300 s). Exit 0, or 1 when a connection failed or a reply did not come in time."""
import os
import socket
import ssl
import sys
import time


def request(ctx, port, token):
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
    s.sendall(("GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               "Authorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n" % token).encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            raise OSError("connection closed before the reply's headers")
        buf += chunk
    status = int(buf.split(b" ", 2)[1])
    return s, status, buf


def main():
    port, ca, hold_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False  # the CA is the test's own; the name is 127.0.0.1
    held = []
    for i, spec in enumerate(sys.argv[4:]):
        token, count = spec.rsplit(":", 1)
        counts, closed = {}, 0
        for _ in range(int(count)):
            s, status, _ = request(ctx, port, token)
            counts[status] = counts.get(status, 0) + 1
            if status == 200:
                held.append(s)
                continue
            s.settimeout(10)
            try:
                while s.recv(4096):  # to EOF: the server closes it
                    pass
            except (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionResetError):
                pass  # closed without TLS's close_notify, or reset: closed all the same
            closed += 1
            s.close()
        print(i, " ".join("%d=%d" % kv for kv in sorted(counts.items())), "closed=%d" % closed,
              flush=True)
    print("HOLDING", len(held), flush=True)
    deadline = time.monotonic() + 300
    while not os.path.exists(hold_file) and time.monotonic() < deadline:
        time.sleep(0.1)
    for s in held:
        s.close()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, ValueError, IndexError) as e:
        print("sse_flood: %s" % e, file=sys.stderr)
        sys.exit(1)
