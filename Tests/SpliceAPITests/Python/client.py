#!/usr/bin/env python3
"""The HTTP API driven the way a platform drives it: Python's `requests` against a real
coordinator and worker (started by SpliceAPITests). Each scenario is one subcommand; it prints what
it checked and exits non-zero with the reason on the first check that fails.

    client.py SCENARIO CONFIG.json

CONFIG names the API's base URL, the tokens (by role), the clip, the output folder, the database
URL (for psql) and whatever the scenario needs.
"""
import hashlib
import hmac
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time

import requests

CONFIG = {}


def check(condition, message):
    if not condition:
        raise SystemExit("FAILED: " + message)
    print("ok:", message, flush=True)


def headers(role, **extra):
    result = {"Authorization": "Bearer " + CONFIG["tokens"][role]}
    result.update(extra)
    return result


def url(path):
    return CONFIG["api"] + path


def is_problem(response, status, kind, field=None):
    """Whether `response` is the RFC 9457 problem `kind` with `status` (and `field`)."""
    if response.status_code != status:
        return False
    if not response.headers.get("Content-Type", "").startswith("application/problem+json"):
        return False
    body = response.json()
    return (body.get("type") == "urn:splice:problem:" + kind and body.get("status") == status
            and bool(body.get("title")) and bool(body.get("detail")) and (field is None or body.get("field") == field))


def describe(response):
    return f"{response.status_code} {response.text[:300]}"


def frames(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                          "stream=nb_read_frames", "-of", "csv=p=0", path], check=True, capture_output=True, text=True)
    return int(out.stdout.strip())


def read_events(response, stop_after=None):
    """(id, event, data) of a Server-Sent Events response until it ends (or `stop_after` state events)."""
    events, current = [], {}
    states = 0
    for raw in response.iter_lines(decode_unicode=True):
        if raw is None:
            continue
        line = raw
        if line == "":
            if "data" in current:
                events.append((current.get("id"), current.get("event", "message"), json.loads(current["data"])))
                if current.get("event") == "state":
                    states += 1
                    if stop_after is not None and states >= stop_after:
                        response.close()
                        return events
            current = {}
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        current[name] = value[1:] if value.startswith(" ") else value
    return events


