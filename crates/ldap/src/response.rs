//! The responses a server sends, built as `ldap3_proto` messages, and their encoding.
//!
//! A door answers every request with one of these builders so it never assembles protocol
//! structures itself: bind results, search entries and the search's end (with the RFC 2696
//! paged-results control when the request had one), the responses that carry only a result
//! (`protocolError` for a malformed request, `unwillingToPerform` for writes), the extended
//! responses of StartTLS (RFC 4511 4.14), WhoAmI (RFC 4532) and Password Modify (RFC 3062),
//! and the Notice of Disconnection (RFC 4511 4.4.1).

use crate::entry::Entry;
use crate::op::OpKind;
use crate::result::ResultCode;
use crate::select::Selection;
use bytes::BytesMut;
use ldap3_lber::structure::StructureTag;
use ldap3_proto::control::LdapControl;
use ldap3_proto::proto::{
    LdapBindResponse, LdapExtendedResponse, LdapMsg, LdapOp, LdapPasswordModifyResponse,
    LdapResult, LdapSearchResultEntry,
};

/// StartTLS's requestName and responseName (RFC 4511 4.14).
pub const OID_START_TLS: &str = "1.3.6.1.4.1.1466.20037";
/// The Notice of Disconnection's responseName (RFC 4511 4.4.1).
pub const OID_NOTICE_OF_DISCONNECTION: &str = "1.3.6.1.4.1.1466.20036";
/// WhoAmI's requestName (RFC 4532).
pub const OID_WHOAMI: &str = ldap3_proto::proto::OID_WHOAMI;
/// Password Modify's requestName (RFC 3062).
pub const OID_PASSWORD_MODIFY: &str = ldap3_proto::proto::OID_PASSWORD_MODIFY;
/// The simple paged-results control (RFC 2696).
pub const OID_PAGED_RESULTS: &str = "1.2.840.113556.1.4.319";

/// BER encoding of a message, ready to write to the stream.
pub fn encode(message: LdapMsg) -> Vec<u8> {
    let tag: StructureTag = message.into();
    let mut buf = BytesMut::new();
    // Writing into memory cannot fail: encode_into's io::Result comes from its Write bound.
    match ldap3_lber::write::encode_into(&mut buf, tag) {
        Ok(()) => buf.to_vec(),
        Err(_) => Vec::new(),
    }
}

/// An LDAPResult with no matchedDN and no referral.
pub fn result(code: ResultCode, message: &str) -> LdapResult {
    LdapResult {
        code: code.into(),
        matcheddn: String::new(),
        message: message.to_owned(),
        referral: Vec::new(),
    }
}

/// The BindResponse to message `msgid`.
pub fn bind_response(msgid: i32, code: ResultCode, message: &str) -> LdapMsg {
    let op = LdapOp::BindResponse(LdapBindResponse {
        res: result(code, message),
        saslcreds: None,
    });
    LdapMsg::new(msgid, op)
}

/// One SearchResultEntry: `entry` with the attributes `selection` picks (values left out when
/// the request asked for `typesOnly`).
pub fn search_entry(msgid: i32, entry: &Entry, selection: &Selection, types_only: bool) -> LdapMsg {
    let attributes = selection.apply(entry, types_only);
    let op = LdapOp::SearchResultEntry(LdapSearchResultEntry {
        dn: entry.dn.to_string(),
        attributes,
    });
    LdapMsg::new(msgid, op)
}

/// The paged-results state a SearchResultDone carries back (RFC 2696 section 3): the
/// server's estimate of the total (0 when it gives none) and the cookie for the next page
/// (empty on the last page).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PagedDone {
    pub size_estimate: i32,
    pub cookie: Vec<u8>,
}

/// The SearchResultDone ending search `msgid`, with the paged-results response control when
/// `paged` is given (RFC 2696: whenever the request carried the control).
pub fn search_done(
    msgid: i32,
    code: ResultCode,
    message: &str,
    paged: Option<PagedDone>,
) -> LdapMsg {
    let op = LdapOp::SearchResultDone(result(code, message));
    let ctrl = paged
        .map(|p| LdapControl::SimplePagedResults {
            // RFC 2696: size INTEGER (0 .. maxInt); ldap3_lber also mis-encodes negatives.
            size: i64::from(p.size_estimate.max(0)),
            cookie: p.cookie,
        })
        .into_iter()
        .collect();
    LdapMsg::new_with_ctrls(msgid, op, ctrl)
}

/// The paged-results request control among `controls`: page size and cookie (RFC 2696
/// section 3; an empty cookie asks for the first page, size 0 abandons the paging).
pub fn paged_request(controls: &[LdapControl]) -> Option<(i64, &[u8])> {
    controls.iter().find_map(|c| match c {
        LdapControl::SimplePagedResults { size, cookie } => Some((*size, cookie.as_slice())),
        _ => None,
    })
}

