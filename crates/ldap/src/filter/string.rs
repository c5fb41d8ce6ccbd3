//! The RFC 4515 string form of filters: parsing (for filters in configuration, such as
//! `(&(objectClass=person)(uid={user}))`), value escaping for building filters from user
//! input, and printing.
//!
//! `ldap3_proto::parse_ldap_filter_str` is not used: it reads no `\XX` escapes (it quotes
//! with `"` instead), trims spaces around values, and refuses OIDs and options in attribute
//! descriptions, so RFC 4515's own examples fail or change meaning (see the tests).
//!
//! Beyond RFC 4515, whitespace is allowed between a filter's parentheses (configuration
//! files wrap long filters), a bare item without parentheses is read as one (`uid=alice`,
//! as `ldapsearch` takes it), and `(&)` / `(|)` are RFC 4526's absolute true and false.

use super::Limits;
use ldap3_proto::proto::{LdapFilter, LdapMatchingRuleAssertion, LdapSubstringFilter};

/// Why a string is not a filter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad filter at byte {offset}: {reason}")]
pub struct FilterParseError {
    pub offset: usize,
    pub reason: &'static str,
}

/// Parses an RFC 4515 filter string within the default [`Limits`] depth.
pub fn parse(s: &str) -> Result<LdapFilter, FilterParseError> {
    parse_with(s, &Limits::default())
}

/// Parses an RFC 4515 filter string, refusing nesting deeper than `limits.max_depth`.
pub fn parse_with(s: &str, limits: &Limits) -> Result<LdapFilter, FilterParseError> {
    let mut p = Parser {
        s: s.as_bytes(),
        pos: 0,
        max_depth: limits.max_depth,
    };
    p.skip_ws();
    let filter = if p.peek() == Some(b'(') {
        p.filter(1)?
    } else {
        p.item()?
    };
    p.skip_ws();
    if p.pos != p.s.len() {
        return Err(p.error("text after the filter"));
    }
    Ok(filter)
}

/// The filter a template such as `(&(objectClass=person)(uid={user}))` gives for `user`, the
/// name escaped so that it can only ever be one assertion value.
pub fn filter_template(template: &str, user: &str) -> Result<LdapFilter, FilterParseError> {
    if !template.contains("{user}") {
        return Err(FilterParseError {
            offset: 0,
            reason: "template has no {user} placeholder",
        });
    }
    parse(&template.replace("{user}", &escape_value(user)))
}

/// Escapes an assertion value (RFC 4515 section 3): `*`, `(`, `)`, `\` and NUL as `\2a`,
/// `\28`, `\29`, `\5c`, `\00`; everything else, non-ASCII included, is kept.
pub fn escape_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 4);
    for c in value.chars() {
        match c {
            '*' => out.push_str("\\2a"),
            '(' => out.push_str("\\28"),
            ')' => out.push_str("\\29"),
            '\\' => out.push_str("\\5c"),
            '\0' => out.push_str("\\00"),
            c => out.push(c),
        }
    }
    out
}

/// The RFC 4515 string of a filter (recursive: give it checked filters, see
/// [`super::check`]).
pub fn to_string(filter: &LdapFilter) -> String {
    let mut out = String::new();
    write(filter, &mut out);
    out
}

fn write(filter: &LdapFilter, out: &mut String) {
    out.push('(');
    match filter {
        LdapFilter::And(children) | LdapFilter::Or(children) => {
            out.push(if matches!(filter, LdapFilter::And(_)) {
                '&'
            } else {
                '|'
            });
            for child in children {
                write(child, out);
            }
        }
        LdapFilter::Not(child) => {
            out.push('!');
            write(child, out);
        }
        LdapFilter::Equality(a, v) => push_item(out, a, "=", v),
        LdapFilter::Approx(a, v) => push_item(out, a, "~=", v),
        LdapFilter::GreaterOrEqual(a, v) => push_item(out, a, ">=", v),
        LdapFilter::LessOrEqual(a, v) => push_item(out, a, "<=", v),
        LdapFilter::Present(a) => {
            out.push_str(a);
            out.push_str("=*");
        }
        LdapFilter::Substring(a, sub) => {
            out.push_str(a);
            out.push('=');
            out.push_str(&sub.initial.as_deref().map(escape_value).unwrap_or_default());
            out.push('*');
            for any in &sub.any {
                out.push_str(&escape_value(any));
                out.push('*');
            }
            out.push_str(&sub.final_.as_deref().map(escape_value).unwrap_or_default());
        }
        LdapFilter::Extensible(m) => {
            out.push_str(m.type_.as_deref().unwrap_or_default());
            if m.dn_attributes {
                out.push_str(":dn");
            }
            if let Some(rule) = &m.matching_rule {
                out.push(':');
                out.push_str(rule);
            }
            out.push_str(":=");
            out.push_str(&escape_value(&m.match_value));
        }
    }
    out.push(')');
}

