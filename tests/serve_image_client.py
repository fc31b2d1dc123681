#!/usr/bin/env python3
"""Images in chat, with Python's standard library only (tests/serve_image_test.sh).

Usage: serve_image_client.py png                       prints a 4x4 PNG as base64
       serve_image_client.py check PORT_A PORT_B PORT_ENC
A encodes images in process, B through the encode worker at PORT_ENC (same default encoder).
Checks: a streamed chat with a PNG and one with a PPM give tokens and usage; the image takes
prompt positions (prompt_tokens grows by the encoder's rows); A and B give the same greedy text;
bad images are 400 OpenAI errors naming the part; POST /v1/encode answers rows x dim float32.
"""
import base64
import http.client
import json
import struct
import sys
import zlib


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def png_bytes(w=4, h=4):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\0" + bytes((x * 60 + y * 30 + c * 90) % 256 for x in range(w) for c in range(3))
                    for y in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def png_uri():
    return "data:image/png;base64," + base64.b64encode(png_bytes()).decode()


def ppm_uri():
    ppm = b"P6\n3 2\n255\n" + bytes(range(0, 18 * 14, 14))
    return "data:image/x-portable-pixmap;base64," + base64.b64encode(ppm).decode()


def post(port, path, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    return conn, resp


def chat_body(parts, stream=True):
    return {"model": "tiny", "stream": stream, "stream_options": {"include_usage": True}, "max_tokens": 6,
            "temperature": 0, "messages": [{"role": "user", "content": parts}]}


def streamed_chat(port, parts):
    """Returns (text, usage) of a streamed chat."""
    conn, resp = post(port, "/v1/chat/completions", chat_body(parts))
    if resp.status != 200:
        fail(f"port {port}: streamed chat: HTTP {resp.status}: {resp.read()[:300]!r}")
    text, usage, done = "", None, False
    for line in resp:
        line = line.strip()
        if not line:
            continue
        if not line.startswith(b"data: "):
            fail(f"SSE line without 'data: ': {line[:100]!r}")
        if line == b"data: [DONE]":
            done = True
            break
        chunk = json.loads(line[6:])
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk["choices"]:
            text += choice["delta"].get("content", "")
    conn.close()
    if not done or usage is None:
        fail(f"port {port}: stream without [DONE] or usage")
    if usage["completion_tokens"] < 1:
        fail(f"port {port}: no tokens: {usage}")
    return text, usage


def expect_400(port, parts, param, code):
    conn, resp = post(port, "/v1/chat/completions", chat_body(parts, stream=False))
    payload = resp.read()
    conn.close()
    if resp.status != 400:
        fail(f"expected HTTP 400 for {param}, got {resp.status}: {payload[:300]!r}")
    err = json.loads(payload)["error"]
    if set(err) != {"message", "type", "param", "code"} or err["param"] != param or err["code"] != code:
        fail(f"not the expected OpenAI error ({param}, {code}): {err}")


def main():
    if sys.argv[1] == "png":
        print(base64.b64encode(png_bytes()).decode())
        return
    port_a, port_b, port_enc = (int(p) for p in sys.argv[2:5])
    text_only, u0 = streamed_chat(port_a, [{"type": "text", "text": "hello there"}])
    image = {"type": "image_url", "image_url": {"url": png_uri()}}
    text_a, ua = streamed_chat(port_a, [{"type": "text", "text": "hello "}, image, {"type": "text", "text": "there"}])
    text_b, ub = streamed_chat(port_b, [{"type": "text", "text": "hello "}, image, {"type": "text", "text": "there"}])
    if text_a != text_b or ua != ub:
        fail(f"in process and encode worker differ: {text_a!r} {ua} vs {text_b!r} {ub}")
    conn, resp = post(port_enc, "/v1/encode", {"image": png_uri()})
    enc = json.loads(resp.read())
    conn.close()
    rows, dim = enc["rows"], enc["dim"]
    if dim != 64 or rows < 1 or len(base64.b64decode(enc["data"])) != rows * dim * 4:
        fail(f"/v1/encode: rows {rows} dim {dim}, {len(enc['data'])} base64 bytes")
    # The image takes `rows` positions; the text around it tokenizes in two pieces (about the same).
    if not rows <= ua["prompt_tokens"] - u0["prompt_tokens"] <= rows + 3:
        fail(f"prompt_tokens {ua['prompt_tokens']} with the image, {u0['prompt_tokens']} without; rows {rows}")
    _, up = streamed_chat(port_b, [{"type": "input_image", "image_url": ppm_uri()}])
    if up["prompt_tokens"] < rows:
        fail(f"PPM image: prompt_tokens {up['prompt_tokens']} < {rows}")
    expect_400(port_a, [{"type": "text", "text": "x"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,@@"}}],
               "messages[0].content[1]", "invalid_image")
    expect_400(port_b, [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}],
               "messages[0].content[0]", "invalid_image")
    expect_400(port_a, [{"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lGODdh"}}],
               "messages[0].content[0]", "invalid_image")
    conn, resp = post(port_enc, "/v1/encode", {"image": "data:image/png;base64,AAAA"})
    if resp.status != 400:
        fail(f"/v1/encode with a bad image: HTTP {resp.status}")
    conn.close()
    print(f"serve_image_client: ok (text only {u0['prompt_tokens']} prompt tokens, with image {ua['prompt_tokens']}; "
          f"{rows} rows of {dim})")


main()
