//! Distinguished names: RFC 4514 string form parsed, normalised, compared and built.
//!
//! [`Dn::parse`] reads RFC 4514 strings (attribute types by name in any case or by OID,
//! values with `\` escapes of specials and hex pairs, `#` hex-BER values of string types,
//! multi-valued RDNs joined by `+`) and, like OpenLDAP, tolerates spaces around `,`, `+` and
//! `=` and an unescaped space at a value's end. Two DNs are equal when their RDNs are equal
//! under each attribute's equality rule (`distinguishedNameMatch`, RFC 4517 4.2.15): types
//! through the schema registry (`CN`, `commonName` and `2.5.4.3` alike), values through
//! their rule (`caseIgnoreMatch` for unknown types), the AVAs of an RDN in any order.
//! [`escape_value`] and [`from_template`] build DNs from user input safely.

use crate::schema;
use ldap3_proto::proto::LdapSearchScope;
use std::hash::{Hash, Hasher};

/// Why a string is not a DN.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DnError {
    #[error("attribute type expected at byte {0}")]
    AttributeType(usize),
    #[error("'=' expected at byte {0}")]
    Equals(usize),
    #[error(
        "bad escape at byte {0}: '\\' must be followed by a special character or two hex digits"
    )]
    Escape(usize),
    #[error("character at byte {0} must be escaped")]
    Unescaped(usize),
    #[error("bad hex string value at byte {0}")]
    HexString(usize),
    #[error("value is not valid UTF-8")]
    Utf8,
    #[error("',' or '+' expected at byte {0}")]
    Separator(usize),
    #[error("template has no {{user}} placeholder")]
    NoPlaceholder,
}

/// One attribute type and value assertion (`uid=alice`).
#[derive(Debug, Clone)]
pub struct Ava {
    /// The type as the registry names it (`cn` for `CN` or `2.5.4.3`), or as written
    /// (lower-cased) when unknown.
    pub attribute: String,
    /// The value, unescaped.
    pub value: String,
    /// The value under the type's equality rule, the form compared.
    normalized: String,
}

impl Ava {
    /// An AVA of `attribute` (a name or OID) and an unescaped `value`.
    pub fn new(attribute: &str, value: &str) -> Ava {
        let attribute = schema::canonical_key(attribute);
        let rule = schema::attribute_type(&attribute)
            .equality
            .unwrap_or(schema::Equality::CaseIgnore);
        // A value invalid in its syntax is compared as written.
        let normalized = rule
            .normalize_plain(value)
            .unwrap_or_else(|| value.to_owned());
        Ava {
            attribute,
            value: value.to_owned(),
            normalized,
        }
    }

    fn key(&self) -> (&str, &str) {
        (&self.attribute, &self.normalized)
    }
}

/// A relative distinguished name: one or more AVAs.
#[derive(Debug, Clone)]
pub struct Rdn {
    pub avas: Vec<Ava>,
}

impl Rdn {
    fn sorted_keys(&self) -> Vec<(&str, &str)> {
        let mut keys: Vec<_> = self.avas.iter().map(Ava::key).collect();
        keys.sort_unstable();
        keys
    }
}

impl PartialEq for Rdn {
    fn eq(&self, other: &Self) -> bool {
        self.sorted_keys() == other.sorted_keys()
    }
}

impl Eq for Rdn {}

/// A distinguished name; `rdns[0]` is the leftmost (most specific) RDN.
#[derive(Debug, Clone, Default)]
pub struct Dn {
    pub rdns: Vec<Rdn>,
}

impl Dn {
    /// The root DSE's name, the empty DN.
    pub fn root() -> Dn {
        Dn::default()
    }

    /// Parses an RFC 4514 string.
    pub fn parse(s: &str) -> Result<Dn, DnError> {
        Parser {
            s: s.as_bytes(),
            pos: 0,
        }
        .dn()
    }

    /// Whether this is the empty DN.
    pub fn is_root(&self) -> bool {
        self.rdns.is_empty()
    }

    /// The DN one level up (the root's parent is the root).
    pub fn parent(&self) -> Dn {
        Dn {
            rdns: self.rdns.iter().skip(1).cloned().collect(),
        }
    }

    /// The leftmost RDN.
    pub fn rdn(&self) -> Option<&Rdn> {
        self.rdns.first()
    }

