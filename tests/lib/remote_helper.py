#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Servers of the remote-snapshot tests (tests/lib/remote_lib.sh).

Python 3 standard library only. Every server binds 127.0.0.1 on a port the
kernel picks, writes that port to --port-file (atomically: a temporary file
renamed), logs one line per request and exits by itself when the test's
shell (--parent PID) is gone or after --lifetime seconds.

  sigv4-proxy --upstream PORT --credentials FILE [--region R]
              [--allow-anonymous] [--allow-missing-content-sha256]
              [--tls-cert CERT --tls-key KEY] --log FILE --port-file FILE
      FILE holds the access key, the secret and the session token (or an
      empty line), one a line: never in a process's arguments, where the
      tests look for leaked credentials.
      An S3 front for s3rver (which does not check signatures): it
      recomputes the AWS Signature Version 4 of every request with the
      known secret and answers a wrong one as S3 does (403, an XML
      <Error> with <Code>SignatureDoesNotMatch</Code>); otherwise it
      forwards the request without its credentials, streaming, and
      evaluates Range, If-Match, If-None-Match, If-Modified-Since and
      If-Unmodified-Since itself as S3 does (s3rver ignores If-Match and
      gets 'bytes=0-0' wrong). With --tls-cert it answers HTTPS only (an
      S3 endpoint behind TLS; s3rver itself is still spoken to in HTTP).
  fault-proxy --upstream PORT --log FILE --port-file FILE
              --control-port-file FILE
      An HTTP proxy in front of nginx whose faults the test sets through
      GET http://127.0.0.1:CONTROL/set?mode=...; see FaultState.
  supervise --parent PID [--lifetime S] -- CMD...
      Runs CMD (nginx, s3rver), ends it (SIGTERM, then SIGKILL) when the
      test's shell is gone or the lifetime is over, or on SIGTERM.
  freeport
      Prints a loopback port that is free now (for servers that cannot be
      told to pick one: nginx, s3rver; the caller retries on a clash).

Log lines (and nginx's, remote_lib.sh's log_format): tab-separated
  METHOD URI RANGE STATUS BYTES EXTRA