fn push_item(out: &mut String, attr: &str, op: &str, value: &str) {
    out.push_str(attr);
    out.push_str(op);
    out.push_str(&escape_value(value));
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    max_depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn error(&self, reason: &'static str) -> FilterParseError {
        FilterParseError {
            offset: self.pos,
            reason,
        }
    }

    fn expect(&mut self, byte: u8, reason: &'static str) -> Result<(), FilterParseError> {
        if self.peek() != Some(byte) {
            return Err(self.error(reason));
        }
        self.pos += 1;
        Ok(())
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    /// `filter = LPAREN filtercomp RPAREN`; recursion bounded by `max_depth`.
    fn filter(&mut self, depth: usize) -> Result<LdapFilter, FilterParseError> {
        if depth > self.max_depth {
            return Err(self.error("filter nested too deeply"));
        }
        self.expect(b'(', "'(' expected")?;
        self.skip_ws();
        let filter = match self.peek() {
            Some(b'&') => {
                self.pos += 1;
                LdapFilter::And(self.list(depth)?)
            }
            Some(b'|') => {
                self.pos += 1;
                LdapFilter::Or(self.list(depth)?)
            }
            Some(b'!') => {
                self.pos += 1;
                self.skip_ws();
                let child = self.filter(depth + 1)?;
                self.skip_ws();
                LdapFilter::Not(Box::new(child))
            }
            _ => self.item()?,
        };
        self.expect(b')', "')' expected")?;
        Ok(filter)
    }

    /// `filterlist = 1*filter`, or none for RFC 4526's `(&)` and `(|)`.
    fn list(&mut self, depth: usize) -> Result<Vec<LdapFilter>, FilterParseError> {
        let mut children = Vec::new();
        loop {
            self.skip_ws();
            if self.peek() != Some(b'(') {
                return Ok(children);
            }
            children.push(self.filter(depth + 1)?);
        }
    }

    /// `item = simple / present / substring / extensible`.
    fn item(&mut self) -> Result<LdapFilter, FilterParseError> {
        let attr = self.attribute_description()?;
        match self.peek() {
            Some(b':') => return self.extensible(attr),
            None => return Err(self.error("filter type expected")),
            _ if attr.is_empty() => return Err(self.error("attribute description expected")),
            _ => {}
        }
        let op = match self.s.get(self.pos..self.pos + 2) {
            Some(b"~=") => b'~',
            Some(b">=") => b'>',
            Some(b"<=") => b'<',
            _ if self.peek() == Some(b'=') => b'=',
            _ => return Err(self.error("'=', '~=', '>=' or '<=' expected")),
        };
        self.pos += if op == b'=' { 1 } else { 2 };
        let pieces = self.value_pieces()?;
        match (op, pieces.as_slice()) {
            (b'=', [single]) => Ok(LdapFilter::Equality(attr, single.clone())),
            // `*` alone, or only stars (`**`): no substring to match, so presence.
            (b'=', [_, _, ..]) if pieces.iter().all(String::is_empty) => {
                Ok(LdapFilter::Present(attr))
            }
            (b'=', _) => Ok(LdapFilter::Substring(attr, substring(pieces))),
            (b'~', [v]) => Ok(LdapFilter::Approx(attr, v.clone())),
            (b'>', [v]) => Ok(LdapFilter::GreaterOrEqual(attr, v.clone())),
            (b'<', [v]) => Ok(LdapFilter::LessOrEqual(attr, v.clone())),
            _ => Err(self.error("'*' must be escaped as \\2a here")),
        }
    }

    /// `attributedescription = attributetype options` (possibly empty, for extensible
    /// filters that name only a matching rule).
    fn attribute_description(&mut self) -> Result<String, FilterParseError> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b';'))
        {
            self.pos += 1;
        }
        let text = self.text(start)?;
        let mut parts = text.split(';');
        let base = parts.next().unwrap_or_default();
        let options_ok = parts
            .all(|o| !o.is_empty() && o.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
        let base_ok =
            base.is_empty() || crate::schema::is_descr(base) || crate::schema::is_numeric_oid(base);
        if !(base_ok && options_ok) || (base.is_empty() && text.contains(';')) {
            return Err(FilterParseError {
                offset: start,
                reason: "bad attribute description",
            });
        }
        Ok(text)
    }

    fn text(&self, start: usize) -> Result<String, FilterParseError> {
        let bytes = self.s.get(start..self.pos).unwrap_or_default();
        String::from_utf8(bytes.to_vec()).map_err(|_| self.error("not UTF-8"))
    }

    /// `extensible = ( attr [dnattrs] [matchingrule] COLON EQUALS assertionvalue ) /
    /// ( [dnattrs] matchingrule COLON EQUALS assertionvalue )`.
    fn extensible(&mut self, attr: String) -> Result<LdapFilter, FilterParseError> {
        let mut dn_attributes = false;
        let mut matching_rule = None;
        while self.s.get(self.pos..self.pos + 2) != Some(b":=") {
            self.expect(b':', "':=' expected")?;
            let start = self.pos;
            while self
                .peek()
                .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.'))
            {
                self.pos += 1;
            }
            let part = self.text(start)?;
            let is_dn = part.eq_ignore_ascii_case("dn");
            if is_dn && !dn_attributes && matching_rule.is_none() {
                dn_attributes = true;
            } else if matching_rule.is_none()
                && (crate::schema::is_descr(&part) || crate::schema::is_numeric_oid(&part))
            {
                matching_rule = Some(part);
            } else {
                return Err(FilterParseError {
                    offset: start,
                    reason: "bad extensible match",
                });
            }
        }
        self.pos += 2;
        let type_ = (!attr.is_empty()).then_some(attr);
        if type_.is_none() && matching_rule.is_none() {
            return Err(self.error("an extensible match needs an attribute or a matching rule"));
        }
        let match_value = match self.value_pieces()?.as_slice() {
            [v] => v.clone(),
            _ => return Err(self.error("'*' must be escaped as \\2a here")),
        };
        Ok(LdapFilter::Extensible(LdapMatchingRuleAssertion {
            matching_rule,
            type_,
            match_value,
            dn_attributes,
        }))
    }

    /// The assertion value up to the closing parenthesis (or the end of a bare item), split
    /// at unescaped `*`s, `\XX` escapes decoded.
    fn value_pieces(&mut self) -> Result<Vec<String>, FilterParseError> {
        let mut pieces = Vec::new();
        let mut current = Vec::new();
        while let Some(b) = self.peek() {
            match b {
                b')' => break,
                b'(' | b'\0' => return Err(self.error("'(' and NUL must be escaped")),
                b'*' => pieces.push(std::mem::take(&mut current)),
                b'\\' => {
                    let hex = self.s.get(self.pos + 1..self.pos + 3);
                    let byte = hex
                        .and_then(|h| std::str::from_utf8(h).ok())
                        .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                        .ok_or_else(|| self.error("'\\' must be followed by two hex digits"))?;
                    current.push(byte);
                    self.pos += 3;
                    continue;
                }
                b => current.push(b),
            }
            self.pos += 1;
        }
        pieces.push(current);
        pieces
            .into_iter()
            .map(|p| String::from_utf8(p).map_err(|_| self.error("value is not UTF-8")))
            .collect()
    }
}

/// `substring = attr EQUALS [initial] any [final]` from the pieces between the `*`s (empty
/// `any` pieces, from `**`, carry nothing and are dropped).
fn substring(pieces: Vec<String>) -> LdapSubstringFilter {
    let last = pieces.len().saturating_sub(1);
    let mut sub = LdapSubstringFilter::default();
    for (i, piece) in pieces.into_iter().enumerate() {
        if piece.is_empty() {
            continue;
        }
        match i {
            0 => sub.initial = Some(piece),
            i if i == last => sub.final_ = Some(piece),
            _ => sub.any.push(piece),
        }
    }
    sub
}
