//! The attribute types the directory shows and their matching rules (RFC 4512, 4517, 4518,
//! 4519, 4530, RFC 2307, RFC 2798, RFC 3045, RFC 4512 section 5.1 for the root DSE).
//!
//! Each [`AttributeType`] names its equality, ordering and substrings rules; the rules'
//! preparation of values ([`Equality::normalize`], [`prepare_substring`]) is here, so the
//! filter evaluator and DN comparison agree. Types not in the registry are matched as
//! `caseIgnoreMatch` ([`UNKNOWN`]), the way directories treat user attributes without schema.
//!
//! String preparation follows RFC 4518's steps that matter for the values here: mapping
//! (control and formatting characters removed, separators to SPACE), case folding
//! (`char::to_lowercase`, a close approximation of Unicode's full case folding) and
//! insignificant-space handling. The NFKC normalisation step is left out (it needs Unicode
//! tables): a decomposed "é" does not match a precomposed one.

pub mod prep;

pub use prep::{SubstringPart, prepare, prepare_substring};

/// Equality matching rules (RFC 4517 section 4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Equality {
    /// caseIgnoreMatch (2.5.13.2)
    CaseIgnore,
    /// caseExactMatch (2.5.13.5)
    CaseExact,
    /// caseIgnoreIA5Match (1.3.6.1.4.1.1466.109.114.2)
    CaseIgnoreIa5,
    /// caseExactIA5Match (1.3.6.1.4.1.1466.109.114.1)
    CaseExactIa5,
    /// integerMatch (2.5.13.14)
    Integer,
    /// distinguishedNameMatch (2.5.13.1)
    DistinguishedName,
    /// uuidMatch (1.3.6.1.1.16.2, RFC 4530)
    Uuid,
    /// objectIdentifierMatch (2.5.13.0)
    ObjectIdentifier,
    /// booleanMatch (2.5.13.13)
    Boolean,
}

impl Equality {
    /// The rule a matchingRule name or OID in an extensible filter names, if it is one of
    /// these.
    pub fn from_rule_id(id: &str) -> Option<Equality> {
        let id = id.to_ascii_lowercase();
        Some(match id.as_str() {
            "caseignorematch" | "2.5.13.2" => Equality::CaseIgnore,
            "caseexactmatch" | "2.5.13.5" => Equality::CaseExact,
            "caseignoreia5match" | "1.3.6.1.4.1.1466.109.114.2" => Equality::CaseIgnoreIa5,
            "caseexactia5match" | "1.3.6.1.4.1.1466.109.114.1" => Equality::CaseExactIa5,
            "integermatch" | "2.5.13.14" => Equality::Integer,
            "distinguishednamematch" | "2.5.13.1" => Equality::DistinguishedName,
            "uuidmatch" | "1.3.6.1.1.16.2" => Equality::Uuid,
            "objectidentifiermatch" | "2.5.13.0" => Equality::ObjectIdentifier,
            "booleanmatch" | "2.5.13.13" => Equality::Boolean,
            _ => return None,
        })
    }

    /// The value in the form this rule compares, for every rule but
    /// distinguishedNameMatch, whose values are DNs (`crate::matching` adds that rule on
    /// top): `None` when the value is not valid in the rule's syntax. A DN's own values
    /// are normalised with this, a DN-valued RDN compared as a caseIgnore string.
    pub fn normalize_plain(self, value: &str) -> Option<String> {
        match self {
            Equality::CaseIgnore | Equality::DistinguishedName => {
                Some(prep::equality_form(value, true))
            }
            Equality::CaseExact => Some(prep::equality_form(value, false)),
            Equality::CaseIgnoreIa5 => value.is_ascii().then(|| prep::equality_form(value, true)),
            Equality::CaseExactIa5 => value.is_ascii().then(|| prep::equality_form(value, false)),
            Equality::Integer => parse_integer(value).map(|i| i.to_string()),
            Equality::Uuid => normalize_uuid(value),
            Equality::ObjectIdentifier => normalize_oid(value),
            Equality::Boolean => matches!(value, "TRUE" | "FALSE").then(|| value.to_owned()),
        }
    }
}

/// Ordering matching rules (RFC 4517 section 4.2, RFC 4530).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ordering {
    /// caseIgnoreOrderingMatch (2.5.13.3): prepared strings in code point order.
    CaseIgnore,
    /// integerOrderingMatch (2.5.13.15)
    Integer,
    /// uuidOrderingMatch (1.3.6.1.1.16.3): the UUIDs' octets in order.
    Uuid,
}