with '-' for an absent Range; BYTES counts the body bytes sent; EXTRA is
the authentication result (sigv4-proxy: ok, anonymous or the error code)
or the fault applied (fault-proxy: pass, reset, delay, status, truncate,
hang; '+replaced' added where replace= sent it to another path).
"""
import argparse
import calendar
import ctypes
import email.utils
import hashlib
import hmac
import http.client
import http.server
import json
import os
import re
import signal
import socket
import socketserver
import ssl
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

CHUNK = 256 * 1024
MAX_BODY = 64 << 20  # request bodies the proxies buffer (uploads)
HOP = {"connection", "keep-alive", "proxy-authenticate",
       "proxy-authorization", "te", "trailer", "trailers",
       "transfer-encoding", "upgrade", "host"}
# what send_response() writes itself
OWN = {"date", "server"}


def write_port(path, port):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.rename(tmp, path)


def watchdog(parent, lifetime, on_exit=None):
    """Ends this process when PARENT is gone or LIFETIME has passed."""
    end = time.monotonic() + lifetime

    def run():
        while True:
            gone = False
            if parent:
                try:
                    os.kill(parent, 0)
                except ProcessLookupError:
                    gone = True
                except PermissionError:
                    pass
            if gone or time.monotonic() > end:
                if on_exit:
                    on_exit()
                os._exit(0)
            time.sleep(0.5)

    threading.Thread(target=run, daemon=True).start()


class Logger:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)
        self.lock = threading.Lock()

    def line(self, method, uri, rng, status, nbytes, extra):
        fields = [method, uri, rng or "-", str(status), str(nbytes), extra]
        fields = [re.sub(r"[\t\n\r]", " ", x) for x in fields]
        with self.lock:
            self.f.write("\t".join(fields) + "\n")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


class TLSServer(Server):
    """A Server over TLS (ctx: the server's ssl.SSLContext): the handshake
    is made in the connection's own thread, so that a client that never
    makes it holds up no other."""
    ctx = None

    def get_request(self):
        sock, addr = self.socket.accept()
        return self.ctx.wrap_socket(sock, server_side=True,
                                    do_handshake_on_connect=False), addr

    def finish_request(self, request, client_address):
        try:
            request.settimeout(30)
            request.do_handshake()
            request.settimeout(None)
        except (OSError, ssl.SSLError):
            return
        super().finish_request(request, client_address)


def make_server(a, handler):
    """A server on a free loopback port for handler: over TLS when a has
    tls_cert (and tls_key)."""
    if not getattr(a, "tls_cert", None):
        return Server(("127.0.0.1", 0), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.tls_cert, a.tls_key)
    TLSServer.ctx = ctx
    return TLSServer(("127.0.0.1", 0), handler)


# ------------------------------------------------------------- forwarding

def parse_range(value):
    """A single 'bytes=' range as (first, last) with None for an open end,
    ('suffix', n), or None where the header is absent, malformed or names
    several ranges (then the whole object is served, as S3 does)."""
    if not value:
        return None
    m = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", value)
    if not m or (m.group(1) == "" and m.group(2) == ""):
        return None
    if m.group(1) == "":
        return ("suffix", int(m.group(2)))
    first = int(m.group(1))
    last = int(m.group(2)) if m.group(2) != "" else None
    if last is not None and last < first:
        return None
    return (first, last)


def http_date(value):
    try:
        t = email.utils.parsedate_tz(value)
        return None if t is None else email.utils.mktime_tz(t)
    except (TypeError, ValueError, OverflowError):
        return None


def etag_list(value):
    return [x.strip() for x in value.split(",") if x.strip()]


def precondition(method, req, etag, last_modified):
    """RFC 7232 section 6 over the object's ETag and Last-Modified: None,
    412 or 304."""
    lm = http_date(last_modified) if last_modified else None
    im = req.get("If-Match")
    if im is not None:
        tags = etag_list(im)
        if "*" not in tags and (etag is None or etag not in tags):
            return 412
    else:
        ius = http_date(req.get("If-Unmodified-Since") or "")
        if ius is not None and lm is not None and lm > ius:
            return 412
    inm = req.get("If-None-Match")
    if inm is not None:
        tags = etag_list(inm)
        if "*" in tags or (etag is not None and etag in tags):
            return 304 if method in ("GET", "HEAD") else 412
    elif method in ("GET", "HEAD"):
        ims = http_date(req.get("If-Modified-Since") or "")
        if ims is not None and lm is not None and lm <= ims:
            return 304
    return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def version_string(self):
        return "wsnap-test"

    def log_message(self, *args):
        pass

    def read_body(self):
        n = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding"):
            return None
        if n is None:
            return b""
        if not n.isdigit() or int(n) > MAX_BODY:
            return None
        return self.rfile.read(int(n))

    def simple(self, status, body, ctype="text/plain", extra_headers=()):
        """A complete response; BODY is not sent for HEAD."""
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra_headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
            return len(body)
        return 0

    def upstream_request(self, port, method, path, headers, body):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request(method, path, body=body or None, headers=headers)
        return conn, conn.getresponse()

    def copy_headers(self, resp, skip=()):
        for k, v in resp.getheaders():
            kl = k.lower()
            if kl in HOP or kl in OWN or kl in skip:
                continue
            self.send_header(k, v)

    def stream(self, resp, limit):
        """Copies at most LIMIT body bytes of RESP (all when None) to the
        client. Returns the bytes sent and whether all of LIMIT came."""
        sent = 0
        while limit is None or sent < limit:
            want = CHUNK if limit is None else min(CHUNK, limit - sent)
            buf = resp.read(want)
            if not buf:
                return sent, limit is None
            try:
                self.wfile.write(buf)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
                return sent, False
            sent += len(buf)
        return sent, True


# ---------------------------------------------------------------- SigV4

UNRESERVED = "-_.~"


def uri_encode(raw, slash_safe):
    return urllib.parse.quote(urllib.parse.unquote_to_bytes(raw),
                              safe=UNRESERVED + ("/" if slash_safe else ""))


def canonical_query(query):
    pairs = []
    for piece in query.split("&"):
        if piece == "":
            continue
        name, _, value = piece.partition("=")
        pairs.append((uri_encode(name, False), uri_encode(value, False)))
    pairs.sort()
    return "&".join("%s=%s" % p for p in pairs)


def trimall(value):
    return re.sub(r"\s+", " ", value.strip())


def signing_key(secret, date, region, service):
    k = hmac.new(("AWS4" + secret).encode(), date.encode(), hashlib.sha256)
    for part in (region, service, "aws4_request"):
        k = hmac.new(k.digest(), part.encode(), hashlib.sha256)
    return k.digest()


class S3Refusal(Exception):
    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def verify_sigv4(cfg, method, raw_path, headers, body):
    """Raises S3Refusal unless HEADERS carry a valid SigV4 signature of the
    request by cfg's key; returns 'ok', or 'anonymous' for a request
    without credentials where cfg allows those."""
    auth = headers.get("Authorization")
    path, _, query = raw_path.partition("?")
    if re.search(r"(^|&)X-Amz-Algorithm=", query, re.I):
        raise S3Refusal(501, "NotImplemented",
                        "presigned URLs are not checked by the test proxy")
    if auth is None:
        if cfg.allow_anonymous:
            return "anonymous"
        raise S3Refusal(403, "AccessDenied", "Access Denied")
    algo, _, rest = auth.strip().partition(" ")
    if algo != "AWS4-HMAC-SHA256":
        raise S3Refusal(400, "InvalidArgument",
                        "Unsupported Authorization Type")
    parts = {}
    for item in rest.split(","):
        k, eq, v = item.strip().partition("=")
        if eq:
            parts[k] = v
    cred = parts.get("Credential", "").split("/")
    signed = parts.get("SignedHeaders")
    given = parts.get("Signature")
    if len(cred) != 5 or not signed or not given:
        raise S3Refusal(400, "AuthorizationHeaderMalformed",
                        "The authorization header is malformed")
    key, date, region, service, term = cred
    if key != cfg.access_key:
        raise S3Refusal(403, "InvalidAccessKeyId",
                        "The AWS Access Key Id you provided does not exist "
                        "in our records.")
    if region != cfg.region:
        raise S3Refusal(400, "AuthorizationHeaderMalformed",
                        "The authorization header is malformed; the region "
                        "'%s' is wrong; expecting '%s'" % (region, cfg.region))
    if service != "s3" or term != "aws4_request":
        raise S3Refusal(400, "AuthorizationHeaderMalformed",
                        "The authorization header is malformed; incorrect "
                        "service or terminator in the credential scope")
    amzdate = headers.get("X-Amz-Date")
    try:
        t = calendar.timegm(time.strptime(amzdate or "", "%Y%m%dT%H%M%SZ"))
    except ValueError:
        raise S3Refusal(403, "AccessDenied",
                        "AWS authentication requires a valid Date or "
                        "x-amz-date header")
    if date != amzdate[:8]:
        raise S3Refusal(400, "AuthorizationHeaderMalformed",
                        "The authorization header is malformed; Invalid "
                        "credential date. Date is not the same as X-Amz-Date.")
    if abs(time.time() - t) > 15 * 60:
        raise S3Refusal(403, "RequestTimeTooSkewed",
                        "The difference between the request time and the "
                        "current time is too large.")
    names = signed.split(";")
    if "host" not in names or names != sorted(names) or \
            any(n != n.lower() or n == "" for n in names):
        raise S3Refusal(400, "AuthorizationHeaderMalformed",
                        "The authorization header is malformed; "
                        "SignedHeaders must be sorted, lowercase and "
                        "include host")
    unsigned = sorted({k.lower() for k in headers.keys()
                       if k.lower().startswith("x-amz-")} - set(names))
    if unsigned:
        raise S3Refusal(403, "AccessDenied",
                        "There were headers present in the request which "
                        "were not signed: " + ", ".join(unsigned))
    payload = headers.get("X-Amz-Content-SHA256")
    if payload is None:
        if not cfg.allow_missing_content_sha256:
            raise S3Refusal(400, "InvalidRequest",
                            "Missing required header for this request: "
                            "x-amz-content-sha256")
        payload = hashlib.sha256(body).hexdigest()
    elif payload != "UNSIGNED-PAYLOAD":
        if not re.fullmatch(r"[0-9a-f]{64}", payload):
            raise S3Refusal(400, "InvalidArgument",
                            "x-amz-content-sha256 must be UNSIGNED-PAYLOAD "
                            "or a SHA256 value (streaming uploads are not "
                            "taken by the test proxy)")
        if payload != hashlib.sha256(body).hexdigest():
            raise S3Refusal(400, "XAmzContentSHA256Mismatch",
                            "The provided 'x-amz-content-sha256' header does "
                            "not match what was computed.")
    token = headers.get("X-Amz-Security-Token")
    if (cfg.session_token or None) != token:
        raise S3Refusal(403, "InvalidToken",
                        "The provided token is malformed or otherwise "
                        "invalid.")
    canon_headers = "".join(
        "%s:%s\n" % (n, ",".join(trimall(v) for v in
                                 (headers.get_all(n) or [])))
        for n in names)
    creq = "\n".join([method, uri_encode(path or "/", True),
                      canonical_query(query), canon_headers, signed,
                      payload])
    scope = "%s/%s/%s/%s" % (date, region, service, term)
    sts = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    want = hmac.new(signing_key(cfg.secret, date, region, service),
                    sts.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(want, given):
        raise S3Refusal(403, "SignatureDoesNotMatch",
                        "The request signature we calculated does not match "
                        "the signature you provided. Check your key and "
                        "signing method.")
    return "ok"


def s3_error_xml(code, message, resource):
    esc = lambda s: (s.replace("&", "&amp;").replace("<", "&lt;")
                     .replace(">", "&gt;"))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code>'
            "<Message>%s</Message><Resource>%s</Resource>"
            "<RequestId>%s</RequestId></Error>" %
            (code, esc(message), esc(resource),
             uuid.uuid4().hex[:16].upper())).encode()


class SigV4Handler(Handler):
    cfg = None
    log = None

    def do_GET(self):
        self.handle_s3()

    do_HEAD = do_PUT = do_DELETE = do_POST = do_GET

    def refuse(self, status, code, message, rng):
        body = s3_error_xml(code, message, self.path.partition("?")[0])
        n = self.simple(status, body, "application/xml")
        self.log.line(self.command, self.path, rng, status, n, code)

    def handle_s3(self):
        rng = self.headers.get("Range")
        body = self.read_body()
        if body is None:
            self.close_connection = True
            self.refuse(400, "InvalidRequest",
                        "the test proxy takes bodies with a Content-Length "
                        "of at most %d bytes" % MAX_BODY, rng)
            return
        try:
            auth = verify_sigv4(self.cfg, self.command, self.path,
                                self.headers, body)
        except S3Refusal as e:
            self.refuse(e.status, e.code, e.message, rng)
            return
        try:
            self.forward(body, rng, auth)
        except (OSError, http.client.HTTPException) as e:
            self.close_connection = True
            try:
                self.refuse(502, "BadGateway", "upstream: %s" % e, rng)
            except OSError:
                pass

    def forward(self, body, rng, auth):
        headers = {}
        for k, v in self.headers.items():
            kl = k.lower()
            if kl in HOP or kl in ("authorization", "x-amz-security-token",
                                   "range") or kl.startswith("if-"):
                continue
            headers[k] = v
        want = parse_range(rng) if self.command in ("GET", "HEAD") else None
        up = self.cfg.upstream
        if want is not None and want[0] == "suffix":
            c, r = self.upstream_request(up, "HEAD", self.path, headers, None)
            r.read()
            c.close()
            size = int(r.getheader("Content-Length") or 0)
            if r.status != 200 or want[1] == 0:
                want = None if r.status != 200 else (size, size)
            else:
                want = (max(0, size - want[1]), None)
        if want is not None:
            # s3rver reads 'bytes=0-0' as the whole object: ask for one
            # byte more and trim below
            last = want[1] + 1 if want[1] is not None else ""
            headers["Range"] = "bytes=%d-%s" % (want[0], last)
        conn, resp = self.upstream_request(up, self.command, self.path,
                                           headers, body)
        try:
            self.relay(resp, want, rng, auth)
        finally:
            conn.close()

    def relay(self, resp, want, rng, auth):
        etag = resp.getheader("ETag")
        pre = None
        if resp.status in (200, 206):
            pre = precondition(self.command, self.headers, etag,
                               resp.getheader("Last-Modified"))
        if pre == 412:
            self.refuse(412, "PreconditionFailed",
                        "At least one of the pre-conditions you specified "
                        "did not hold", rng)
            return
        if pre == 304:
            self.send_response(304)
            for k in ("ETag", "Last-Modified"):
                if resp.getheader(k):
                    self.send_header(k, resp.getheader(k))
            self.end_headers()
            self.log.line(self.command, self.path, rng, 304, 0, auth)
            return
        length = resp.getheader("Content-Length")
        if resp.status == 206 and want is not None:
            m = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)",
                             resp.getheader("Content-Range") or "")
            if not m or int(m.group(1)) != want[0]:
                raise http.client.HTTPException("upstream Content-Range %r"
                                                % resp.getheader(
                                                    "Content-Range"))
            size = int(m.group(3))
            last = size - 1 if want[1] is None else min(want[1], size - 1)
            n = last - want[0] + 1
            self.send_response(206)
            self.copy_headers(resp, ("content-length", "content-range"))
            self.send_header("Content-Range",
                             "bytes %d-%d/%d" % (want[0], last, size))
            self.send_header("Content-Length", str(n))
            self.end_headers()
        elif length is not None:
            n = int(length)
            self.send_response(resp.status)
            self.copy_headers(resp)
            self.end_headers()
        else:  # an error body without a length: read it whole
            data = resp.read(MAX_BODY)
            self.send_response(resp.status)
            self.copy_headers(resp, ("content-length",))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            sent = 0
            if self.command != "HEAD":
                self.wfile.write(data)
                sent = len(data)
            self.log.line(self.command, self.path, rng, resp.status, sent,
                          auth)
            return
        sent, full = (0, True) if self.command == "HEAD" else \
            self.stream(resp, n)
        if not full:
            self.close_connection = True
        self.log.line(self.command, self.path, rng, resp.status, sent, auth)


def cmd_sigv4(a):
    watchdog(a.parent, a.lifetime)
    with open(a.credentials) as f:
        lines = f.read().split("\n") + ["", "", ""]
    a.access_key, a.secret, a.session_token = lines[:3]
    if not a.access_key or not a.secret:
        sys.exit("sigv4-proxy: no key or secret in %s" % a.credentials)
    SigV4Handler.cfg = a
    SigV4Handler.log = Logger(a.log)
    srv = make_server(a, SigV4Handler)
    write_port(a.port_file, srv.server_address[1])
    srv.serve_forever()


# ------------------------------------------------------------ the faults

class FaultState:
    """What the fault proxy does, set as a whole by GET /set?... on the
    control port (every parameter not given takes its default):

      mode=pass|reset|delay|status|truncate|hang   (default pass)
      match=REGEX   requests it applies to: searched in 'METHOD URI RANGE'
                    (default: all)
      skip=N        the first N matching requests pass (default 0)
      n=N           then N matching requests get the fault (default: all)
      status=CODE   for mode=status (default 500)
      location=URL  for mode=status: a Location header (a redirect)
      delay=SECS    for mode=delay: before the response (default 2)
      bytes=N       for mode=truncate: body bytes sent before the
                    connection is closed (default half the body)
      replace=FROM=TO  requests for path FROM go upstream to TO (a
                    switch to another object: other bytes, another ETag),
                    whatever the mode

    reset closes the connection with a TCP reset after reading the
    request; hang never answers (until the next /set, which resets its
    connection, or the end of the proxy). GET /state returns the state and the counters
    (seen: matching requests, faulted: those given the fault) as JSON.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.released = threading.Event()
        self.set({})

    def set(self, q):
        def one(k, d):
            return q.get(k, [d])[-1]
        with self.lock:
            old = getattr(self, "released", None)
            self.mode = one("mode", "pass")
            if self.mode not in ("pass", "reset", "delay", "status",
                                 "truncate", "hang"):
                raise ValueError("unknown mode '%s'" % self.mode)
            self.match = re.compile(one("match", ""))
            self.skip = int(one("skip", "0"))
            self.n = int(one("n", "-1"))
            self.status = int(one("status", "500"))
            self.location = one("location", "")
            self.delay = float(one("delay", "2"))
            self.bytes = one("bytes", None)
            self.bytes = None if self.bytes is None else int(self.bytes)
            rep = one("replace", "")
            self.replace = tuple(rep.split("=", 1)) if "=" in rep else None
            self.seen = self.faulted = 0
            if old is not None:
                old.set()  # hung requests of the previous state end
            self.released = threading.Event()

    def decide(self, line):
        """The fault for one request (the mode, or 'pass') and the
        event that releases a hang."""
        with self.lock:
            if self.mode == "pass" or not self.match.search(line):
                return "pass", self.released
            self.seen += 1
            if self.seen <= self.skip:
                return "pass", self.released
            if self.n >= 0 and self.faulted >= self.n:
                return "pass", self.released
            self.faulted += 1
            return self.mode, self.released

    def upstream_path(self, path):
        with self.lock:
            if self.replace is None:
                return path
            p, q, rest = path.partition("?")
            return (self.replace[1] + q + rest) if p == self.replace[0] \
                else path

    def as_json(self):
        with self.lock:
            return json.dumps({
                "mode": self.mode, "match": self.match.pattern,
                "skip": self.skip, "n": self.n, "status": self.status,
                "location": self.location,
                "delay": self.delay, "bytes": self.bytes,
                "replace": "=".join(self.replace) if self.replace else "",
                "seen": self.seen, "faulted": self.faulted}) + "\n"


class ControlHandler(Handler):
    state = None

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        if u.path == "/set":
            try:
                self.state.set(urllib.parse.parse_qs(u.query,
                                                     keep_blank_values=True))
            except (ValueError, re.error) as e:
                self.simple(400, ("%s\n" % e).encode())
                return
            self.simple(200, b"ok\n")
        elif u.path == "/state":
            self.simple(200, self.state.as_json().encode(),
                        "application/json")
        else:
            self.simple(404, b"no such control\n")


class FaultHandler(Handler):
    state = None
    log = None
    upstream = None

    def do_GET(self):
        self.handle_fault()

    do_HEAD = do_PUT = do_DELETE = do_POST = do_GET

    def reset(self):
        self.close_connection = True
        s = self.connection
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     struct.pack("ii", 1, 0))
        try:
            s.close()
        except OSError:
            pass

    def handle_fault(self):
        rng = self.headers.get("Range")
        line = "%s %s %s" % (self.command, self.path, rng or "-")
        fault, released = self.state.decide(line)
        body = self.read_body()
        if body is None:
            self.close_connection = True
            n = self.simple(400, b"bad request body\n")
            self.log.line(self.command, self.path, rng, 400, n, "pass")
            return
        if fault == "reset":
            self.log.line(self.command, self.path, rng, 0, 0, "reset")
            self.reset()
            return
        if fault == "hang":
            self.log.line(self.command, self.path, rng, 0, 0, "hang")
            released.wait()
            self.reset()
            return
        if fault == "status":
            st = self.state.status
            loc = self.state.location
            n = self.simple(st, b"injected fault\n", extra_headers=(
                [("Location", loc)] if loc else []))
            self.log.line(self.command, self.path, rng, st, n, "status")
            return
        if fault == "delay":
            time.sleep(self.state.delay)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in HOP}
        up_path = self.state.upstream_path(self.path)
        if up_path != self.path:
            fault += "+replaced"
        try:
            conn, resp = self.upstream_request(
                self.upstream, self.command, up_path, headers, body)
        except OSError as e:
            n = self.simple(502, ("upstream: %s\n" % e).encode())
            self.log.line(self.command, self.path, rng, 502, n, fault)
            return
        try:
            self.relay(resp, fault, rng)
        finally:
            conn.close()

    def relay(self, resp, fault, rng):
        length = resp.getheader("Content-Length")
        n = int(length) if length is not None else None
        self.send_response(resp.status)
        self.copy_headers(resp, () if n is not None else ("content-length",))
        if n is None:
            self.close_connection = True
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command == "HEAD" or resp.status in (204, 304):
            self.log.line(self.command, self.path, rng, resp.status, 0,
                          fault)
            return
        limit = n
        if fault.startswith("truncate"):
            cut = self.state.bytes
            if cut is None:
                cut = (n or 0) // 2
            limit = cut if n is None else min(cut, max(n - 1, 0))
        sent, full = self.stream(resp, limit)
        if fault.startswith("truncate") or not full or n is None:
            self.close_connection = True
            try:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.log.line(self.command, self.path, rng, resp.status, sent, fault)


