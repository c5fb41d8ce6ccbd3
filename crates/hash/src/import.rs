//! Reading existing password stores for `portcullis user import`.
//!
//! Two inputs are accepted:
//!
//! - text, one `username<TAB>stored-hash` per line (blank lines and `#` comments skipped);
//! - a Keycloak realm export (JSON with `users[].credentials[]`), recognised by its leading
//!   `{`; each user's `password` credential is taken.
//!
//! Every entry is checked here, so nothing half-valid reaches the store: the username must
//! be non-empty, without control characters or surrounding whitespace, at most
//! [`MAX_USERNAME_LEN`] bytes, and not repeated; the stored hash must parse (with the forced
//! format if one is given) AND auto-detect to the same credential, since the server reads
//! stored strings back with [`Credential::parse`]. Each rejected entry is reported with its
//! line number and reason; one bad line never aborts the rest.
//!
//! The accepted stored string is the input's hash string (trimmed), except for Keycloak,
//! whose credential object is reduced to its compact `credentialData`/`secretData` form.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::credential::Credential;
use crate::formats::{Format, keycloak};

/// Longest username accepted, in bytes.
pub const MAX_USERNAME_LEN: usize = 256;

/// The outcome of an import: what may be stored and what was refused.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// `(line number, username, stored string)` for each acceptable entry, in input order.
    pub accepted: Vec<(usize, String, String)>,
    /// `(line number, reason)` for each refused entry, in input order. Reasons never
    /// contain the hash itself.
    pub rejected: Vec<(usize, String)>,
}

/// Read `input` (either input kind; see the module doc). `format` forces one hash format
/// (`--format`); with `Some(Format::Keycloak)` a text file is read as
/// `username<TAB>credential-JSON` lines.
pub fn import(input: &[u8], format: Option<Format>) -> ImportReport {
    let body = input.strip_prefix(b"\xef\xbb\xbf").unwrap_or(input);
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        let mut report = ImportReport::default();
        match format {
            None | Some(Format::Keycloak) => import_keycloak_realm(body, &mut report),
            Some(f) => report.rejected.push((
                1,
                format!("input is JSON (a Keycloak realm export) but --format {f} was given"),
            )),
        }
        return report;
    }
    import_lines(body, format)
}

/// Read `username<TAB>stored-hash` lines.
pub fn import_lines(input: &[u8], format: Option<Format>) -> ImportReport {
    let mut report = ImportReport::default();
    let mut seen = Seen::default();
    for (i, raw) in input.split(|&b| b == b'\n').enumerate() {
        let line_no = i + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let Ok(line) = std::str::from_utf8(raw) else {
            report
                .rejected
                .push((line_no, "line is not valid UTF-8".into()));
            continue;
        };
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some((user, stored)) = line.split_once('\t') else {
            report
                .rejected
                .push((line_no, "expected username<TAB>stored-hash".into()));
            continue;
        };
        match check_entry(user, stored, format, &mut seen, line_no) {
            Ok(stored) => report.accepted.push((line_no, user.to_owned(), stored)),
            Err(reason) => report.rejected.push((line_no, reason)),
        }
    }
    report
}

#[derive(Default)]
struct Seen(HashMap<String, usize>);

fn check_username(user: &str, seen: &mut Seen, line_no: usize) -> Result<(), String> {
    if user.is_empty() {
        return Err("empty username".into());
    }
    if user.len() > MAX_USERNAME_LEN {
        return Err(format!("username longer than {MAX_USERNAME_LEN} bytes"));
    }
    if user.chars().any(char::is_control) {
        return Err("username contains a control character".into());
    }
    if user.trim() != user {
        return Err("username has leading or trailing whitespace".into());
    }
    if let Some(first) = seen.0.get(user) {
        return Err(format!("duplicate username (first on line {first})"));
    }
    seen.0.insert(user.to_owned(), line_no);
    Ok(())
}

fn check_entry(
    user: &str,
    stored: &str,
    format: Option<Format>,
    seen: &mut Seen,
    line_no: usize,
) -> Result<String, String> {
    let stored = stored.trim();
    if stored.is_empty() {
        return Err("empty stored hash".into());
    }
    if stored.contains('\t') {
        return Err("more than one TAB on the line".into());
    }
    // Keycloak credential objects are kept in their compact form (no ids or dates).
    let is_keycloak = format == Some(Format::Keycloak)
        || Credential::parse(stored).is_ok_and(|c| c.format() == "keycloak");
    let stored = if is_keycloak {
        keycloak::normalize(stored).map_err(|e| e.to_string())?
    } else {
        stored.to_owned()
    };
    let detected = Credential::parse(&stored);
    if let Some(f) = format {
        let forced = Credential::parse_as(&stored, f).map_err(|e| e.to_string())?;
        match detected {
            Ok(d) if d == forced => {}
            Ok(d) => {
                return Err(format!(
                    "ambiguous: reads as {} with --format {f} but auto-detects as {} ({})",
                    forced.algorithm(),
                    d.algorithm(),
                    d.format()
                ));
            }
            Err(e) => return Err(format!("parses only with --format {f}: {e}")),
        }
    } else {
        detected.map_err(|e| e.to_string())?;
    }
    // Checked last so a line with a bad hash does not claim the username.
    check_username(user, seen, line_no)?;
    Ok(stored)
}

