"""Issue #12: pyrad (an unmodified third-party RADIUS client) against Portcullis.

Usage: radius_pyrad.py HOST PORT SECRET USER PASSWORD
Prints one JSON object: the reply code of a right and a wrong password, whether a request
without Message-Authenticator got any answer, and the reply to Status-Server. pyrad itself
checks every reply's identifier, Response Authenticator and (enforce_ma) its
Message-Authenticator: a reply that fails them is discarded and the call times out.
"""
import json
import sys
import tempfile

from pyrad import packet
from pyrad.client import Client, Timeout
from pyrad.dictionary import Dictionary

DICTIONARY = """
ATTRIBUTE User-Name 1 string
ATTRIBUTE User-Password 2 string
ATTRIBUTE Reply-Message 18 string
ATTRIBUTE Calling-Station-Id 31 string
ATTRIBUTE Proxy-State 33 octets
ATTRIBUTE Message-Authenticator 80 octets
"""


def main():
    host, port, secret, user, password = sys.argv[1:6]
    with tempfile.NamedTemporaryFile("w", suffix=".dict", delete=False) as f:
        f.write(DICTIONARY)
    dictionary = Dictionary(f.name)

    def client(timeout=5, retries=1):
        return Client(server=host, authport=int(port), secret=secret.encode(),
                      dict=dictionary, timeout=timeout, retries=retries, enforce_ma=True)

    def access(pw, with_ma=True, station="02-00-00-00-00-01", timeout=5):
        c = client(timeout=timeout)
        # pyrad adds a Message-Authenticator to Access-Requests unless told not to.
        req = c.CreateAuthPacket(code=packet.AccessRequest, User_Name=user,
                                 message_authenticator=with_ma)
        req["User-Password"] = req.PwCrypt(pw)
        req["Calling-Station-Id"] = station
        req["Proxy-State"] = b"pyrad-proxy-state"
        try:
            reply = c.SendPacket(req)
        except Timeout:
            return None
        proxy = reply.get("Proxy-State") or [b""]
        return {"code": reply.code, "proxy_state": proxy[0].decode(),
                "has_ma": reply.message_authenticator is not None}

    out = {
        "right": access(password),
        "wrong": access(password + "x", station="02-00-00-00-00-02"),
        # One try with a short timeout: no answer is the expected outcome.
        "no_ma": access(password, with_ma=False, timeout=1.5),
    }
    c = client()
    status = c.CreateAuthPacket(code=packet.StatusServer, message_authenticator=True)
    out["status"] = c.SendPacket(status).code
    print(json.dumps(out))


if __name__ == "__main__":
    main()