    /// `self` with `rdn` prepended (`uid=alice` under `ou=people,...`).
    pub fn child(&self, rdn: Rdn) -> Dn {
        let mut rdns = Vec::with_capacity(self.rdns.len() + 1);
        rdns.push(rdn);
        rdns.extend(self.rdns.iter().cloned());
        Dn { rdns }
    }

    /// The canonical string: registry names, values under their equality rule, the AVAs of
    /// each RDN sorted, RFC 4514 escaping. Equal DNs give equal strings.
    pub fn normalized(&self) -> String {
        let rdns: Vec<String> = self
            .rdns
            .iter()
            .map(|rdn| {
                let avas: Vec<String> = rdn
                    .sorted_keys()
                    .iter()
                    .map(|(a, v)| format!("{a}={}", escape_value(v)))
                    .collect();
                avas.join("+")
            })
            .collect();
        rdns.join(",")
    }

    /// Whether `self` ends with all of `base`'s RDNs (every DN is under the root).
    pub fn is_descendant_or_self(&self, base: &Dn) -> bool {
        let Some(extra) = self.rdns.len().checked_sub(base.rdns.len()) else {
            return false;
        };
        self.rdns
            .iter()
            .skip(extra)
            .zip(&base.rdns)
            .all(|(a, b)| a == b)
    }

    /// Whether an entry named `self` is in a search of `base` with `scope` (RFC 4511
    /// 4.5.1.2): the base itself, its immediate children, the base and everything below it,
    /// or everything below it (the `children` scope of draft-sermersheim).
    pub fn is_within(&self, base: &Dn, scope: &LdapSearchScope) -> bool {
        let depth = self.rdns.len().checked_sub(base.rdns.len());
        let under = self.is_descendant_or_self(base);
        match scope {
            LdapSearchScope::Base => under && depth == Some(0),
            LdapSearchScope::OneLevel => under && depth == Some(1),
            LdapSearchScope::Subtree => under,
            LdapSearchScope::Children => under && depth.is_some_and(|d| d > 0),
        }
    }
}

impl PartialEq for Dn {
    fn eq(&self, other: &Self) -> bool {
        self.rdns == other.rdns
    }
}

impl Eq for Dn {}

impl Hash for Dn {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.normalized().hash(state);
    }
}

/// The RFC 4514 string with the types as the registry names them and the values as given.
impl std::fmt::Display for Dn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, rdn) in self.rdns.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            for (j, ava) in rdn.avas.iter().enumerate() {
                if j > 0 {
                    f.write_str("+")?;
                }
                let name =
                    schema::lookup(&ava.attribute).map_or(ava.attribute.as_str(), |t| t.name());
                write!(f, "{name}={}", escape_value(&ava.value))?;
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for Dn {
    type Err = DnError;
    fn from_str(s: &str) -> Result<Dn, DnError> {
        Dn::parse(s)
    }
}

/// Escapes a value for an RFC 4514 string (section 2.4): `"`, `+`, `,`, `;`, `<`, `>` and
/// `\` by a backslash, a leading `#` or space and a trailing space by a backslash, NUL as
/// `\00`. Everything else, non-ASCII included, is kept (the string form is UTF-8).
pub fn escape_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 4);
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        match c {
            '"' | '+' | ',' | ';' | '<' | '>' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '#' if i == 0 => out.push_str("\\#"),
            ' ' if i == 0 || i == last => out.push_str("\\ "),
            '\0' => out.push_str("\\00"),
            c => out.push(c),
        }
    }
    out
}

/// The DN a template such as `uid={user},ou=people,dc=example,dc=com` names for `user`, the
/// user's name escaped so that it can only ever be one attribute value.
pub fn from_template(template: &str, user: &str) -> Result<Dn, DnError> {
    if !template.contains("{user}") {
        return Err(DnError::NoPlaceholder);
    }
    Dn::parse(&template.replace("{user}", &escape_value(user)))
}

