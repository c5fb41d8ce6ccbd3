#!/usr/bin/env python3
"""BER test vectors for crates/ldap, written by an independent LDAP implementation.

Python ldap3 (with pyasn1) builds each LDAPMessage with its own request builders (the
functions its Connection calls: bind_operation, search_operation with its RFC 4515 filter
compiler, extended_operation, paged_search_control) and, for the responses a server sends,
with its rfc4511 ASN.1 classes. The output is `name<TAB>hex` lines; crates/ldap/tests/vectors.rs
decodes the requests with portcullis-ldap and compares its response builders' bytes with
these.

    python3 -m venv /tmp/ldapvec && /tmp/ldapvec/bin/pip install ldap3==2.9.1 pyasn1==0.6.5
    /tmp/ldapvec/bin/python crates/ldap/tests/vectors/generate.py > crates/ldap/tests/vectors/ldap3.tsv

The committed file came from ldap3 2.9.1 with pyasn1 0.6.5 on CPython 3.11.7 (the output is
deterministic).
"""

from ldap3 import SIMPLE, ANONYMOUS, SUBTREE, LEVEL, BASE, DEREF_NEVER, DEREF_ALWAYS
from ldap3.operation.bind import bind_operation
from ldap3.operation.search import search_operation
from ldap3.operation.extended import extended_operation
from ldap3.operation.abandon import abandon_operation
from ldap3.operation.unbind import unbind_operation
from ldap3.protocol.convert import build_controls_list
from ldap3.protocol.rfc2696 import paged_search_control, RealSearchControlValue, Size, Cookie
from ldap3.protocol.rfc3062 import PasswdModifyRequestValue, PasswdModifyResponseValue, UserIdentity, OldPasswd, NewPasswd, GenPasswd
from ldap3.protocol.rfc4511 import (
    LDAPMessage, MessageID, ProtocolOp, BindResponse, SearchResultEntry, SearchResultDone,
    ExtendedResponse, ResultCode, LDAPDN, LDAPString, PartialAttributeList, PartialAttribute,
    AttributeDescription, Vals, AttributeValue, ResponseName, ResponseValue, Controls, Control,
    LDAPOID, ControlValue, ModifyResponse,
)
from ldap3.utils.asn1 import encode

BASE_DN = "dc=example,dc=com"
ALICE = "uid=alice,ou=people," + BASE_DN


def message(msgid, op_name, op, controls=None):
    msg = LDAPMessage()
    msg["messageID"] = MessageID(msgid)
    msg["protocolOp"] = ProtocolOp().setComponentByName(op_name, op)
    built = build_controls_list(controls)
    if built is not None:
        msg["controls"] = built
    return encode(msg)


def search(msgid, base, flt, scope=SUBTREE, attrs=None, size=0, time=0, types_only=False,
           deref=DEREF_NEVER, controls=None):
    op = search_operation(base, flt, scope, deref, attrs if attrs is not None else [],
                          size, time, types_only, auto_escape=False, auto_encode=False)
    return message(msgid, "searchRequest", op, controls)


def requests():
    yield "bind_simple", message(1, "bindRequest", bind_operation(3, SIMPLE, ALICE, "secret"))
    yield "bind_anonymous", message(2, "bindRequest", bind_operation(3, ANONYMOUS, "", None))
    yield "bind_utf8_password", message(3, "bindRequest",
                                        bind_operation(3, SIMPLE, ALICE, "p\u00e4ssw\u00f6rd \u2713"))
    yield "search_nested", search(
        4, "ou=people," + BASE_DN,
        "(&(objectClass=person)(|(uid=alice)(mail=*@example.com))(!(cn=Bob*)))",
        attrs=["cn", "mail", "+"], size=10, time=30)
    yield "search_root_dse", search(5, "", "(objectClass=*)", scope=BASE,
                                    attrs=["namingContexts", "supportedControl", "supportedExtension"])
    yield "search_items", search(
        6, BASE_DN,
        "(|(uidNumber>=1000)(uidNumber<=99)(cn~=alice)(sn=*i*o*n)(givenName=Al*)(mail=*.com))",
        scope=LEVEL, types_only=True, deref=DEREF_ALWAYS)
    yield "search_extensible", search(7, BASE_DN, "(cn:caseExactMatch:=Alice)", attrs=["1.1"])
    yield "search_escaped", search(
        8, BASE_DN, r"(o=Parens R Us \28for all your parenthetical needs\29)")
    yield "search_escaped_star", search(9, BASE_DN, r"(cn=*\2A*)")
    yield "search_paged_first", search(
        10, BASE_DN, "(objectClass=inetOrgPerson)", attrs=["uid"],
        controls=[paged_search_control(False, 50, None)])
    yield "search_paged_next", search(
        11, BASE_DN, "(objectClass=inetOrgPerson)", attrs=["uid"],
        controls=[paged_search_control(True, 50, b"\x00\x01cookie")])
    yield "extended_whoami", message(12, "extendedReq", extended_operation("1.3.6.1.4.1.4203.1.11.3"))
    yield "extended_starttls", message(13, "extendedReq", extended_operation("1.3.6.1.4.1.1466.20037"))
    pm = PasswdModifyRequestValue()
    pm["userIdentity"] = UserIdentity(ALICE)
    pm["oldPasswd"] = OldPasswd("old secret")
    pm["newPasswd"] = NewPasswd("new secret")
    yield "extended_password_modify", message(14, "extendedReq",
                                              extended_operation("1.3.6.1.4.1.4203.1.11.1", pm))
    yield "abandon", message(15, "abandonRequest", abandon_operation(11))
    yield "unbind", message(16, "unbindRequest", unbind_operation())