impl Ordering {
    /// `stored` compared to `assertion`, or `None` when either is invalid in the syntax.
    pub fn compare(self, stored: &str, assertion: &str) -> Option<std::cmp::Ordering> {
        match self {
            Ordering::CaseIgnore => Some(prepare(stored, true).cmp(&prepare(assertion, true))),
            Ordering::Integer => Some(parse_integer(stored)?.cmp(&parse_integer(assertion)?)),
            Ordering::Uuid => Some(normalize_uuid(stored)?.cmp(&normalize_uuid(assertion)?)),
        }
    }
}

/// Substrings matching rules (RFC 4517 section 4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Substrings {
    /// caseIgnoreSubstringsMatch (2.5.13.4)
    CaseIgnore,
    /// caseExactSubstringsMatch (2.5.13.7)
    CaseExact,
    /// caseIgnoreIA5SubstringsMatch (1.3.6.1.4.1.1466.109.114.3)
    CaseIgnoreIa5,
    /// caseExactIA5SubstringsMatch (RFC 2307's, OpenLDAP's 1.3.6.1.4.1.4203.1.2.1)
    CaseExactIa5,
}

impl Substrings {
    /// Whether the rule folds case.
    pub fn folds_case(self) -> bool {
        matches!(self, Substrings::CaseIgnore | Substrings::CaseIgnoreIa5)
    }

    /// Whether the rule takes IA5 (ASCII) strings only.
    pub fn ia5(self) -> bool {
        matches!(self, Substrings::CaseIgnoreIa5 | Substrings::CaseExactIa5)
    }
}

/// Whether an attribute is user data or maintained by the server (RFC 4512 section 3.4):
/// `*` selects the first, `+` the second (RFC 3673).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Usage {
    User,
    Operational,
}

/// One attribute type: its names (the first is the one shown), OID and matching rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AttributeType {
    pub names: &'static [&'static str],
    pub oid: &'static str,
    pub equality: Option<Equality>,
    pub ordering: Option<Ordering>,
    pub substrings: Option<Substrings>,
    pub usage: Usage,
}

impl AttributeType {
    /// The name the type is shown under (`givenName`).
    pub fn name(&self) -> &'static str {
        self.names.first().copied().unwrap_or(self.oid)
    }

    /// Whether `description` (a name in any case, an alias, the OID; options after `;` left
    /// aside) names this type.
    pub fn is_named(&self, description: &str) -> bool {
        let base = base_name(description);
        self.oid == base || self.names.iter().any(|n| n.eq_ignore_ascii_case(base))
    }
}

use Equality as E;
use Ordering as O;
use Substrings as S;

const fn user(
    names: &'static [&'static str],
    oid: &'static str,
    equality: Equality,
    ordering: Option<Ordering>,
    substrings: Option<Substrings>,
) -> AttributeType {
    AttributeType {
        names,
        oid,
        equality: Some(equality),
        ordering,
        substrings,
        usage: Usage::User,
    }
}

const fn operational(
    names: &'static [&'static str],
    oid: &'static str,
    equality: Option<Equality>,
    ordering: Option<Ordering>,
) -> AttributeType {
    AttributeType {
        names,
        oid,
        equality,
        ordering,
        substrings: None,
        usage: Usage::Operational,
    }
}