/// A recursive-descent reader over the string's bytes (no recursion: DNs are flat).
struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
    }

    fn dn(mut self) -> Result<Dn, DnError> {
        let mut dn = Dn::root();
        self.skip_spaces();
        if self.peek().is_none() {
            return Ok(dn);
        }
        let mut avas = Vec::new();
        loop {
            avas.push(self.ava()?);
            match self.peek() {
                None => break,
                Some(b'+') => {}
                // RFC 1779's ';' separator is still read by OpenLDAP; so is it here.
                Some(b',' | b';') => dn.rdns.push(Rdn {
                    avas: std::mem::take(&mut avas),
                }),
                Some(_) => return Err(DnError::Separator(self.pos)),
            }
            self.pos += 1;
            self.skip_spaces();
        }
        dn.rdns.push(Rdn { avas });
        Ok(dn)
    }

    fn ava(&mut self) -> Result<Ava, DnError> {
        let attribute = self.attribute_type()?;
        self.skip_spaces();
        if self.peek() != Some(b'=') {
            return Err(DnError::Equals(self.pos));
        }
        self.pos += 1;
        self.skip_spaces();
        let value = if self.peek() == Some(b'#') {
            self.hex_string()?
        } else {
            self.string()?
        };
        Ok(Ava::new(&attribute, &value))
    }

    /// `descr / numericoid` (and the `OID.` prefix of RFC 2253's readers).
    fn attribute_type(&mut self) -> Result<String, DnError> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        {
            self.pos += 1;
        }
        let raw =
            std::str::from_utf8(self.s.get(start..self.pos).unwrap_or_default()).unwrap_or("");
        let name = raw
            .strip_prefix("OID.")
            .or_else(|| raw.strip_prefix("oid."))
            .unwrap_or(raw);
        if schema::is_descr(name) || schema::is_numeric_oid(name) {
            Ok(name.to_owned())
        } else {
            Err(DnError::AttributeType(start))
        }
    }

    /// `hexstring = SHARP 1*hexpair`: the BER of the value; string types are decoded.
    fn hex_string(&mut self) -> Result<String, DnError> {
        let start = self.pos;
        self.pos += 1;
        let mut ber = Vec::new();
        while let Some(byte) = self.s.get(self.pos..self.pos + 2).and_then(hex_pair) {
            ber.push(byte);
            self.pos += 2;
        }
        self.skip_spaces();
        if ber.is_empty() || !matches!(self.peek(), None | Some(b',' | b';' | b'+')) {
            return Err(DnError::HexString(start));
        }
        ber_string(&ber).ok_or(DnError::HexString(start))
    }

    /// `string`: characters and escapes up to an unescaped `,`, `;` or `+`; unescaped spaces
    /// at the end are dropped.
    fn string(&mut self) -> Result<String, DnError> {
        let mut bytes = Vec::new();
        let mut significant = 0;
        while let Some(b) = self.peek() {
            match b {
                b',' | b';' | b'+' => break,
                b'\\' => {
                    bytes.push(self.escape()?);
                    significant = bytes.len();
                    continue;
                }
                b'"' | b'<' | b'>' | b'\0' => return Err(DnError::Unescaped(self.pos)),
                b' ' => bytes.push(b),
                _ => {
                    bytes.push(b);
                    significant = bytes.len();
                }
            }
            self.pos += 1;
        }
        bytes.truncate(significant);
        String::from_utf8(bytes).map_err(|_| DnError::Utf8)
    }

    /// `pair = ESC ( ESC / special / hexpair )`, one byte of the value.
    fn escape(&mut self) -> Result<u8, DnError> {
        let at = self.pos;
        if let Some(byte) = self.s.get(at + 1..at + 3).and_then(hex_pair) {
            self.pos += 3;
            return Ok(byte);
        }
        match self.s.get(at + 1) {
            Some(&c @ (b'\\' | b'"' | b'+' | b',' | b';' | b'<' | b'>' | b' ' | b'#' | b'=')) => {
                self.pos += 2;
                Ok(c)
            }
            _ => Err(DnError::Escape(at)),
        }
    }
}

fn hex_pair(pair: &[u8]) -> Option<u8> {
    let text = std::str::from_utf8(pair).ok()?;
    if text.len() != 2 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u8::from_str_radix(text, 16).ok()
}

/// The content of a BER-encoded string value (OCTET STRING, UTF8String, PrintableString,
/// IA5String, with a short or long definite length), or `None` for anything else.
fn ber_string(ber: &[u8]) -> Option<String> {
    let (&tag, rest) = ber.split_first()?;
    if !matches!(tag, 0x04 | 0x0c | 0x13 | 0x16) {
        return None;
    }
    let (&first, rest) = rest.split_first()?;
    let content = if first < 0x80 {
        rest
    } else {
        let octets = usize::from(first & 0x7f);
        let len_bytes = rest.get(..octets).filter(|_| (1..=4).contains(&octets))?;
        let len = len_bytes
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        rest.get(octets..).filter(|c| c.len() == len)?
    };
    if first < 0x80 && content.len() != usize::from(first) {
        return None;
    }
    String::from_utf8(content.to_vec()).ok()
}

#[cfg(test)]
mod tests;