def result_fields(op, code, matched="", diagnostic=""):
    op["resultCode"] = ResultCode(code)
    op["matchedDN"] = LDAPDN(matched)
    op["diagnosticMessage"] = LDAPString(diagnostic)
    return op


def paged_response_control(size, cookie):
    value = RealSearchControlValue()
    value["size"] = Size(size)
    value["cookie"] = Cookie(cookie)
    control = Control()
    control["controlType"] = LDAPOID("1.2.840.113556.1.4.319")
    control["controlValue"] = ControlValue(encode(value))
    controls = Controls()
    controls.setComponentByPosition(0, control)
    return controls


def extended(code, diagnostic="", name=None, value=None):
    op = result_fields(ExtendedResponse(), code, "", diagnostic)
    if name is not None:
        op["responseName"] = ResponseName(name)
    if value is not None:
        op["responseValue"] = ResponseValue(value)
    return op


def raw_message(msgid, op_name, op, controls=None):
    msg = LDAPMessage()
    msg["messageID"] = MessageID(msgid)
    msg["protocolOp"] = ProtocolOp().setComponentByName(op_name, op)
    if controls is not None:
        msg["controls"] = controls
    return encode(msg)


def responses():
    yield "resp_bind_success", raw_message(1, "bindResponse", result_fields(BindResponse(), 0))
    yield "resp_bind_invalid_credentials", raw_message(
        1, "bindResponse", result_fields(BindResponse(), 49, "", "invalid credentials"))
    entry = SearchResultEntry()
    entry["object"] = LDAPDN(ALICE)
    attrs = PartialAttributeList()
    for i, (name, values) in enumerate([("objectClass", ["top", "inetOrgPerson"]),
                                         ("cn", ["Alice Liddell"]), ("uid", ["alice"])]):
        attr = PartialAttribute()
        attr["type"] = AttributeDescription(name)
        vals = Vals()
        for j, v in enumerate(values):
            vals.setComponentByPosition(j, AttributeValue(v))
        attr["vals"] = vals
        attrs.setComponentByPosition(i, attr)
    entry["attributes"] = attrs
    yield "resp_search_entry", raw_message(4, "searchResEntry", entry)
    types_only = SearchResultEntry()
    types_only["object"] = LDAPDN(ALICE)
    attrs = PartialAttributeList()
    attr = PartialAttribute()
    attr["type"] = AttributeDescription("cn")
    attr["vals"] = Vals()
    attrs.setComponentByPosition(0, attr)
    types_only["attributes"] = attrs
    yield "resp_search_entry_types_only", raw_message(4, "searchResEntry", types_only)
    yield "resp_search_done", raw_message(4, "searchResDone", result_fields(SearchResultDone(), 0))
    yield "resp_search_done_paged", raw_message(
        10, "searchResDone", result_fields(SearchResultDone(), 0), paged_response_control(0, b"\x00\x01next"))
    yield "resp_search_done_paged_last", raw_message(
        11, "searchResDone", result_fields(SearchResultDone(), 0), paged_response_control(0, b""))
    yield "resp_whoami", raw_message(12, "extendedResp", extended(0, value="dn:" + ALICE))
    yield "resp_whoami_anonymous", raw_message(12, "extendedResp", extended(0, value=""))
    yield "resp_starttls", raw_message(13, "extendedResp", extended(0, name="1.3.6.1.4.1.1466.20037"))
    yield "resp_password_modify", raw_message(14, "extendedResp", extended(0))
    gen = PasswdModifyResponseValue()
    gen["genPasswd"] = GenPasswd("generated")
    yield "resp_password_modify_generated", raw_message(
        14, "extendedResp", extended(0, value=encode(gen)))
    yield "resp_notice_of_disconnection", raw_message(
        0, "extendedResp", extended(2, "bad message", name="1.3.6.1.4.1.1466.20036"))
    yield "resp_modify_unwilling", raw_message(
        17, "modifyResponse", result_fields(ModifyResponse(), 53, "", "read-only"))


def main():
    print("# name\thex: LDAPMessages encoded by python ldap3 (see generate.py)")
    for name, ber in list(requests()) + list(responses()):
        print(f"{name}\t{bytes(ber).hex()}")


if __name__ == "__main__":
    main()