def cmd_fault(a):
    watchdog(a.parent, a.lifetime)
    state = FaultState()
    FaultHandler.state = ControlHandler.state = state
    FaultHandler.log = Logger(a.log)
    FaultHandler.upstream = a.upstream
    ctl = Server(("127.0.0.1", 0), ControlHandler)
    threading.Thread(target=ctl.serve_forever, daemon=True).start()
    srv = Server(("127.0.0.1", 0), FaultHandler)
    write_port(a.control_port_file, ctl.server_address[1])
    write_port(a.port_file, srv.server_address[1])
    try:
        srv.serve_forever()
    finally:
        state.set({})


# ------------------------------------------------------------ supervise

def cmd_supervise(a):
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        sys.exit("supervise: no command")
    libc = ctypes.CDLL(None, use_errno=True)

    def pdeathsig():
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG

    child = subprocess.Popen(cmd, preexec_fn=pdeathsig)
    # The main thread alone waits for the child (Popen.wait takes a lock);
    # a signal or the watchdog only asks it to stop, then kills it after 5 s.
    stopping = []

    def stop(*_):
        if not stopping:
            stopping.append(time.monotonic())
            try:
                child.terminate()
            except OSError:
                pass

    def gone():
        stop()
        for _ in range(50):
            if child.returncode is not None:
                return
            time.sleep(0.1)
        child.kill()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    watchdog(a.parent, a.lifetime, gone)
    while True:
        try:
            rc = child.wait(0.2)
            break
        except subprocess.TimeoutExpired:
            if stopping and time.monotonic() - stopping[0] > 5:
                child.kill()
    sys.exit(0 if stopping else rc)


