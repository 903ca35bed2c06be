#!/usr/bin/python3
"""smtp_server.py - a test SMTP server for the email channel (aiosmtpd).

Run with Debian's /usr/bin/python3 (python3-aiosmtpd). Listens on
127.0.0.1:PORT. With --cert/--key it offers STARTTLS and requires it
before anything else (require_starttls); AUTH PLAIN and LOGIN are
required (auth_required) and only allowed over TLS (auth_require_tls),
with the --user/--password pair. Every accepted message is saved to
--dir as N.eml (the data as received) and N.json (the envelope: mail
from, recipients, the authenticated login, whether the session was TLS).

Failure modes (--mode): ok (the default), reject-auth (every AUTH
answers 535), tempfail (DATA answers 451), reject-rcpt (RCPT answers
550). Without --cert the server offers no STARTTLS at all: the test of
a client that must refuse to send in clear.

Prints "ready" on stdout when it accepts connections; stops on SIGTERM.
"""
import argparse
import json
import os
import signal
import ssl
import threading

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


class Handler:
    def __init__(self, args):
        self.args = args
        self.count = 0
        self.lock = threading.Lock()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if self.args.mode == "reject-rcpt":
            return "550 5.1.1 <%s>: recipient rejected" % address
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if self.args.mode == "tempfail":
            return "451 4.3.0 temporary failure, try again later"
        with self.lock:
            self.count += 1
            n = self.count
        base = os.path.join(self.args.dir, str(n))
        with open(base + ".eml", "wb") as f:
            f.write(envelope.original_content or envelope.content)
        meta = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "login": session.auth_data.login.decode() if isinstance(session.auth_data, LoginPassword) else None,
            "tls": session.ssl is not None,
        }
        with open(base + ".json.tmp", "w") as f:
            json.dump(meta, f)
        os.rename(base + ".json.tmp", base + ".json")
        return "250 2.0.0 Message accepted for delivery"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--user", required=True)
    ap.add_argument("--password", required=True)
    ap.add_argument("--mode", default="ok", choices=["ok", "reject-auth", "tempfail", "reject-rcpt"])
    args = ap.parse_args()

    def authenticator(server, session, envelope, mechanism, auth_data):
        ok = (args.mode != "reject-auth" and isinstance(auth_data, LoginPassword) and
              auth_data.login == args.user.encode() and auth_data.password == args.password.encode())
        return AuthResult(success=ok, handled=False, auth_data=auth_data)

    kw = dict(authenticator=authenticator, auth_required=True, auth_require_tls=True)
    if args.cert:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(args.cert, args.key)
        kw.update(tls_context=ctx, require_starttls=True)
    else:
        kw.update(auth_require_tls=False)
    ctl = Controller(Handler(args), hostname="127.0.0.1", port=args.port, **kw)
    ctl.start()
    print("ready", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    ctl.stop()


if __name__ == "__main__":
    main()
