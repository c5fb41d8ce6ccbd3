//! Search (RFC 4511 4.5) and Compare (4.10) over a [`Directory`] snapshot: the root DSE,
//! access by [`Scope`], the filter evaluated by `portcullis-ldap` on what the scope may
//! read, attribute selection, `typesOnly`, size and time limits and the paged-results
//! control (RFC 2696) with a stateless cookie: the key of the last entry sent.

use std::time::{Duration, Instant};

use portcullis_ldap::proto::control::LdapControl;
use portcullis_ldap::proto::proto::LdapSearchScope;
use portcullis_ldap::proto::proto::{LdapCompareRequest, LdapFilter, LdapMsg, LdapSearchRequest};
use portcullis_ldap::response::{self, PagedDone};
use portcullis_ldap::{Dn, Entry, ResultCode, Selection, entry::root_dse, filter};

use crate::access::Scope;
use crate::directory::Directory;

/// What the root DSE advertises.
#[derive(Debug, Clone)]
pub struct RootDse {
    /// The base DN.
    pub base: Dn,
    /// StartTLS is offered (a certificate is configured and the connection is plain).
    pub start_tls: bool,
    /// Password Modify is offered.
    pub password_modify: bool,
}

impl RootDse {
    fn entry(&self) -> Entry {
        let mut extensions = vec![response::OID_WHOAMI];
        if self.start_tls {
            extensions.push(response::OID_START_TLS);
        }
        if self.password_modify {
            extensions.push(response::OID_PASSWORD_MODIFY);
        }
        root_dse(&[&self.base], &extensions, &[response::OID_PAGED_RESULTS])
    }
}

/// Whether a search request reads only the root DSE (allowed to anyone).
pub fn is_root_dse(req: &LdapSearchRequest) -> bool {
    req.base.is_empty() && req.scope == LdapSearchScope::Base
}

/// The root DSE search's answer.
pub fn root_dse_search(msgid: i32, req: &LdapSearchRequest, dse: &RootDse) -> Vec<LdapMsg> {
    let entry = dse.entry();
    let mut out = Vec::with_capacity(2);
    let checked = filter::check(&req.filter, &filter::Limits::default());
    if checked.is_ok_and(|f| f.matches(&entry)) {
        let selection = Selection::parse(&req.attrs);
        out.push(response::search_entry(
            msgid,
            &entry,
            &selection,
            req.typesonly,
        ));
    }
    out.push(response::search_done(msgid, ResultCode::Success, "", None));
    out
}

/// A search's replies and the code that ended it.
#[derive(Debug)]
pub struct Answer {
    /// Entries then the SearchResultDone (or the CompareResponse).
    pub replies: Vec<LdapMsg>,
    /// The result code sent.
    pub code: ResultCode,
}

impl Answer {
    fn done(
        msgid: i32,
        mut replies: Vec<LdapMsg>,
        code: ResultCode,
        text: &str,
        paged: Option<PagedDone>,
    ) -> Answer {
        replies.push(response::search_done(msgid, code, text, paged));
        Answer { replies, code }
    }

    fn refused(msgid: i32, code: ResultCode, text: &str, paged: bool) -> Answer {
        let paged = paged.then(|| PagedDone {
            size_estimate: 0,
            cookie: Vec::new(),
        });
        Answer::done(msgid, Vec::new(), code, text, paged)
    }
}

/// A search refused before any entry: `code` in its SearchResultDone (with an empty
/// paged-results control when the request was paged).
pub fn refused(msgid: i32, code: ResultCode, text: &str, paged: bool) -> Answer {
    Answer::refused(msgid, code, text, paged)
}

/// Entries examined between two looks at the clock.
const CLOCK_EVERY: usize = 256;

