#!/usr/bin/env python3
"""A webhook receiver for the tests: Python's http.server on loopback, checking every delivery's
Splice-Signature with Python's own hmac (the independent judge of the coordinator's signing).

    receiver.py PORT SECRET [--fail N] [--hang N]

Prints one JSON line per delivery on standard output: the event id and type, whether the
signature is valid (and the timestamp fresh), the status answered and the time. `--fail N`
answers the first N deliveries 500; `--hang N` never answers the first N (holds them open until
the process ends). Runs until it is killed.
"""
import hashlib
import hmac
import http.server
import json
import sys
import threading
import time


def verify(header, secret, body, now=None):
    parts = {}
    for piece in header.split(","):
        if "=" in piece:
            key, value = piece.split("=", 1)
            parts.setdefault(key, []).append(value)
    try:
        stamp = int(parts["t"][0])
    except (KeyError, ValueError):
        return False
    if abs((now or time.time()) - stamp) > 300:
        return False
    expected = hmac.new(secret.encode(), str(stamp).encode() + b"." + body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, candidate) for candidate in parts.get("v1", []))


def main():
    port, secret = int(sys.argv[1]), sys.argv[2]
    fail = int(sys.argv[sys.argv.index("--fail") + 1]) if "--fail" in sys.argv else 0
    hang = int(sys.argv[sys.argv.index("--hang") + 1]) if "--hang" in sys.argv else 0
    lock = threading.Lock()
    seen = [0]
    release = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                seen[0] += 1
                number = seen[0]
            valid = verify(self.headers.get("Splice-Signature", ""), secret, body)
            try:
                event = json.loads(body)
            except ValueError:
                event = {}
            record = {"n": number, "event": self.headers.get("Splice-Event-Id"), "type": event.get("type"),
                      "bodyId": event.get("id"), "job": event.get("data", {}).get("job", {}).get("id"),
                      "state": event.get("data", {}).get("job", {}).get("state"),
                      "reference": event.get("data", {}).get("job", {}).get("reference"),
                      "valid": valid, "at": time.time()}
            if number <= hang:
                record["status"] = None
                print(json.dumps(record), flush=True)
                release.wait()
                return
            status = 500 if number <= hang + fail else (200 if valid else 400)
            record["status"] = status
            print(json.dumps(record), flush=True)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print(json.dumps({"listening": port}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
