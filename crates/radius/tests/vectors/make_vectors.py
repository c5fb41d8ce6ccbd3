"""Reference packets for crates/radius/tests/vectors.rs, made with Python's own hashlib and
hmac (an implementation independent of ours), from the RFC 2865 §7.1 example exchange.

Run: python3 crates/radius/tests/vectors/make_vectors.py > crates/radius/tests/vectors/ma.txt
"""
import hashlib, hmac, struct

SECRET = b"xyzzy5461"
RA = bytes.fromhex("0f403f9473978057bd83d5cb98f4227a")  # RFC 2865 §7.1 Request Authenticator

def attr(t, v):
    return bytes([t, len(v) + 2]) + v

def hide(pw, secret, ra):
    pw = pw + b"\0" * (-len(pw) % 16)
    out, prev = b"", ra
    for i in range(0, len(pw), 16):
        b = hashlib.md5(secret + prev).digest()
        c = bytes(x ^ y for x, y in zip(pw[i:i + 16], b))
        out += c
        prev = c
    return out

def with_ma(code, ident, auth, attrs, secret, mac_auth=None):
    body = attr(80, b"\0" * 16) + b"".join(attrs)
    head = struct.pack("!BBH", code, ident, 20 + len(body))
    mac = hmac.new(secret, head + (mac_auth or auth) + body, hashlib.md5).digest()
    return head + auth + attr(80, mac) + body[18:]

# Access-Request, Message-Authenticator first: user nemo, password arctangent (RFC 2865 §7.1).
req = with_ma(1, 0, RA, [attr(1, b"nemo"), attr(2, hide(b"arctangent", SECRET, RA)),
                         attr(4, bytes([192, 168, 1, 16])), attr(5, struct.pack("!I", 3))], SECRET)
print("request", req.hex())
# Access-Accept to it: Message-Authenticator first (keyed over the request authenticator),
# then Service-Type, then a Proxy-State; Response Authenticator over the result.
body_attrs = [attr(6, struct.pack("!I", 1))]
unsigned = with_ma(2, 0, RA, body_attrs, SECRET)
resp_auth = hashlib.md5(unsigned[:4] + RA + unsigned[20:] + SECRET).digest()
reply = unsigned[:4] + resp_auth + unsigned[20:]
print("accept", reply.hex())
# Status-Server (RFC 5997 §6 shape): Message-Authenticator only.
ss_auth = bytes(range(16))
print("status", with_ma(12, 218, ss_auth, [], SECRET).hex())