/// The registry: RFC 4512 (objectClass, root DSE), RFC 4519 (uid, cn, sn, ...), RFC 2798
/// (inetOrgPerson's displayName), RFC 4524 (mail), RFC 4530 (entryUUID), RFC 2307 (posix),
/// RFC 3045 (vendor*), draft-good-ldap-changelog / OpenLDAP (memberOf, operational).
pub static ATTRIBUTE_TYPES: &[AttributeType] = &[
    user(&["objectClass"], "2.5.4.0", E::ObjectIdentifier, None, None),
    user(
        &["uid", "userid"],
        "0.9.2342.19200300.100.1.1",
        E::CaseIgnore,
        None,
        Some(S::CaseIgnore),
    ),
    user(
        &["cn", "commonName"],
        "2.5.4.3",
        E::CaseIgnore,
        None,
        Some(S::CaseIgnore),
    ),
    user(
        &["sn", "surname"],
        "2.5.4.4",
        E::CaseIgnore,
        None,
        Some(S::CaseIgnore),
    ),
    user(
        &["givenName", "gn"],
        "2.5.4.42",
        E::CaseIgnore,
        None,
        Some(S::CaseIgnore),
    ),
    user(
        &["displayName"],
        "2.16.840.1.113730.3.1.241",
        E::CaseIgnore,
        None,
        Some(S::CaseIgnore),
    ),
    user(
        &["mail", "rfc822Mailbox"],
        "0.9.2342.19200300.100.1.3",
        E::CaseIgnoreIa5,
        None,
        Some(S::CaseIgnoreIa5),
    ),
    user(
        &["uidNumber"],
        "1.3.6.1.1.1.1.0",
        E::Integer,
        Some(O::Integer),
        None,
    ),
    user(
        &["gidNumber"],
        "1.3.6.1.1.1.1.1",
        E::Integer,
        Some(O::Integer),
        None,
    ),
    user(
        &["homeDirectory"],
        "1.3.6.1.1.1.1.3",
        E::CaseExactIa5,
        None,
        None,
    ),
    user(
        &["loginShell"],
        "1.3.6.1.1.1.1.4",
        E::CaseExactIa5,
        None,
        None,
    ),
    user(
        &["gecos"],
        "1.3.6.1.1.1.1.2",
        E::CaseIgnoreIa5,
        None,
        Some(S::CaseIgnoreIa5),
    ),
    user(
        &["memberUid"],
        "1.3.6.1.1.1.1.12",
        E::CaseExactIa5,
        None,
        Some(S::CaseExactIa5),
    ),
    user(&["member"], "2.5.4.31", E::DistinguishedName, None, None),
    user(
        &["uniqueMember"],
        "2.5.4.50",
        E::DistinguishedName,
        None,
        None,
    ),
    user(
        &["ou", "organizationalUnitName"],
        "2.5.4.11",
        E::CaseIgnore,
        None,
        Some(S::CaseIgnore),
    ),
    user(
        &["o", "organizationName"],
        "2.5.4.10",
        E::CaseIgnore,
        None,
        Some(S::CaseIgnore),
    ),
    user(
        &["dc", "domainComponent"],
        "0.9.2342.19200300.100.1.25",
        E::CaseIgnoreIa5,
        None,
        Some(S::CaseIgnoreIa5),
    ),
    user(
        &["description"],
        "2.5.4.13",
        E::CaseIgnore,
        None,
        Some(S::CaseIgnore),
    ),
    operational(
        &["memberOf"],
        "1.2.840.113556.1.2.102",
        Some(E::DistinguishedName),
        None,
    ),
    operational(
        &["entryUUID"],
        "1.3.6.1.1.16.4",
        Some(E::Uuid),
        Some(O::Uuid),
    ),
    operational(
        &["entryDN"],
        "1.3.6.1.1.20",
        Some(E::DistinguishedName),
        None,
    ),
    operational(&["hasSubordinates"], "2.5.18.9", Some(E::Boolean), None),
    operational(
        &["subschemaSubentry"],
        "2.5.18.10",
        Some(E::DistinguishedName),
        None,
    ),
    operational(
        &["structuralObjectClass"],
        "2.5.21.9",
        Some(E::ObjectIdentifier),
        None,
    ),
    operational(
        &["namingContexts"],
        "1.3.6.1.4.1.1466.101.120.5",
        Some(E::DistinguishedName),
        None,
    ),
    operational(
        &["supportedLDAPVersion"],
        "1.3.6.1.4.1.1466.101.120.15",
        Some(E::Integer),
        Some(O::Integer),
    ),
    operational(
        &["supportedExtension"],
        "1.3.6.1.4.1.1466.101.120.7",
        Some(E::ObjectIdentifier),
        None,
    ),
    operational(
        &["supportedControl"],
        "1.3.6.1.4.1.1466.101.120.13",
        Some(E::ObjectIdentifier),
        None,
    ),
    operational(
        &["supportedFeatures"],
        "1.3.6.1.4.1.4203.1.3.5",
        Some(E::ObjectIdentifier),
        None,
    ),
    // RFC 4512 and RFC 3045 give these three no equality rule: a filter on them is Undefined.
    operational(
        &["supportedSASLMechanisms"],
        "1.3.6.1.4.1.1466.101.120.14",
        None,
        None,
    ),
    operational(&["vendorName"], "1.3.6.1.1.4", None, None),
    operational(&["vendorVersion"], "1.3.6.1.1.5", None, None),
];

/// What an attribute type without schema is matched as: caseIgnore for equality, ordering
/// and substrings, a user attribute.
pub static UNKNOWN: AttributeType = AttributeType {
    names: &[],
    oid: "",
    equality: Some(E::CaseIgnore),
    ordering: Some(O::CaseIgnore),
    substrings: Some(S::CaseIgnore),
    usage: Usage::User,
};

/// An attribute description without its options (`cn;lang-en` is `cn`).
pub fn base_name(description: &str) -> &str {
    description.split(';').next().unwrap_or(description)
}

/// The registered type `description` names (by any of its names in any case, or its OID).
pub fn lookup(description: &str) -> Option<&'static AttributeType> {
    let base = base_name(description);
    let base = base
        .strip_prefix("OID.")
        .or_else(|| base.strip_prefix("oid."))
        .unwrap_or(base);
    ATTRIBUTE_TYPES
        .iter()
        .find(|t| t.oid == base || t.names.iter().any(|n| n.eq_ignore_ascii_case(base)))
}

