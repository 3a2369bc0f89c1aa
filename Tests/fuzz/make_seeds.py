#!/usr/bin/env python3
"""Writes the seed corpora in Tests/fuzz/corpus/<Target>/: small real inputs each target starts
from. Run again after changing a seed here; inputs added by hand (crashes found) are kept."""
import base64, hashlib, hmac, json, os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    os.makedirs(os.path.join(ROOT, target), exist_ok=True)
    with open(os.path.join(ROOT, target, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def write_all(target, seeds):
    for name, data in seeds.items():
        write(target, name, data)


# FuzzHTTPRequest: the first byte sets the size of the pieces the rest arrives in.
requests = {
    "get": "GET /v1/sessions HTTP/1.1\r\nHost: localhost:8080\r\nAuthorization: Bearer abc\r\n\r\n",
    "post-length": 'POST /v1/sessions/s/tasks HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\n{"kind": "data"}\n',
    "post-chunked": "PUT /v1/blobs HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "5;ext=1\r\nhello\r\n0\r\nTrailer: x\r\n\r\nGET / HTTP/1.1\r\n",
    "pipelined": "GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b?x=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    "expect": "PUT /v1/blobs HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
    "absolute-form": "OPTIONS http://h:8080/v1?q HTTP/1.1\r\nHost: h:8080\r\n\r\n",
    "asterisk": "OPTIONS * HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
    "leading-empty-lines": "\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
    # Smuggling vectors: each must be refused or read one way only.
    "cl-te": "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nX",
    "te-te": "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n",
    "te-obfuscated": "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
    "cl-duplicate": "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\nContent-Length: 6\r\n\r\nhello!",
    "cl-plus": "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +5\r\n\r\nhello",
    "obs-fold": "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n",
    "bare-lf": "GET / HTTP/1.1\nHost: h\n\n",
    "chunk-size-space": "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5 5\r\nhello\r\n0\r\n\r\n",
    "chunk-huge": "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
    "http10-te": "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "two-hosts": "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
}
for i, (name, text) in enumerate(requests.items()):
    write("FuzzHTTPRequest", name, bytes([(i * 7) % 64]) + text.encode())

# JSON: documents of the API and the parser's edge cases.
documents = {
    "session": '{"mode": "background", "configuration": {"max_concurrent_tasks": 8, "headers": {"User-Agent": "sync/1.0"}}}',
    "task": '{"kind": "download", "id": "iso", "request": {"url": "https://example.com/big.iso"}, "priority": 0.5}',
    "problem": '{"type":"urn:transferd:problem:unauthorized","title":"Unauthorized","status":401,"detail":"missing bearer token"}',
    "numbers": '[0, -0, 1.5e300, -2.25E-7, 9007199254740993, 1e15, 123456789012345678]',
    "strings": r'["\u00e9\ud83d\ude00", "\"\\\/\b\f\n\r\t", "\u0000", "caf\u00e9"]',
    "nested": "[[[[[[[[[[{}]]]]]]]]]]",
    "literals": '{"a": true, "b": false, "c": null, "d": [], "e": {}}',
}
write_all("FuzzJSON", documents)

# Session configurations and delegates, as the README's examples PUT them.
configurations = {
    "headers": '{"max_concurrent_tasks": 8, "headers": {"User-Agent": "sync/1.0"}}',
    "credentials": '{"credentials": [{"host": "reports.example.com", "scheme": "basic", "username": "svc", "password": "s3cret"},'
                   ' {"host": "api.example.com", "path_prefix": "/v2", "scheme": "bearer", "token": "eyJhbGciOi"}]}',
    "proxy": '{"proxy": {"url": "http://user:pw@proxy.internal:3128", "no_proxy": "localhost,.corp.example"}}',
    "throttled": '{"max_bytes_per_second": 2000000, "discretionary": true, "cookies": {"accept": "same_domain", "send": true}}',
    "retry": '{"retry": {"max_attempts": 3, "backoff_initial_s": 1, "backoff_max_s": 30, "on_http_status": [503]},'
             ' "redirects": {"follow": true, "max": 5}, "timeout_request_s": 60}',
    "tls": '{"tls": {"ca_file": "/etc/ssl/ca.pem", "pinned_public_key": "sha256//YhKJKSzoTt2b5FP18fvpHo7fJYqQCjAa3HWY3tvRMwE="}}',
    "delegate": '{"url": "https://hooks.example.com/transferd", "secret": "whsec_MDEyMzQ1Njc4OWFiY2RlZg==",'
                ' "events": ["task.completed"], "max_in_flight": 4}',
}
write_all("FuzzSessionConfiguration", configurations)

# Tasks as clients POST them.
tasks = {
    "download": '{"kind": "download", "id": "iso", "request": {"url": "https://example.com/big.iso"}}',
    "data-post": '{"kind": "data", "request": {"url": "https://api.example.com/reports", "method": "POST",'
                 ' "headers": {"Content-Type": "application/json"}, "body": {"text": "{}"}}}',
    "upload-multipart": '{"kind": "upload", "request": {"url": "https://example.com/up"}, "upload": {"from_blob": "b1"},'
                        ' "multipart": {"field": "file", "filename": "a.txt", "mime_type": "text/plain", "fields": {"k": "v"}}}',
    "resume": '{"kind": "download", "resume_data": "eyJ2ZXJzaW9uIjoxfQ=="}',
    "checksum": '{"kind": "download", "request": {"url": "http://h/f"}, "checksum": {"sha256": "00"}, "max_bytes": 1000,'
                ' "priority": 0.9, "begin_at": "2026-11-22T10:00:00Z", "start": false}',
}
write_all("FuzzTaskCreation", tasks)

# Multipart: the task's `multipart` object.
multiparts = {
    "plain": '{"field": "file", "filename": "report.pdf", "mime_type": "application/pdf"}',
    "fields": '{"fields": {"title": "Q3", "note": "line 1\\r\\nline 2"}}',
    "hostile-names": '{"field": "a\\"b\\r\\nX: y", "filename": "..\\/x\\u0000\\"", "fields": {"n\\"\\r\\n": "--v"}}',
    # A name starting with a combining mark: a String-wise check joins it to the quote before it.
    "combining-mark-first": '{"field": "\\u0301.txt", "fields": {"\\r\\n": "\\r\\n--"}}',
    # Found by the target: CRLF and a quote with a combining mark are single Characters.
    "crlf-and-combining-quote": '{"field": "\\u00e9\\u0301", "filename": "\\"\\u0301.txt", "fields": {"\\r\\n": "\\r\\n--"}}',
}
write_all("FuzzMultipart", multiparts)

# Resume data: mode byte 0 then a token signed with the target's key; mode byte 1 then fields
# separated by NUL.
KEY = b"fuzz-resume-key-0123456789abcdef"


def token(url, validator, offset, partial, destination, origin):
    fields = [("version", 1), ("url", url), ("validator", validator), ("offset", offset),
              ("partial", partial), ("destination", destination), ("origin", origin)]
    payload = "{" + ",".join(json.dumps(k) + ":" + json.dumps(v, ensure_ascii=False, separators=(",", ":"))
                             for k, v in fields) + "}"
    signature = hmac.new(KEY, payload.encode(), hashlib.sha256).hexdigest()
    return base64.b64encode((payload[:-1] + ',"signature":"' + signature + '"}').encode()).decode()


write("FuzzResumeData", "token", b"\x00" + token("https://example.com/big.iso", '"etag-1"', 1048576,
                                                 "partial/iso", None, "com.example.sync/iso").encode())
write("FuzzResumeData", "token-destination", b"\x00" + token("http://h/f", "Tue, 22 Nov 2026 10:00:00 GMT", 0,
                                                             "p", "/srv/f", "s/t").encode())
write("FuzzResumeData", "fields", b"\x01https://h/\x00\"e\"\x00partial\x00/dest\x00s/t")
write("FuzzResumeData", "not-a-token", b"\x00eyJ2ZXJzaW9uIjoxfQ==")

# The auth file as the README writes it (token hashes of "billing", "search", "dashboard").
sha = lambda s: hashlib.sha256(s.encode()).hexdigest()
write("FuzzAuthFile", "readme", '{"principals": [\n'
      '  {"name": "billing", "token_sha256": "%s", "role": "write",\n'
      '   "namespaces": ["com.example.billing."], "allow_paths": ["/tmp"],\n'
      '   "limits": {"requests_per_second": 200, "burst": 400, "max_unfinished_tasks": 10000,\n'
      '              "max_bytes_per_second": 50000000}},\n'
      '  {"name": "search", "token_sha256": "%s", "role": "write", "namespaces": ["com.example.search."]},\n'
      '  {"name": "dashboard", "token_sha256": "%s", "role": "read", "namespaces": ["com.example."]}\n'
      ']}\n' % (sha("billing"), sha("search"), sha("dashboard")))
write("FuzzAuthFile", "admin", '{"principals": [{"name": "ops", "token_sha256": "%s", "role": "admin"}]}' % sha("ops"))
write("FuzzAuthFile", "duplicate-name", '{"principals": [{"name": "a", "token_sha256": "%s", "role": "read", "namespaces": ["x."]},'
      ' {"name": "a", "token_sha256": "%s", "role": "read", "namespaces": ["y."]}]}' % (sha("1"), sha("2")))
