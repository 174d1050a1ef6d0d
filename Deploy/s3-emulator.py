#!/usr/bin/env python3
"""S3 on loopback for Splice's object-storage tests and benchmark, and botocore as their judge.

Runs from the tools environment Deploy/setup.sh makes (/opt/splice-tools, or SPLICE_TOOLS,
with moto[server] and boto3). Subcommands:

  serve                 moto's S3 (server mode) on 127.0.0.1, authentication enforced: an IAM user
                        with an access key allowed s3:* is made first, then every request must be
                        signed by it (moto recomputes each signature with botocore; presigned URLs,
                        which moto cannot check, are checked here the same way). Prints one JSON
                        line {endpoint, accessKeyID, secretAccessKey, region}, then answers commands
                        on stdin (`create-bucket NAME`) with a JSON line each; exits when stdin
                        closes (so it dies with the test process that started it).
  tap UPSTREAM LOG      a recording proxy in front of UPSTREAM: every request (method, path, headers,
                        body up to 1 MiB) appended to LOG as a JSON line, then forwarded unchanged and
                        the answer relayed. Prints {endpoint}; then the stdin command
                        `fail METHOD STATUS COUNT` answers the next COUNT requests of METHOD with
                        STATUS instead (fault injection; STATUS 0: no answer for 5 s, then the
                        connection is closed; STATUS 1: the real answer, cut off halfway through its
                        body). Exits when stdin closes.
  sign LOG KEY SECRET REGION [TOKEN]
                        for each request in LOG, the Authorization header botocore's S3SigV4Auth
                        computes for the same method, URL, headers, body and X-Amz-Date; prints
                        JSON lines {method, path, sent, botocore}.
  presign ENDPOINT BUCKET KEY ACCESS SECRET REGION EXPIRES TIMESTAMP [TOKEN]
                        botocore's presigned GET URL (path-style) at TIMESTAMP (YYYYMMDDTHHMMSSZ).
  bench ENDPOINT ACCESS SECRET MEGABYTES
                        boto3's own MB/s against ENDPOINT (the emulator's ceiling): upload_fileobj (8 MiB
                        parts, 4 at once), download_fileobj (8 MiB ranged GETs, 4 at once) and one
                        get_object streamed; readMBps is the better of the two reads.
"""
import base64
import datetime
import hashlib
import http.client
import http.server
import json
import sys
import threading
import time
import urllib.request
from unittest import mock


def wait_for_stdin_close():
    try:
        while sys.stdin.buffer.read(1024):
            pass
    except Exception:
        pass


def serve():
    import logging
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request on stderr

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    # Authentication is off until reset-auth: make the user and its key first.
    iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                       aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
    iam.create_user(UserName="splice")
    iam.put_user_policy(UserName="splice", PolicyName="s3", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
    }))
    key = iam.create_access_key(UserName="splice")["AccessKey"]
    verify_presigned_urls(key["AccessKeyId"], key["SecretAccessKey"])
    request = urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=b"0", method="POST",
                                     headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(request).read()
    print(json.dumps({"endpoint": endpoint, "accessKeyID": key["AccessKeyId"],
                      "secretAccessKey": key["SecretAccessKey"], "region": "us-east-1"}), flush=True)
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=key["AccessKeyId"],
                      aws_secret_access_key=key["SecretAccessKey"])
    # Commands on stdin, one per line, each answered by one JSON line: `create-bucket NAME`.
    for line in sys.stdin:
        words = line.split()
        try:
            if words[:1] == ["create-bucket"] and len(words) == 2:
                s3.create_bucket(Bucket=words[1])
                print(json.dumps({"ok": True}), flush=True)
            else:
                print(json.dumps({"ok": False, "error": f"unknown command {line.strip()}"}), flush=True)
        except Exception as error:
            print(json.dumps({"ok": False, "error": str(error)}), flush=True)