/// Run `req` (message `msgid`, with `controls`) over `dir` as `scope` sees it, returning at
/// most `max_entries` entries (per page when paged).
pub fn search(
    msgid: i32,
    req: &LdapSearchRequest,
    controls: &[LdapControl],
    dir: &Directory,
    scope: &Scope<'_>,
    max_entries: usize,
) -> Answer {
    let paged = response::paged_request(controls);
    let is_paged = paged.is_some();
    let Ok(base) = Dn::parse(&req.base) else {
        return Answer::refused(
            msgid,
            ResultCode::InvalidDnSyntax,
            "invalid base DN",
            is_paged,
        );
    };
    // The base must exist and be visible, or be an ancestor of what is visible.
    let visible_base = scope.sees(&base) && dir.get(&base).is_some();
    if !visible_base && !scope.subtree.is_descendant_or_self(&base) {
        return Answer::refused(msgid, ResultCode::NoSuchObject, "no such entry", is_paged);
    }
    let Ok(checked) = filter::check(&req.filter, &filter::Limits::default()) else {
        return Answer::refused(
            msgid,
            ResultCode::AdminLimitExceeded,
            "filter too deep or too large",
            is_paged,
        );
    };
    let (page, cookie) = match paged {
        Some((0, _)) => {
            // RFC 2696 3: size 0 abandons the paged search.
            return Answer::refused(msgid, ResultCode::Success, "", true);
        }
        Some((size, cookie)) => (usize::try_from(size).unwrap_or(usize::MAX), cookie),
        None => (usize::MAX, &[][..]),
    };
    let after = match std::str::from_utf8(cookie) {
        Ok("") => None,
        Ok(k) => Some(k),
        Err(_) => {
            return Answer::refused(msgid, ResultCode::ProtocolError, "bad paging cookie", true);
        }
    };
    let requested = usize::try_from(req.sizelimit)
        .ok()
        .filter(|n| *n > 0)
        .unwrap_or(usize::MAX);
    let limit = max_entries.min(requested).min(page);
    let deadline = u64::try_from(req.timelimit)
        .ok()
        .filter(|t| *t > 0)
        .map(|t| Instant::now() + Duration::from_secs(t));
    let selection = Selection::parse(&req.attrs);
    let mut replies = Vec::new();
    let mut last: Option<&str> = None;
    let mut examined = 0usize;
    for (key, entry) in dir.from(after) {
        examined += 1;
        if examined.is_multiple_of(CLOCK_EVERY) && deadline.is_some_and(|d| Instant::now() >= d) {
            return Answer::done(
                msgid,
                replies,
                ResultCode::TimeLimitExceeded,
                "time limit exceeded",
                is_paged.then(|| PagedDone {
                    size_estimate: 0,
                    cookie: last.map(|k| k.as_bytes().to_vec()).unwrap_or_default(),
                }),
            );
        }
        if !entry.dn.is_within(&base, &req.scope) || !scope.sees(&entry.dn) {
            continue;
        }
        let view = scope.view(entry);
        if !checked.matches(&view) {
            continue;
        }
        if replies.len() == limit {
            // One more match exists: the page was the bound (a cookie for the next), or
            // a size limit was (sizeLimitExceeded, RFC 4511 4.5.1.5).
            let next_page = is_paged && limit < requested && limit == page.min(max_entries);
            let cookie = match (next_page, last) {
                (true, Some(k)) => k.as_bytes().to_vec(),
                _ => Vec::new(),
            };
            let paged = is_paged.then_some(PagedDone {
                size_estimate: 0,
                cookie,
            });
            return if next_page {
                Answer::done(msgid, replies, ResultCode::Success, "", paged)
            } else {
                let text = "size limit exceeded";
                Answer::done(msgid, replies, ResultCode::SizeLimitExceeded, text, paged)
            };
        }
        replies.push(response::search_entry(
            msgid,
            &view,
            &selection,
            req.typesonly,
        ));
        last = Some(key);
    }
    let paged = is_paged.then(|| PagedDone {
        size_estimate: 0,
        cookie: Vec::new(),
    });
    Answer::done(msgid, replies, ResultCode::Success, "", paged)
}

/// Compare (RFC 4511 4.10): whether the entry has the attribute value, under the
/// attribute's equality rule, as `scope` sees it.
pub fn compare(msgid: i32, req: &LdapCompareRequest, dir: &Directory, scope: &Scope<'_>) -> Answer {
    let answer = |code: ResultCode, text: &str| Answer {
        replies: response::error_response(
            msgid,
            portcullis_ldap::frame::OpKind::Compare,
            code,
            text,
        )
        .into_iter()
        .collect(),
        code,
    };
    let Ok(dn) = Dn::parse(&req.dn) else {
        return answer(ResultCode::InvalidDnSyntax, "invalid DN");
    };
    let Some(entry) = dir.get(&dn).filter(|_| scope.sees(&dn)) else {
        return answer(ResultCode::NoSuchObject, "no such entry");
    };
    let Ok(value) = String::from_utf8(req.val.clone()) else {
        return answer(ResultCode::CompareFalse, "");
    };
    let view = scope.view(entry);
    if view.get(&req.atype).is_none() {
        return answer(ResultCode::NoSuchAttribute, "no such attribute");
    }
    let assertion = LdapFilter::Equality(req.atype.clone(), value);
    let verdict = filter::check(&assertion, &filter::Limits::default()).map(|f| f.evaluate(&view));
    match verdict {
        Ok(filter::Tri::True) => answer(ResultCode::CompareTrue, ""),
        Ok(filter::Tri::False) => answer(ResultCode::CompareFalse, ""),
        _ => answer(
            ResultCode::InappropriateMatching,
            "no equality rule for this attribute",
        ),
    }
}

#[cfg(test)]
mod tests;
