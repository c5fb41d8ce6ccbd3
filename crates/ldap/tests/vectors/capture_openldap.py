#!/usr/bin/env python3
"""Captures the requests OpenLDAP's own clients (Debian ldap-utils: ldapwhoami, ldapsearch,
ldappasswd, libldap's encoder) send, as a second independent set of BER test vectors.

A throwaway listener on 127.0.0.1 answers each request with a minimal success (so the
client goes on to its next request) and records every LDAPMessage it reads: the bytes that
clients built on libldap (SSSD, nslcd, Apache's mod_authnz_ldap, ldap-utils) put on the wire.

    python3 crates/ldap/tests/vectors/capture_openldap.py > crates/ldap/tests/vectors/openldap.tsv

The committed file came from ldap-utils 2.5.13+dfsg-5 (Debian 12). Needs only python3 and
ldap-utils; the output is deterministic.
"""

import socket
import subprocess
import threading

ALICE = "uid=alice,ou=people,dc=example,dc=com"
PAGED_DONE_CONTROL = bytes.fromhex("a02330210416312e322e3834302e3131333535362e312e342e333139040730050201000400")


def read_message(conn):
    """One LDAPMessage (tag, definite length, content) or None at end of stream."""
    def read(n):
        out = b""
        while len(out) < n:
            chunk = conn.recv(n - len(out))
            if not chunk:
                return None
            out += chunk
        return out

    head = read(2)
    if head is None:
        return None
    length, raw = head[1], head
    if length & 0x80:
        extra = read(length & 0x7F)
        raw += extra
        length = int.from_bytes(extra, "big")
    return raw + read(length)


def tlv(tag, content):
    assert len(content) < 128
    return bytes([tag, len(content)]) + content


def answer(message):
    """A success in the response type of the request, or None when there is none."""
    msgid_len = message[message.index(0x02, 1) + 1]
    at = message.index(0x02, 1)
    msgid = message[at + 2: at + 2 + msgid_len]
    op_at = at + 2 + msgid_len
    op = message[op_at]
    result = bytes.fromhex("0a0100") + bytes.fromhex("0400") + bytes.fromhex("0400")
    kinds = {0x60: 0x61, 0x63: 0x65, 0x77: 0x78}
    if op not in kinds:
        return None
    body = tlv(0x02, msgid) + tlv(kinds[op], result)
    if op == 0x63 and b"1.2.840.113556.1.4.319" in message:
        body += PAGED_DONE_CONTROL
    return tlv(0x30, body)


def serve(listener, captured):
    conn, _ = listener.accept()
    with conn:
        while True:
            message = read_message(conn)
            if message is None:
                return
            captured.append(message)
            reply = answer(message)
            if message[message.index(0x02, 1) + 2 + message[message.index(0x02, 1) + 1]] == 0x42:
                return
            if reply is None:
                return
            conn.sendall(reply)
            # StartTLS: the client would start a handshake; the request is all we want.
            if b"1.3.6.1.4.1.1466.20037" in message:
                return


def capture(args):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    captured = []
    thread = threading.Thread(target=serve, args=(listener, captured))
    thread.start()
    subprocess.run([args[0], "-x", "-H", f"ldap://127.0.0.1:{port}"] + args[1:],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
    thread.join(timeout=10)
    listener.close()
    return captured


def main():
    runs = {
        "whoami": ["ldapwhoami", "-D", ALICE, "-w", "secret"],
        "search": ["ldapsearch", "-D", ALICE, "-w", "secret", "-b", "ou=people,dc=example,dc=com",
                   "-s", "one", "-z", "10", "-l", "30", "-E", "pr=50/noprompt",
                   "(&(objectClass=posixAccount)(|(uid=alice)(cn=Al*ce*))(!(uidNumber>=5000)))",
                   "cn", "uid", "+"],
        "rootdse": ["ldapsearch", "-b", "", "-s", "base", "(objectClass=*)", "namingContexts"],
        "passwd": ["ldappasswd", "-D", ALICE, "-w", "old secret", "-a", "old secret", "-s", "new secret"],
        "starttls": ["ldapwhoami", "-Z"],
    }
    print("# name\thex: LDAPMessages sent by OpenLDAP's ldap-utils (see capture_openldap.py)")
    for name, args in runs.items():
        for i, message in enumerate(capture(args)):
            print(f"{name}_{i}\t{message.hex()}")


if __name__ == "__main__":
    main()