def verify_presigned_urls(access_key, secret):
    """moto checks header signatures only, and with authentication on it cannot serve a request
    that has none (a presigned URL): check query signatures here, with botocore's presigner
    recomputing the URL for the same time, expiry and credentials, and refuse expired ones."""
    from urllib.parse import parse_qsl, urlencode, urlparse
    from botocore.auth import S3SigV4QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.s3.exceptions import S3AccessDeniedError, S3InvalidAccessKeyIdError, S3SignatureDoesNotMatchError

    original = ActionAuthenticatorMixin._authenticate_and_authorize_action

    def check(self, iam_request_cls, resource="*"):
        query = urlparse(self.uri).query
        if "Authorization" in self.headers or "X-Amz-Signature=" not in query:
            return original(self, iam_request_cls, resource)
        params = dict(parse_qsl(query, keep_blank_values=True))
        credential = params.get("X-Amz-Credential", "").split("/")
        if credential[0] != access_key or len(credential) != 5:
            raise S3InvalidAccessKeyIdError()
        when = datetime.datetime.strptime(params["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
        expires = int(params["X-Amz-Expires"])
        if datetime.datetime.now(datetime.timezone.utc) > when + datetime.timedelta(seconds=expires):
            raise S3AccessDeniedError()  # "Request has expired" on AWS
        rest = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if not k.startswith("X-Amz-")]
        url = "http://" + self.headers["Host"] + self.raw_path + ("?" + urlencode(rest) if rest else "")
        request = AWSRequest(method=self.method, url=url, headers={})
        auth = S3SigV4QueryAuth(Credentials(access_key, secret, params.get("X-Amz-Security-Token")), "s3",
                                credential[2], expires=expires)
        with mock.patch("botocore.auth.get_current_datetime", return_value=when):
            auth.add_auth(request)
        expected = dict(parse_qsl(urlparse(request.url).query))["X-Amz-Signature"]
        if expected != params["X-Amz-Signature"]:
            raise S3SignatureDoesNotMatchError()

    ActionAuthenticatorMixin._authenticate_and_authorize_action = check


def tap(upstream, log_path):
    upstream_host = upstream.split("://", 1)[1].rstrip("/")
    log_lock = threading.Lock()
    faults = {"method": None, "status": 0, "count": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def relay(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            record = {"method": self.command, "path": self.path, "headers": list(self.headers.items()),
                      "bodyLength": len(body), "bodySHA256": hashlib.sha256(body).hexdigest()}
            if len(body) <= 1 << 20:
                record["body"] = base64.b64encode(body).decode()
            with log_lock:
                with open(log_path, "a") as log:
                    log.write(json.dumps(record) + "\n")
                inject = faults["count"] > 0 and faults["method"] == self.command
                if inject:
                    faults["count"] -= 1
            cut = inject and faults["status"] == 1
            if inject and faults["status"] == 0:
                time.sleep(5)  # a stall: say nothing, then hang up
                self.close_connection = True
                return
            if inject and not cut:
                error = b"<?xml version=\"1.0\"?><Error><Code>InternalError</Code><Message>injected</Message></Error>"
                self.answer(faults["status"], [("Content-Type", "application/xml")], error)
                return
            connection = http.client.HTTPConnection(upstream_host, timeout=120)
            connection.request(self.command, self.path, body=body if length else None, headers=dict(self.headers.items()))
            response = connection.getresponse()
            data = response.read()
            headers = [(k, v) for k, v in response.getheaders()
                       if k.lower() not in ("content-length", "transfer-encoding", "connection")]
            connection.close()
            if cut:
                # The real answer's head and half its body, then the connection drops.
                self.send_response(response.status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[:len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.answer(response.status, headers, data)

        def answer(self, status, headers, data):
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            if self.command == "HEAD":
                # HEAD answers carry the object's length without its bytes.
                length = dict((k.lower(), v) for k, v in headers).get("content-length", str(len(data)))
                self.send_header("Content-Length", length)
                self.end_headers()
            else:
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = relay

        def do_HEAD(self):
            connection = http.client.HTTPConnection(upstream_host, timeout=120)
            with log_lock:
                with open(log_path, "a") as log:
                    log.write(json.dumps({"method": "HEAD", "path": self.path, "headers": list(self.headers.items()),
                                          "bodyLength": 0, "bodySHA256": hashlib.sha256(b"").hexdigest(),
                                          "body": ""}) + "\n")
            connection.request("HEAD", self.path, headers=dict(self.headers.items()))
            response = connection.getresponse()
            response.read()
            self.send_response(response.status)
            for name, value in response.getheaders():
                if name.lower() not in ("transfer-encoding", "connection"):
                    self.send_header(name, value)
            self.end_headers()
            connection.close()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(json.dumps({"endpoint": f"http://127.0.0.1:{server.server_address[1]}"}), flush=True)
    # Commands on stdin, one per line, each answered by one JSON line: `fail METHOD STATUS COUNT`.
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["fail"] and len(words) == 4:
            with log_lock:
                faults.update({"method": words[1], "status": int(words[2]), "count": int(words[3])})
            print(json.dumps({"ok": True}), flush=True)
        else:
            print(json.dumps({"ok": False, "error": f"unknown command {line.strip()}"}), flush=True)


# Headers that are not part of the request's meaning: botocore does not sign them and neither
# should Splice. Everything else the request carries is given to botocore to sign.
UNSIGNED = {"authorization", "x-amz-date", "user-agent", "accept", "expect", "content-length",
            "transfer-encoding", "connection"}


def sign(log_path, access_key, secret, region, token=None):
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.config import Config
    from botocore.credentials import Credentials

    credentials = Credentials(access_key, secret, token)
    for line in open(log_path):
        record = json.loads(line)
        sent = dict((k.lower(), v) for k, v in record["headers"])
        if "authorization" not in sent:
            continue
        headers = {k: v for k, v in record["headers"] if k.lower() not in UNSIGNED and k.lower() != "x-amz-security-token"}
        body = base64.b64decode(record["body"]) if "body" in record else b""
        request = AWSRequest(method=record["method"], url="http://" + sent["host"] + record["path"],
                             headers=headers, data=body)
        # Payload signing as the request declares it: UNSIGNED-PAYLOAD is botocore's
        # payload_signing_enabled=False; otherwise botocore hashes the body itself.
        unsigned = sent.get("x-amz-content-sha256") == "UNSIGNED-PAYLOAD"
        request.context["client_config"] = Config(s3={"payload_signing_enabled": not unsigned})
        auth = S3SigV4Auth(credentials, "s3", region)
        if "body" not in record and not unsigned:
            # A signed body too large to log: its hash, computed by the tap from the bytes received.
            auth.payload = lambda _request, digest=record["bodySHA256"]: digest
        when = datetime.datetime.strptime(sent["x-amz-date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
        with mock.patch("botocore.auth.get_current_datetime", return_value=when):
            auth.add_auth(request)
        print(json.dumps({"method": record["method"], "path": record["path"], "sent": sent["authorization"],
                          "botocore": request.headers["Authorization"],
                          "payloadHash": request.headers.get("X-Amz-Content-SHA256"),
                          "sentPayloadHash": sent.get("x-amz-content-sha256")}), flush=True)


def presign(endpoint, bucket, key, access_key, secret, region, expires, timestamp, token=None):
    import boto3
    from botocore.config import Config

    client = boto3.client("s3", endpoint_url=endpoint, region_name=region, aws_access_key_id=access_key,
                          aws_secret_access_key=secret, aws_session_token=token,
                          config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
    when = datetime.datetime.strptime(timestamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    with mock.patch("botocore.auth.get_current_datetime", return_value=when):
        print(client.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key},
                                            ExpiresIn=int(expires)))


def bench(endpoint, access_key, secret, megabytes):
    import io
    import os
    import boto3
    from boto3.s3.transfer import TransferConfig

    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=access_key,
                          aws_secret_access_key=secret)
    bucket = f"boto3-bench-{os.getpid()}"
    client.create_bucket(Bucket=bucket)
    data = os.urandom(int(megabytes) << 20)
    config = TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=8 << 20, max_concurrency=4)
    start = time.monotonic()
    client.upload_fileobj(io.BytesIO(data), bucket, "bench.bin", Config=config)
    write = len(data) / (time.monotonic() - start) / 1e6
    sink = io.BytesIO()
    start = time.monotonic()
    client.download_fileobj(bucket, "bench.bin", sink, Config=config)
    ranged = len(data) / (time.monotonic() - start) / 1e6
    assert sink.getvalue() == data
    start = time.monotonic()
    body = client.get_object(Bucket=bucket, Key="bench.bin")["Body"]
    streamed = bytearray()
    for chunk in iter(lambda: body.read(1 << 20), b""):
        streamed += chunk
    stream = len(data) / (time.monotonic() - start) / 1e6
    assert bytes(streamed) == data
    client.delete_object(Bucket=bucket, Key="bench.bin")
    client.delete_bucket(Bucket=bucket)
    print(json.dumps({"writeMBps": write, "readMBps": max(ranged, stream), "rangedReadMBps": ranged,
                      "streamReadMBps": stream}))


if __name__ == "__main__":
    command, arguments = sys.argv[1], sys.argv[2:]
    {"serve": serve, "tap": tap, "sign": sign, "presign": presign, "bench": bench}[command](*arguments)