/// The response to request `msgid` of `kind` that carries only a result: how a server
/// answers a malformed request (`protocolError`), a write it refuses (`unwillingToPerform`)
/// or an operation it cannot serve now (`busy`, `unavailable`). `None` for Unbind and Abandon
/// (they have no response) and for kinds that are responses themselves.
pub fn error_response(
    msgid: i32,
    kind: OpKind,
    code: ResultCode,
    message: &str,
) -> Option<LdapMsg> {
    let res = result(code, message);
    let op = match kind {
        OpKind::Bind => LdapOp::BindResponse(LdapBindResponse {
            res,
            saslcreds: None,
        }),
        OpKind::Search => LdapOp::SearchResultDone(res),
        OpKind::Modify => LdapOp::ModifyResponse(res),
        OpKind::Add => LdapOp::AddResponse(res),
        OpKind::Delete => LdapOp::DelResponse(res),
        OpKind::ModifyDn => LdapOp::ModifyDNResponse(res),
        OpKind::Compare => LdapOp::CompareResult(res),
        OpKind::Extended => LdapOp::ExtendedResponse(LdapExtendedResponse {
            res,
            name: None,
            value: None,
        }),
        _ => return None,
    };
    Some(LdapMsg::new(msgid, op))
}

/// An ExtendedResponse to request `msgid`.
pub fn extended_response(
    msgid: i32,
    code: ResultCode,
    message: &str,
    name: Option<&str>,
    value: Option<Vec<u8>>,
) -> LdapMsg {
    let res = result(code, message);
    let op = LdapOp::ExtendedResponse(LdapExtendedResponse {
        res,
        name: name.map(str::to_owned),
        value,
    });
    LdapMsg::new(msgid, op)
}

/// The StartTLS response (RFC 4511 4.14.2): `success` before the TLS handshake starts, or
/// why not (`operationsError` when TLS is already on, `protocolError` when StartTLS is not
/// offered, ...). Its responseName is StartTLS's OID.
pub fn start_tls_response(msgid: i32, code: ResultCode, message: &str) -> LdapMsg {
    extended_response(msgid, code, message, Some(OID_START_TLS), None)
}

/// The WhoAmI response (RFC 4532 section 2.2): the authorization identity, `dn:<DN>` for a
/// bound DN, or `None` for an anonymous session (an empty authzId). No responseName.
pub fn whoami_response(msgid: i32, bound_dn: Option<&str>) -> LdapMsg {
    let authz_id = bound_dn.map_or_else(Vec::new, |dn| format!("dn:{dn}").into_bytes());
    extended_response(msgid, ResultCode::Success, "", None, Some(authz_id))
}

/// The Password Modify response (RFC 3062 section 2): the result, and the generated password
/// when the server made one (this door never does: the responseValue is then absent).
pub fn password_modify_response(
    msgid: i32,
    code: ResultCode,
    message: &str,
    generated: Option<String>,
) -> LdapMsg {
    let res = result(code, message);
    let response = match generated {
        Some(password) => LdapExtendedResponse::from(LdapPasswordModifyResponse {
            res,
            gen_password: Some(password),
        }),
        None => LdapExtendedResponse {
            res,
            name: None,
            value: None,
        },
    };
    LdapMsg::new(msgid, LdapOp::ExtendedResponse(response))
}

/// The Notice of Disconnection (RFC 4511 4.4.1): an unsolicited ExtendedResponse with
/// messageID 0, sent just before the server closes (`protocolError` for a stream it cannot
/// read, `unavailable` when shutting down, `strongerAuthRequired` when the TLS layer failed).
pub fn notice_of_disconnection(code: ResultCode, message: &str) -> LdapMsg {
    extended_response(0, code, message, Some(OID_NOTICE_OF_DISCONNECTION), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_responses_use_each_requests_own_response_type() {
        let cases = [
            (OpKind::Bind, 0x61),
            (OpKind::Search, 0x65),
            (OpKind::Modify, 0x67),
            (OpKind::Add, 0x69),
            (OpKind::Delete, 0x6b),
            (OpKind::ModifyDn, 0x6d),
            (OpKind::Compare, 0x6f),
            (OpKind::Extended, 0x78),
        ];
        for (kind, tag) in cases {
            let msg = error_response(7, kind, ResultCode::UnwillingToPerform, "no writes");
            let bytes = encode(msg.into_iter().next().unwrap_or_else(|| panic!("{kind:?}")));
            // 30 LL 02 01 07 <op tag>: RFC 4511 appendix B's protocolOp tags.
            assert_eq!(bytes.get(5), Some(&tag), "{kind:?}");
        }
        for kind in [OpKind::Unbind, OpKind::Abandon, OpKind::BindResponse] {
            assert!(error_response(7, kind, ResultCode::ProtocolError, "").is_none());
        }
    }

    #[test]
    fn paged_request_finds_the_control() {
        let controls = vec![
            LdapControl::ManageDsaIT { criticality: false },
            LdapControl::SimplePagedResults {
                size: 50,
                cookie: b"c".to_vec(),
            },
        ];
        assert_eq!(paged_request(&controls), Some((50, &b"c"[..])));
        assert_eq!(paged_request(&controls[..1]), None);
    }
}