def cmd_freeport(_a):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
    s.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp):
        sp.add_argument("--parent", type=int, default=os.getppid())
        sp.add_argument("--lifetime", type=float, default=3600)

    s = sub.add_parser("sigv4-proxy")
    common(s)
    s.add_argument("--upstream", type=int, required=True)
    s.add_argument("--credentials", required=True)
    s.add_argument("--region", default="us-east-1")
    s.add_argument("--allow-anonymous", action="store_true")
    s.add_argument("--allow-missing-content-sha256", action="store_true")
    s.add_argument("--log", required=True)
    s.add_argument("--port-file", required=True)
    s.add_argument("--tls-cert", help="serve HTTPS with this certificate")
    s.add_argument("--tls-key", help="and this key")
    s.set_defaults(fn=cmd_sigv4)
    f = sub.add_parser("fault-proxy")
    common(f)
    f.add_argument("--upstream", type=int, required=True)
    f.add_argument("--log", required=True)
    f.add_argument("--port-file", required=True)
    f.add_argument("--control-port-file", required=True)
    f.set_defaults(fn=cmd_fault)
    v = sub.add_parser("supervise")
    common(v)
    v.add_argument("cmd", nargs=argparse.REMAINDER)
    v.set_defaults(fn=cmd_supervise)
    r = sub.add_parser("freeport")
    r.set_defaults(fn=cmd_freeport)
    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