#[derive(Deserialize)]
struct Realm<'a> {
    #[serde(borrow, default)]
    users: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
struct User<'a> {
    username: Option<String>,
    #[serde(borrow, default)]
    credentials: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
struct CredentialType {
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// Read a Keycloak realm export (or a `*-users-N.json` partial export: same `users` array).
/// Line numbers are those of each user object's first line in the file.
pub fn import_keycloak_realm(input: &[u8], report: &mut ImportReport) {
    let text = match std::str::from_utf8(input) {
        Ok(t) => t,
        Err(e) => {
            let line = 1 + input[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            report
                .rejected
                .push((line, "file is not valid UTF-8".into()));
            return;
        }
    };
    let realm: Realm<'_> = match serde_json::from_str(text) {
        Ok(r) => r,
        Err(e) => {
            report
                .rejected
                .push((e.line().max(1), format!("not a Keycloak realm export: {e}")));
            return;
        }
    };
    let mut seen = Seen::default();
    for raw in realm.users {
        let line_no = line_of(text, raw.get());
        let user: User<'_> = match serde_json::from_str(raw.get()) {
            Ok(u) => u,
            Err(e) => {
                report
                    .rejected
                    .push((line_no, format!("invalid user object: {e}")));
                continue;
            }
        };
        let Some(username) = user.username else {
            report
                .rejected
                .push((line_no, "user without a username".into()));
            continue;
        };
        let passwords: Vec<&RawValue> = user
            .credentials
            .iter()
            .copied()
            .filter(|c| {
                serde_json::from_str::<CredentialType>(c.get())
                    .is_ok_and(|t| t.kind.as_deref() == Some("password"))
            })
            .collect();
        let credential = match passwords.as_slice() {
            [one] => *one,
            [] => {
                report.rejected.push((
                    line_no,
                    format!("user {username:?} has no password credential"),
                ));
                continue;
            }
            _ => {
                report.rejected.push((
                    line_no,
                    format!("user {username:?} has more than one password credential"),
                ));
                continue;
            }
        };
        let stored = match keycloak::normalize(credential.get()) {
            Ok(s) => s,
            Err(e) => {
                report.rejected.push((line_no, e.to_string()));
                continue;
            }
        };
        match check_entry(&username, &stored, None, &mut seen, line_no) {
            Ok(stored) => report.accepted.push((line_no, username, stored)),
            Err(reason) => report.rejected.push((line_no, reason)),
        }
    }
}

/// 1-based line of `part` within `whole` (`part` borrows from `whole`).
fn line_of(whole: &str, part: &str) -> usize {
    let offset = (part.as_ptr() as usize)
        .checked_sub(whole.as_ptr() as usize)
        .filter(|&o| o <= whole.len())
        .unwrap_or(0);
    1 + whole.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BCRYPT: &str = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW";

    #[test]
    fn lines_are_checked_one_by_one() {
        let mut bytes = format!(
            "# comment\n\nalice\t{BCRYPT}\r\nbob\tnot-a-hash\nnotab {BCRYPT}\n\t{BCRYPT}\nalice\t{BCRYPT}\n"
        )
        .into_bytes();
        bytes.extend_from_slice(b"\xff\t");
        bytes.extend_from_slice(format!("{BCRYPT}\n carol\t{BCRYPT}\n").as_bytes());
        let r = import(&bytes, None);
        assert_eq!(
            r.accepted,
            vec![(3, "alice".to_string(), BCRYPT.to_string())]
        );
        let lines: Vec<usize> = r.rejected.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, vec![4, 5, 6, 7, 8, 9], "{:?}", r.rejected);
        assert!(r.rejected[3].1.contains("duplicate"));
    }

    #[test]
    fn forced_format_must_agree_with_detection() {
        let r = import(
            format!("alice\t{BCRYPT}\n").as_bytes(),
            Some(Format::Django),
        );
        assert!(r.accepted.is_empty());
        assert_eq!(r.rejected.len(), 1);
    }

    #[test]
    fn broken_json_is_one_rejection_with_a_line() {
        let r = import(b"{\n  \"users\": [\n    {\"username\": 1}\n  ]\n", None);
        assert!(r.accepted.is_empty());
        assert_eq!(r.rejected.len(), 1, "{:?}", r.rejected);
    }
}