/// The type `description` names, or [`UNKNOWN`]'s caseIgnore rules.
pub fn attribute_type(description: &str) -> &'static AttributeType {
    lookup(description).unwrap_or(&UNKNOWN)
}

/// The canonical lower-case key of an attribute description: the registered type's first
/// name, or the description itself, lower-cased; options are kept (lower-cased) since a
/// description with options names a different attribute (RFC 4512 section 2.5).
pub fn canonical_key(description: &str) -> String {
    let (base, options) = match description.split_once(';') {
        Some((base, options)) => (base, Some(options)),
        None => (description, None),
    };
    let mut key = match lookup(base) {
        Some(t) => t.name().to_ascii_lowercase(),
        None => base.to_ascii_lowercase(),
    };
    if let Some(options) = options {
        key.push(';');
        key.push_str(&options.to_ascii_lowercase());
    }
    key
}

/// The object classes the directory shows, for objectIdentifierMatch of names and OIDs.
pub static OBJECT_CLASSES: &[(&str, &str)] = &[
    ("top", "2.5.6.0"),
    ("person", "2.5.6.6"),
    ("organizationalPerson", "2.5.6.7"),
    ("inetOrgPerson", "2.16.840.1.113730.3.2.2"),
    ("posixAccount", "1.3.6.1.1.1.2.0"),
    ("shadowAccount", "1.3.6.1.1.1.2.1"),
    ("posixGroup", "1.3.6.1.1.1.2.2"),
    ("groupOfNames", "2.5.6.9"),
    ("groupOfUniqueNames", "2.5.6.17"),
    ("organizationalUnit", "2.5.6.5"),
    ("organization", "2.5.6.4"),
    ("dcObject", "1.3.6.1.4.1.1466.344"),
    ("domain", "0.9.2342.19200300.100.4.13"),
    ("applicationProcess", "2.5.6.11"),
    ("extensibleObject", "1.3.6.1.4.1.1466.101.120.111"),
    ("subschema", "2.5.20.1"),
];

/// objectIdentifierMatch's form of an OID value: a known descriptor becomes its OID (so
/// `person` and `2.5.6.6` match), other descriptors lower-case; `None` if neither a
/// descriptor nor a numeric OID (RFC 4512 section 1.4).
pub fn normalize_oid(value: &str) -> Option<String> {
    if is_numeric_oid(value) {
        return Some(value.to_owned());
    }
    if !is_descr(value) {
        return None;
    }
    let known = OBJECT_CLASSES
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(value));
    let known = known
        .map(|(_, oid)| *oid)
        .or_else(|| lookup(value).map(|t| t.oid));
    Some(known.map_or_else(|| value.to_ascii_lowercase(), str::to_owned))
}

/// `descr = keystring`: ALPHA then ALPHA / DIGIT / HYPHEN (RFC 4512 section 1.4).
pub fn is_descr(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// `numericoid = number 1*( DOT number )`, numbers without leading zeros.
pub fn is_numeric_oid(s: &str) -> bool {
    let mut parts = 0;
    for part in s.split('.') {
        let digits = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
        if !digits || (part.len() > 1 && part.starts_with('0')) {
            return false;
        }
        parts += 1;
    }
    parts >= 2
}

/// An INTEGER value (RFC 4517 section 3.3.16: `[ "-" ] ( "0" / LDIGIT *DIGIT )`, no "-0"),
/// of any length, in a form whose derived order is the numeric one.
pub fn parse_integer(value: &str) -> Option<Integer> {
    let (negative, digits) = match value.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let valid = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && !(negative && digits == "0");
    valid.then(|| Integer {
        negative,
        digits: digits.to_owned(),
    })
}

/// An arbitrary-precision integer as its sign and canonical digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Integer {
    negative: bool,
    digits: String,
}

impl Ord for Integer {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let magnitude = self
            .digits
            .len()
            .cmp(&other.digits.len())
            .then_with(|| self.digits.cmp(&other.digits));
        match (self.negative, other.negative) {
            (false, false) => magnitude,
            (true, true) => magnitude.reverse(),
            (false, true) => std::cmp::Ordering::Greater,
            (true, false) => std::cmp::Ordering::Less,
        }
    }
}

impl PartialOrd for Integer {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for Integer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.negative {
            f.write_str("-")?;
        }
        f.write_str(&self.digits)
    }
}

/// A UUID value (RFC 4530 section 2.1, RFC 4122's string form) in lower case.
pub fn normalize_uuid(value: &str) -> Option<String> {
    let groups: Vec<&str> = value.split('-').collect();
    let lengths = groups.iter().map(|g| g.len()).collect::<Vec<_>>();
    let hex = groups
        .iter()
        .all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()));
    (lengths == [8, 4, 4, 4, 12] && hex).then(|| value.to_ascii_lowercase())
}

#[cfg(test)]
mod tests;
