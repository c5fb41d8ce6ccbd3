//! The user's name in a bind DN (RFC 4514 escaping) and in a search filter (RFC 4515).
//!
//! This module owns turning a name typed by a client into the DN or the filter sent to the
//! directory, so that no name can change the DN's or the filter's structure (LDAP injection:
//! `*` matching every entry, `)(` closing the filter, `,` moving the DN to another subtree).
//! The DN template is text with `{user}` replaced by the RFC 4514-escaped name. The filter
//! template is parsed once at start-up; the name is then placed into the parsed filter's
//! assertion values as raw octets, which is what its RFC 4515-escaped form means on the wire
//! ([`escape_filter_value`] gives that textual form for logs and `doctor`).

use ldap3_proto::proto::{LdapFilter, LdapSubstringFilter};
use thiserror::Error;

/// The placeholder both templates carry.
pub const USER_PLACEHOLDER: &str = "{user}";

/// A template that cannot be used.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum TemplateError {
    /// The template has no `{user}`.
    #[error("the template {0:?} has no {{user}}")]
    NoPlaceholder(String),
    /// The filter template does not parse as an LDAP filter.
    #[error("the filter template {template:?} is not an LDAP filter (RFC 4515): {reason}")]
    BadFilter {
        /// The template as configured.
        template: String,
        /// What the parser said.
        reason: String,
    },
    /// `{user}` stands in an attribute name or a matching rule, not in a value.
    #[error("the filter template {0:?} has {{user}} outside an assertion value")]
    PlaceholderOutsideValue(String),
    /// Backslash escapes in the template's own values are not read (the values are sent as
    /// written): refused rather than sent wrongly.
    #[error("the filter template {0:?} has a backslash: write its fixed values unescaped")]
    Backslash(String),
}

/// Escapes an attribute value for a DN string (RFC 4514 section 2.4): `"+,;<>\` and NUL
/// always, `#` and space at the start, space at the end. `#` and space are escaped wherever
/// they begin or end the substituted name, as the template may put it at either end.
pub fn escape_dn_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 8);
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        match c {
            '"' | '+' | ',' | ';' | '<' | '>' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\0' => out.push_str("\\00"),
            '#' if i == 0 => out.push_str("\\#"),
            ' ' if i == 0 || i == last => out.push_str("\\ "),
            _ => out.push(c),
        }
    }
    out
}

/// Escapes an assertion value for a filter string (RFC 4515 section 3): `*`, `(`, `)`,
/// `\` and NUL as `\2a`, `\28`, `\29`, `\5c`, `\00`.
pub fn escape_filter_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 8);
    for c in value.chars() {
        match c {
            '*' => out.push_str("\\2a"),
            '(' => out.push_str("\\28"),
            ')' => out.push_str("\\29"),
            '\\' => out.push_str("\\5c"),
            '\0' => out.push_str("\\00"),
            _ => out.push(c),
        }
    }
    out
}

/// `uid={user},ou=people,dc=example,dc=org`: the bind DN of a user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnTemplate {
    template: String,
}

impl DnTemplate {
    /// Checks the template has `{user}`.
    pub fn new(template: &str) -> Result<Self, TemplateError> {
        if !template.contains(USER_PLACEHOLDER) {
            return Err(TemplateError::NoPlaceholder(template.to_owned()));
        }
        Ok(Self {
            template: template.to_owned(),
        })
    }

    /// The DN for `user`, the name escaped per RFC 4514.
    pub fn render(&self, user: &str) -> String {
        self.template
            .replace(USER_PLACEHOLDER, &escape_dn_value(user))
    }
}

/// `(&(objectClass=person)(uid={user}))`: the filter that finds a user's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterTemplate {
    template: String,
    parsed: LdapFilter,
}

impl FilterTemplate {
    /// Parses the template; `{user}` must stand in assertion values only.
    pub fn new(template: &str) -> Result<Self, TemplateError> {
        if !template.contains(USER_PLACEHOLDER) {
            return Err(TemplateError::NoPlaceholder(template.to_owned()));
        }
        if template.contains('\\') {
            return Err(TemplateError::Backslash(template.to_owned()));
        }
        let parsed =
            ldap3_proto::parse_ldap_filter_str(template).map_err(|e| TemplateError::BadFilter {
                template: template.to_owned(),
                reason: e.to_string(),
            })?;
        if !placeholder_only_in_values(&parsed) {
            return Err(TemplateError::PlaceholderOutsideValue(template.to_owned()));
        }
        Ok(Self {
            template: template.to_owned(),
            parsed,
        })
    }

    /// The filter for `user`: the name goes into the assertion values as raw octets, so no
    /// character of it is read as filter syntax.
    pub fn render(&self, user: &str) -> LdapFilter {
        substitute(&self.parsed, user)
    }

    /// The filter for `user` as RFC 4515 text (the name escaped), for logs and `doctor`.
    pub fn render_text(&self, user: &str) -> String {
        self.template
            .replace(USER_PLACEHOLDER, &escape_filter_value(user))
    }
}

fn placeholder_only_in_values(filter: &LdapFilter) -> bool {
    let clean = |s: &str| !s.contains(USER_PLACEHOLDER);
    match filter {
        LdapFilter::And(v) | LdapFilter::Or(v) => v.iter().all(placeholder_only_in_values),
        LdapFilter::Not(f) => placeholder_only_in_values(f),
        LdapFilter::Equality(a, _)
        | LdapFilter::GreaterOrEqual(a, _)
        | LdapFilter::LessOrEqual(a, _)
        | LdapFilter::Approx(a, _)
        | LdapFilter::Substring(a, _)
        | LdapFilter::Present(a) => clean(a),
        LdapFilter::Extensible(m) => {
            m.type_.as_deref().is_none_or(clean) && m.matching_rule.as_deref().is_none_or(clean)
        }
    }
}

fn substitute(filter: &LdapFilter, user: &str) -> LdapFilter {
    let put = |s: &str| s.replace(USER_PLACEHOLDER, user);
    match filter {
        LdapFilter::And(v) => LdapFilter::And(v.iter().map(|f| substitute(f, user)).collect()),
        LdapFilter::Or(v) => LdapFilter::Or(v.iter().map(|f| substitute(f, user)).collect()),
        LdapFilter::Not(f) => LdapFilter::Not(Box::new(substitute(f, user))),
        LdapFilter::Equality(a, v) => LdapFilter::Equality(a.clone(), put(v)),
        LdapFilter::GreaterOrEqual(a, v) => LdapFilter::GreaterOrEqual(a.clone(), put(v)),
        LdapFilter::LessOrEqual(a, v) => LdapFilter::LessOrEqual(a.clone(), put(v)),
        LdapFilter::Approx(a, v) => LdapFilter::Approx(a.clone(), put(v)),
        LdapFilter::Substring(a, s) => LdapFilter::Substring(
            a.clone(),
            LdapSubstringFilter {
                initial: s.initial.as_deref().map(put),
                any: s.any.iter().map(|x| put(x)).collect(),
                final_: s.final_.as_deref().map(put),
            },
        ),
        LdapFilter::Present(a) => LdapFilter::Present(a.clone()),
        LdapFilter::Extensible(m) => {
            let mut m = m.clone();
            m.match_value = put(&m.match_value);
            LdapFilter::Extensible(m)
        }
    }
}

#[cfg(test)]
mod tests;