class Receiver:
    """A webhook receiver on a free loopback port, checking signatures with Python's hmac."""

    def __init__(self, secret):
        self.secret, self.deliveries, self.lock = secret, [], threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                signature = dict(part.split("=", 1) for part in self.headers["Splice-Signature"].split(","))
                mac = hmac.new(receiver.secret.encode(), signature["t"].encode() + b"." + body, hashlib.sha256).hexdigest()
                valid = hmac.compare_digest(mac, signature["v1"]) and abs(time.time() - int(signature["t"])) < 300
                with receiver.lock:
                    receiver.deliveries.append({"id": self.headers["Splice-Event-Id"], "valid": valid,
                                                "event": json.loads(body)})
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def wait_for(self, kind, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                if any(d["event"]["type"] == kind for d in self.deliveries):
                    return True
            time.sleep(0.1)
        return False


# MARK: - Scenarios

def end_to_end():
    secret = "a-job-secret-of-some-length"
    receiver = Receiver(secret)
    output = os.path.join(CONFIG["outputs"], "e2e.mp4")
    body = {"input": CONFIG["clip"], "output": output, "reference": "e2e-1",
            "settings": {"video": {"codec": "h264", "preset": "ultrafast"},
                         "segmentDuration": {"value": 1, "timescale": 1}},
            "webhook": {"url": receiver.url, "secret": secret}}
    created = requests.post(url("/v1/jobs"), json=body, headers=headers("full"), timeout=30)
    check(created.status_code == 201, "POST /v1/jobs answers 201: " + describe(created))
    job = created.json()
    check(created.headers.get("Location") == "/v1/jobs/" + job["id"], "Location names the job")
    check(job["reference"] == "e2e-1" and job["settings"]["fileType"] == "mp4",
          "the job carries its reference and the defaults (fileType from the output)")

    # Follow it; drop the stream after the first state change and resume with Last-Event-ID.
    first = requests.get(url(f"/v1/jobs/{job['id']}/events"), headers=headers("full"), stream=True, timeout=120)
    check(first.status_code == 200 and first.headers["Content-Type"] == "text/event-stream", "the event stream opens")
    events = read_events(first, stop_after=1)
    last_id = [e[0] for e in events if e[1] == "state"][-1]
    resumed = requests.get(url(f"/v1/jobs/{job['id']}/events"), headers=headers("full", **{"Last-Event-ID": last_id}),
                           stream=True, timeout=300)
    events += read_events(resumed)
    states = [(e[0], e[2]["state"]) for e in events if e[1] == "state"]
    check([s for _, s in states] == ["queued", "planning", "running", "stitching", "succeeded"],
          "the stream (resumed once) saw every state once, in order: %s" % [s for _, s in states])
    ids = [int(i) for i, _ in states]
    check(ids == sorted(set(ids)), "state event ids increase and none repeats")
    progress = [e[2] for e in events if e[1] == "progress"]
    check(len(progress) >= 1 and progress[-1]["fraction"] == 1.0, "progress events end at 1")
    again = requests.get(url(f"/v1/jobs/{job['id']}/events"), headers=headers("full", **{"Last-Event-ID": str(ids[-1])}),
                         timeout=30)
    check(again.status_code == 204, "a stream resumed after the end is 204 (EventSource stops)")

    check(receiver.wait_for("job.succeeded"), "the webhook receiver got job.succeeded")
    deliveries = receiver.deliveries
    check(all(d["valid"] for d in deliveries), "every delivery's signature verifies (Python's hmac)")
    check(sorted(d["event"]["type"] for d in deliveries) == ["job.planned", "job.succeeded"],
          "one job.planned and one job.succeeded: %s" % [d["event"]["type"] for d in deliveries])
    check(all(d["id"] == d["event"]["id"] and d["event"]["data"]["job"]["reference"] == "e2e-1" for d in deliveries),
          "Splice-Event-Id is the body's id; the job's reference comes along")

    # The receiver has answered; the coordinator records each delivery's outcome just after, so
    # the job shows both once that commit is in (polled, not assumed).
    deadline = time.monotonic() + 60
    while True:
        final = requests.get(url(f"/v1/jobs/{job['id']}"), headers=headers("read"), timeout=30).json()
        recorded = [d for d in final.get("webhook", {}).get("deliveries", []) if d["outcome"] == "delivered"]
        if len(recorded) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    check(final["state"] == "succeeded" and final["progress"]["fraction"] == 1, "GET shows it succeeded")
    check(len(final["segments"]) == final["progress"]["segmentsTotal"] and
          all(s["state"] == "done" for s in final["segments"]) and
          # The audio segment has no video figures; the video segment's are there.
          any(s.get("figures", {}).get("videoBytes", 0) > 0 for s in final["segments"]),
          "every segment is done, the video's with its figures: %s" % final["segments"])
    delivered = [d for d in final["webhook"]["deliveries"] if d["outcome"] == "delivered"]
    check(len(delivered) == 2 and all(d["status"] == 200 for d in delivered) and final["webhook"]["ownSecret"],
          "webhook.deliveries shows both delivered (200)")
    check(frames(output) == frames(CONFIG["clip"]), "the output has the source's frame count (ffprobe)")


def idempotency():
    body = {"input": CONFIG["clip"], "output": os.path.join(CONFIG["outputs"], "idem.mp4"), "priority": -1000}
    key = {"Idempotency-Key": "idem-1"}
    first = requests.post(url("/v1/jobs"), json=body, headers=headers("full", **key), timeout=30)
    check(first.status_code == 201, "first request with a key: 201: " + describe(first))
    # Not segmentDuration: absent, the planner may lengthen it (bit-rate video on few slots); given,
    # it is kept, so spelling out 10 s is another request.
    spelled = {"priority": -1000, "output": body["output"], "input": body["input"],
               "settings": {"fileType": "mp4", "overwrite": False, "audioTracks": "all"}}
    repeat = requests.post(url("/v1/jobs"), data=json.dumps(spelled, indent=2), headers=headers(
        "full", **key, **{"Content-Type": "application/json"}), timeout=30)
    check(repeat.status_code == 200 and repeat.json()["id"] == first.json()["id"],
          "same key, same request (defaults spelled out, keys reordered): 200, the same job: " + describe(repeat))
    other = requests.post(url("/v1/jobs"), json=dict(body, output=os.path.join(CONFIG["outputs"], "idem-2.mp4")),
                          headers=headers("full", **key), timeout=30)
    check(is_problem(other, 422, "idempotency-key-reused", "Idempotency-Key"),
          "same key, another body: 422 idempotency-key-reused: " + describe(other))
    tenant = requests.post(url("/v1/jobs"), json=dict(body, output=os.path.join(CONFIG["outputs"], "idem-3.mp4")),
                           headers=headers("other", **key), timeout=30)
    check(tenant.status_code == 201 and tenant.json()["id"] != first.json()["id"],
          "another token's same key makes its own job: " + describe(tenant))

    # In flight: the jobs table locked, so the first request waits at its INSERT. Each step waits
    # for the database to show the one before it (the lock granted, the request waiting on it), and
    # the lock is let go only after the second answer: on a loaded machine fixed sleeps raced it.
    def scalar(sql):
        return subprocess.run(["psql", CONFIG["database"], "-qtAc", sql], capture_output=True, text=True).stdout.strip()

    def wait_until(condition, what, seconds=30):
        deadline = time.monotonic() + seconds
        while not condition():
            if time.monotonic() > deadline:
                raise SystemExit("FAILED: waited %d s for %s" % (seconds, what))
            time.sleep(0.05)

    lock = subprocess.Popen(["psql", CONFIG["database"], "-q"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            text=True)
    lock.stdin.write("BEGIN; LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;\n")
    lock.stdin.flush()
    wait_until(lambda: scalar("SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                              "WHERE c.relname = 'jobs' AND l.mode = 'ShareRowExclusiveLock' AND l.granted") == "1",
               "the jobs table to be locked")
    answers = {}
    racing = dict(body, output=os.path.join(CONFIG["outputs"], "idem-4.mp4"), reference="idem-race")
    thread = threading.Thread(target=lambda: answers.setdefault("first", requests.post(
        url("/v1/jobs"), json=racing, headers=headers("full", **{"Idempotency-Key": "idem-2"}), timeout=60)))
    thread.start()
    wait_until(lambda: scalar("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                              "AND datname = current_database()") != "0",
               "the first request to wait on the lock")
    second = requests.post(url("/v1/jobs"), json=racing, headers=headers("full", **{"Idempotency-Key": "idem-2"}),
                           timeout=30)
    check(is_problem(second, 409, "idempotency-key-in-use", "Idempotency-Key") and second.headers.get("Retry-After"),
          "the same key while the first request is in flight: 409: " + describe(second))
    lock.stdin.write("COMMIT;\n")
    lock.stdin.close()
    lock.wait()
    thread.join()
    check(answers["first"].status_code == 201, "the first request then completes: 201")

    # Cancel them all, and page through the list.
    made = [first.json()["id"], tenant.json()["id"], answers["first"].json()["id"]]
    for job in made:
        cancelled = requests.post(url(f"/v1/jobs/{job}/cancel"), headers=headers("full"), timeout=30)
        check(cancelled.status_code == 200 and cancelled.json()["state"] in ("cancelled", "succeeded", "failed"),
              "cancel answers the job: %s %s" % (cancelled.status_code, cancelled.json().get("state")))
    seen, cursor = [], None
    while True:
        page = requests.get(url("/v1/jobs"), params={"limit": 2, **({"cursor": cursor} if cursor else {})},
                            headers=headers("read"), timeout=30).json()
        seen += page["jobs"]
        cursor = page.get("next")
        if not cursor:
            break
    ids = [job["id"] for job in seen]
    check(len(ids) == len(set(ids)) and set(made) <= set(ids), "pages of 2 list every job once")
    stamps = [job["submittedAt"] for job in seen]
    check(stamps == sorted(stamps, reverse=True), "newest first")
    only = requests.get(url("/v1/jobs"), params={"state": "cancelled"}, headers=headers("read"), timeout=30).json()
    check(all(job["state"] == "cancelled" for job in only["jobs"]) and len(only["jobs"]) >= 1, "state= filters")
    found = requests.get(url("/v1/jobs"), params={"reference": "idem-race"}, headers=headers("read"), timeout=30)
    check([job["id"] for job in found.json()["jobs"]] == [answers["first"].json()["id"]],
          "reference= finds the job, and only it: " + describe(found))


def authorization():
    jobs = url("/v1/jobs")
    none = requests.get(jobs, timeout=30)
    check(is_problem(none, 401, "unauthorized") and none.headers["WWW-Authenticate"].startswith("Bearer"),
          "no token: 401 with WWW-Authenticate")
    for label, token in [("garbage", "not-a-token"), ("unknown", "spl_" + "A" * 43),
                         ("revoked", CONFIG["tokens"]["revoked"]), ("expired", CONFIG["tokens"]["expired"])]:
        answer = requests.get(jobs, headers={"Authorization": "Bearer " + token}, timeout=30)
        check(is_problem(answer, 401, "unauthorized") and "invalid_token" in answer.headers["WWW-Authenticate"],
              f"{label} token: 401: " + describe(answer))
    body = {"input": CONFIG["clip"], "output": os.path.join(CONFIG["outputs"], "auth.mp4"), "priority": -1000}
    check(requests.get(jobs, headers=headers("read"), timeout=30).status_code == 200, "read token: GET 200")
    check(is_problem(requests.post(jobs, json=body, headers=headers("read"), timeout=30), 403, "forbidden"),
          "read token: POST 403")
    check(is_problem(requests.get(jobs, headers=headers("submit"), timeout=30), 403, "forbidden"), "submit token: GET 403")
    missing = "/v1/jobs/00000000-0000-4000-8000-000000000000"
    check(is_problem(requests.post(url(missing + "/cancel"), headers=headers("read"), timeout=30), 403, "forbidden"),
          "read token: cancel 403")
    check(is_problem(requests.post(url(missing + "/cancel"), headers=headers("cancel"), timeout=30), 404, "not-found"),
          "cancel token: cancel of an unknown job 404")
    check(is_problem(requests.get(url(missing + "/events"), headers=headers("submit"), timeout=30), 403, "forbidden"),
          "submit token: events 403")

    # A token confined to roots.
    rooted = CONFIG["rooted"]
    outside_in = requests.post(jobs, json=dict(body, output=os.path.join(rooted["outputs"], "r.mp4")),
                               headers=headers("rooted"), timeout=30)
    check(is_problem(outside_in, 403, "path-not-allowed", "input"), "input outside the token's roots: 403: "
          + describe(outside_in))
    outside_out = requests.post(jobs, json={"input": rooted["clip"], "output": body["output"], "priority": -1000},
                                headers=headers("rooted"), timeout=30)
    check(is_problem(outside_out, 403, "path-not-allowed", "output"), "output outside the token's roots: 403")
    sneaky = requests.post(jobs, json={"input": rooted["link"], "output": os.path.join(rooted["outputs"], "r.mp4"),
                                       "priority": -1000}, headers=headers("rooted"), timeout=30)
    check(is_problem(sneaky, 403, "path-not-allowed", "input"), "a link inside the roots to a file outside: 403: "
          + describe(sneaky))
    climbing = requests.post(jobs, json={"input": os.path.join(rooted["inputs"], os.path.relpath(CONFIG["clip"], rooted["inputs"])),
                                         "output": os.path.join(rooted["outputs"], "r.mp4"), "priority": -1000},
                             headers=headers("rooted"), timeout=30)
    check(is_problem(climbing, 403, "path-not-allowed", "input"), "a .. out of the roots: 403: " + describe(climbing))
    inside = requests.post(jobs, json={"input": rooted["clip"], "output": os.path.join(rooted["outputs"], "r.mp4"),
                                       "priority": -1000}, headers=headers("rooted"), timeout=30)
    check(inside.status_code == 201, "inside its roots: 201: " + describe(inside))
    requests.post(url(f"/v1/jobs/{inside.json()['id']}/cancel"), headers=headers("full"), timeout=30)

    # Rate limit: 1 a second, bursts of 2.
    answers = [requests.get(jobs, headers=headers("slow"), timeout=30) for _ in range(4)]
    limited = [a for a in answers if a.status_code == 429]
    check(limited and is_problem(limited[0], 429, "rate-limited") and int(limited[0].headers["Retry-After"]) >= 1,
          "over its rate: 429 with Retry-After: %s" % [a.status_code for a in answers])

    # Refusals, each its own type and field.
    cases = [
        (requests.post(jobs, data="{not json", headers=headers("full", **{"Content-Type": "application/json"})),
         400, "invalid-json", None),
        (requests.post(jobs, data="[" * 40 + "]" * 40, headers=headers("full", **{"Content-Type": "application/json"})),
         400, "invalid-json", None),
        (requests.post(jobs, data="x", headers=headers("full", **{"Content-Type": "text/plain"})),
         415, "unsupported-media-type", None),
        (requests.post(jobs, json=dict(body, settings={"video": {"codec": "h264", "quality": 60}}), headers=headers("full")),
         422, "invalid-field", "settings.video.quality"),
        (requests.post(jobs, json=dict(body, refrence="x"), headers=headers("full")), 422, "invalid-field", "refrence"),
        (requests.post(jobs, json=dict(body, priority=5000), headers=headers("full")), 422, "invalid-field", "priority"),
        (requests.post(jobs, json=dict(body, input="/nonexistent/in.mov"), headers=headers("full")),
         422, "invalid-field", "input"),
        (requests.post(jobs, json=dict(body, webhook={"url": "ftp://x/"}), headers=headers("full")),
         422, "invalid-field", "webhook.url"),

        (requests.get(jobs, params={"limit": 0}, headers=headers("read")), 400, "invalid-parameter", "limit"),
        (requests.get(jobs, params={"state": "done"}, headers=headers("read")), 400, "invalid-parameter", "state"),
        (requests.get(jobs, params={"cursor": "bm9wZQ"}, headers=headers("read")), 400, "invalid-parameter", "cursor"),
        (requests.get(url(missing), headers=headers("read")), 404, "not-found", None),
        (requests.get(url("/v1/jobs/not-a-uuid"), headers=headers("read")), 404, "not-found", None),
        (requests.get(url("/v1/nothing"), headers=headers("read")), 404, "not-found", None),
        (requests.get(url(missing + "/cancel"), headers=headers("read")), 405, "method-not-allowed", None),
        (requests.get(url(missing + "/events"), headers=headers("read", **{"Last-Event-ID": "x"})),
         400, "invalid-parameter", "Last-Event-ID"),
    ]
    for answer, status, kind, field in cases:
        check(is_problem(answer, status, kind, field), f"{answer.request.method} {answer.request.path_url[:60]}: "
              f"{status} {kind} {field or ''}: " + describe(answer))
    # A body over 1 MiB: refused at its head, before it is sent (a raw socket: the client must not send it).
    host, port = CONFIG["api"][len("http://"):].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as raw:
        raw.sendall(("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %d\r\n\r\n" % (CONFIG["tokens"]["full"], (1 << 20) + 1)).encode())
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = raw.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, payload = answer.partition(b"\r\n\r\n")
    check(head.startswith(b"HTTP/1.1 413") and b"application/problem+json" in head
          and json.loads(payload)["type"] == "urn:splice:problem:request-too-large", "a body over 1 MiB: 413, unread")
    exists = os.path.join(CONFIG["outputs"], "exists.mp4")
    open(exists, "wb").close()
    taken = requests.post(jobs, json=dict(body, output=exists), headers=headers("full"), timeout=30)
    check(is_problem(taken, 409, "output-exists", "output"), "an existing output: 409 output-exists")
    check(requests.get(url(missing + "/cancel"), headers=headers("read")).headers.get("Allow") == "POST",
          "405 says what is allowed")
    put = requests.put(url(missing), headers=headers("read"), timeout=30)
    check(is_problem(put, 405, "method-not-allowed") and put.headers.get("Allow") == "GET", "PUT on a job: 405, Allow: GET")


def https():
    """Through nginx (Deploy/nginx/splice-api.conf) with TLS: submit, read, stream."""
    verify = CONFIG["ca"]
    api = CONFIG["https"]
    body = {"input": CONFIG["clip"], "output": os.path.join(CONFIG["outputs"], "tls.mp4"),
            "settings": {"video": {"codec": "h264", "preset": "ultrafast"}}}
    created = requests.post(api + "/v1/jobs", json=body, headers=headers("full"), verify=verify, timeout=30)
    check(created.status_code == 201, "POST over HTTPS through nginx: 201: " + describe(created))
    job = created.json()["id"]
    stream = requests.get(api + f"/v1/jobs/{job}/events", headers=headers("full"), verify=verify, stream=True, timeout=300)
    states = [e[2]["state"] for e in read_events(stream) if e[1] == "state"]
    check(states[-1] == "succeeded", "the event stream through nginx ends with succeeded: %s" % states)
    read = requests.get(api + f"/v1/jobs/{job}", headers=headers("read"), verify=verify, timeout=30)
    check(read.json()["state"] == "succeeded", "GET over HTTPS")
    refused = requests.get(api + "/metrics", verify=verify, timeout=30)
    check(refused.status_code == 404, "nothing but /v1/ is published")


if __name__ == "__main__":
    CONFIG.update(json.load(open(sys.argv[2])))
    {"e2e": end_to_end, "idempotency": idempotency, "auth": authorization, "https": https}[sys.argv[1]]()
    print("all checks passed", flush=True)
