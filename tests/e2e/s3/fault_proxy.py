#!/usr/bin/env python3
"""A fault-injecting HTTP proxy between sexpgpu and an S3 server (moto), for
tests/e2e/s3.sh. Standard library only.

Usage: fault_proxy.py LISTEN_PORT UPSTREAM_PORT LOG_FILE

Every request is forwarded to 127.0.0.1:UPSTREAM_PORT unchanged (its Host
header too, so a SigV4 signature stays valid) and logged to LOG_FILE as one
JSON line: {"method", "path", "range", "status", "body_bytes", "fault"},
where body_bytes counts the response body bytes sent to the client: the
proof that a run downloaded no object bytes.

Faults are set with POST /__fault__ and a JSON body
  {"mode": M, "count": N, "methods": ["GET"], "seconds": S}
applied to the next N requests of those methods (N = -1: every one):
  500      answer 500 InternalError (an S3 XML error body), not forwarded
  412      answer 412 PreconditionFailed, as S3 answers a GET whose If-Match
           names an ETag the object no longer has (it was replaced)
  cut      send the headers and half the body, then close the connection
  stall    send the headers and 1000 bytes, then wait S seconds (default 20)
  etag     replace the ETag of every answer with a wrong MD5 (and drop the
           request's If-Match, which would name the wrong one)
  corrupt  flip one byte of the body
  none     no fault
"""
import http.client
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WRONG_ETAG = '"0123456789abcdef0123456789abcdef"'
HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "upgrade"}


class State:
    def __init__(self, log_path):
        self.lock = threading.Lock()
        self.fault = {"mode": "none", "count": 0, "methods": ["GET"]}
        self.log = open(log_path, "a", buffering=1)

    def take_fault(self, method, path):
        with self.lock:
            f = self.fault
            if f["mode"] == "none" or f["count"] == 0 or method not in f["methods"]:
                return None
            if path.startswith("/__"):
                return None
            if f["count"] > 0:
                f["count"] -= 1
            return dict(f)

    def record(self, entry):
        with self.lock:
            self.log.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else None

    def _control(self):
        body = json.loads(self._body() or b"{}")
        with STATE.lock:
            STATE.fault = {"mode": body.get("mode", "none"), "count": body.get("count", -1),
                           "methods": body.get("methods", ["GET"]),
                           "seconds": body.get("seconds", 20)}
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _handle(self):
        if self.path == "/__fault__":
            return self._control()
        method = self.command
        fault = STATE.take_fault(method, self.path)
        mode = fault["mode"] if fault else "none"
        with STATE.lock:
            persistent_etag = STATE.fault["mode"] == "etag" and method in STATE.fault["methods"]
        if persistent_etag:
            mode = "etag"
        entry = {"method": method, "path": self.path, "range": self.headers.get("Range"),
                 "fault": mode, "status": None, "body_bytes": 0}
        body = self._body()
        if mode in ("500", "412"):
            code, text = {"500": ("InternalError", "We encountered an internal error. Please try again."),
                          "412": ("PreconditionFailed",
                                  "At least one of the pre-conditions you specified did not hold")}[mode]
            xml = ('<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code>'
                   "<Message>%s</Message></Error>" % (code, text)).encode()
            self.send_response(int(mode))
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(xml)))
            self.end_headers()
            sent = 0
            if method != "HEAD":
                self.wfile.write(xml)
                sent = len(xml)
            entry.update(status=int(mode), body_bytes=sent)
            STATE.record(entry)
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        if mode == "etag":
            headers = {k: v for k, v in headers.items() if k.lower() != "if-match"}
        upstream = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=60)
        upstream.request(method, self.path, body=body, headers=headers)
        resp = upstream.getresponse()
        data = resp.read() if method != "HEAD" else b""
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() in HOP or k.lower() == "content-length":
                continue
            if k.lower() == "etag" and mode == "etag":
                v = WRONG_ETAG
            self.send_header(k, v)
        length = resp.getheader("Content-Length")
        self.send_header("Content-Length", length if method == "HEAD" and length else str(len(data)))
        self.end_headers()
        entry["status"] = resp.status
        upstream.close()
        if method == "HEAD":
            STATE.record(entry)
            return
        if mode == "corrupt" and data:
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        if mode == "cut":
            half = data[: len(data) // 2]
            self.wfile.write(half)
            self.wfile.flush()
            entry["body_bytes"] = len(half)
            STATE.record(entry)
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if mode == "stall":
            head = data[:1000]
            self.wfile.write(head)
            self.wfile.flush()
            entry["body_bytes"] = len(head)
            STATE.record(entry)
            time.sleep(fault.get("seconds", 20))
            self.close_connection = True
            return
        self.wfile.write(data)
        entry["body_bytes"] = len(data)
        STATE.record(entry)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _handle


if __name__ == "__main__":
    port, UPSTREAM, log_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    STATE = State(log_path)
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()
