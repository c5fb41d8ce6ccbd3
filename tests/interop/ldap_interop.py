"""Interoperability check of Portcullis' LDAP door (issue 39) with Python's `ldap3`.

Run by tests/integration/ldap_python.rs with the project's .venv Python:

    python ldap_interop.py LDAP_URL LDAPS_URL CA_FILE BASE USER_DN PASSWORD SERVICE_DN SECRET

Binds and searches as applications do (a service account searches, then the user binds),
over StartTLS and LDAPS, and records what the server answered: every result code by the
name ldap3 gives it, entries found, paged-search totals, WhoAmI and Compare.

Prints one JSON document of findings and exits 0; a client-side failure raises (exit 1).
"""

import json
import ssl
import sys

from ldap3 import ALL_ATTRIBUTES, MODIFY_REPLACE, SUBTREE, Connection, Server, Tls


def main() -> None:
    url, ldaps_url, ca, base, user_dn, password, service_dn, secret = sys.argv[1:9]
    tls = Tls(ca_certs_file=ca, validate=ssl.CERT_REQUIRED)
    plain = Server(url, use_ssl=False, tls=tls, get_info=None)
    out = {}

    def starttls(user=None, pw=None):
        conn = Connection(plain, user=user, password=pw, raise_exceptions=False)
        conn.open()
        assert conn.start_tls(), conn.result
        return conn

    # The application: a service account binds and looks the user up.
    app = starttls(service_dn, secret)
    out["service_bind"] = app.bind()
    app.search(base, "(uid=alice)", SUBTREE, attributes=["uid", "mail", "memberOf"])
    out["search_result"] = app.result["description"]
    out["found"] = [e.entry_dn for e in app.entries]
    out["mail"] = [str(v) for e in app.entries for v in e.mail.values]
    out["member_of"] = [str(v) for e in app.entries for v in e.memberOf.values]
    posix = "(&(objectClass=posixAccount)(uidNumber=1000))"
    app.search(base, posix, SUBTREE, attributes=["uid"])
    out["by_uid_number"] = [str(e.uid) for e in app.entries]
    paged = app.extend.standard.paged_search(
        base, "(objectClass=*)", SUBTREE, attributes=["1.1"], paged_size=2, generator=False
    )
    out["paged_entries"] = len([e for e in paged if e.get("type") == "searchResEntry"])
    out["service_whoami"] = app.extend.standard.who_am_i()
    out["compare_member"] = app.compare(
        f"cn=staff,ou=groups,{base}", "member", user_dn
    )
    app.modify(user_dn, {"mail": [(MODIFY_REPLACE, ["x@example.org"])]})
    out["modify_result"] = app.result["description"]
    app.unbind()

    # Then the user binds with the password typed.
    user = starttls(user_dn, password)
    out["user_bind"] = user.bind()
    out["user_whoami"] = user.extend.standard.who_am_i()
    user.unbind()
    wrong = starttls(user_dn, password + "x")
    out["wrong_password"] = (wrong.bind(), wrong.result["description"])
    unknown = starttls(f"uid=nobody,ou=people,{base}", password)
    out["unknown_dn"] = (unknown.bind(), unknown.result["description"])
    cleartext = Connection(plain, user=user_dn, password=password, raise_exceptions=False)
    out["plain_bind"] = (cleartext.bind(), cleartext.result["description"])
    anonymous = starttls()
    anonymous.search(base, "(uid=alice)", SUBTREE, attributes=[ALL_ATTRIBUTES])
    out["anonymous_search"] = anonymous.result["description"]

    # LDAPS from the first byte.
    secure = Server(ldaps_url, use_ssl=True, tls=tls, get_info=None)
    over_ldaps = Connection(secure, user=user_dn, password=password, raise_exceptions=False)
    out["ldaps_bind"] = over_ldaps.bind()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
