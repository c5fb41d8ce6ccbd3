//! Directory entries as the door shows them: a DN and attributes with string values.
//!
//! Attribute names are looked up the LDAP way, by any of a type's names in any case or by
//! its OID (`GIVENNAME`, `gn` and `2.5.4.42` find `givenName`), through the schema
//! registry; the name an attribute was added under is the one shown.

use crate::dn::Dn;
use crate::schema::{self, AttributeType};

/// One attribute of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    /// The name shown (`givenName`).
    pub name: String,
    pub values: Vec<String>,
}

impl Attribute {
    /// The attribute's type in the registry, or the caseIgnore default.
    pub fn attribute_type(&self) -> &'static AttributeType {
        schema::attribute_type(&self.name)
    }

    /// Whether a description in a filter or an attribute list names this attribute.
    pub fn is_named(&self, description: &str) -> bool {
        schema::canonical_key(&self.name) == schema::canonical_key(description)
    }
}

/// An entry: its DN and attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub dn: Dn,
    pub attributes: Vec<Attribute>,
}

impl Entry {
    /// An entry with no attributes yet.
    pub fn new(dn: Dn) -> Entry {
        Entry {
            dn,
            attributes: Vec::new(),
        }
    }

    /// Adds `values` to attribute `name` (created if absent); empty `values` add nothing, as
    /// an attribute without values does not exist (RFC 4512 section 2.2).
    pub fn add<I, V>(&mut self, name: &str, values: I) -> &mut Self
    where
        I: IntoIterator<Item = V>,
        V: Into<String>,
    {
        let values: Vec<String> = values.into_iter().map(Into::into).collect();
        if values.is_empty() {
            return self;
        }
        match self.attributes.iter_mut().find(|a| a.is_named(name)) {
            Some(attribute) => attribute.values.extend(values),
            None => self.attributes.push(Attribute {
                name: name.to_owned(),
                values,
            }),
        }
        self
    }

    /// Builder form of [`Entry::add`].
    pub fn with<I, V>(mut self, name: &str, values: I) -> Entry
    where
        I: IntoIterator<Item = V>,
        V: Into<String>,
    {
        self.add(name, values);
        self
    }

    /// The attribute `description` names, if the entry has it.
    pub fn get(&self, description: &str) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.is_named(description))
    }

    /// The values of attribute `description` (none when absent).
    pub fn values(&self, description: &str) -> &[String] {
        self.get(description).map_or(&[], |a| a.values.as_slice())
    }

    /// Whether the entry has object class `class` (by name in any case or by OID).
    pub fn has_object_class(&self, class: &str) -> bool {
        schema::Equality::ObjectIdentifier
            .matches(class, self.values("objectClass").iter().map(String::as_str))
            .unwrap_or(false)
    }
}

/// The features a root DSE advertises in `supportedFeatures`: all operational attributes
/// by `+` (RFC 3673) and absolute true and false filters (RFC 4526).
pub const SUPPORTED_FEATURES: &[&str] = &["1.3.6.1.4.1.4203.1.5.1", "1.3.6.1.4.1.4203.1.5.3"];

/// The root DSE (RFC 4512 section 5.1): the entry named by the empty DN that tells clients
/// the naming contexts, LDAP version, extended operations and controls on offer. Its
/// attributes are operational, so a search returns them when asked by name or by `+`.
pub fn root_dse(naming_contexts: &[&Dn], extensions: &[&str], controls: &[&str]) -> Entry {
    Entry::new(Dn::root())
        .with("objectClass", ["top"])
        .with(
            "namingContexts",
            naming_contexts.iter().map(|dn| dn.to_string()),
        )
        .with("supportedLDAPVersion", ["3"])
        .with("supportedExtension", extensions.iter().copied())
        .with("supportedControl", controls.iter().copied())
        .with("supportedFeatures", SUPPORTED_FEATURES.iter().copied())
        .with("vendorName", ["Portcullis"])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Entry {
        let dn = Dn::parse("uid=alice,ou=people,dc=example,dc=com").unwrap_or_default();
        Entry::new(dn)
            .with("objectClass", ["top", "inetOrgPerson"])
            .with("givenName", ["Alice"])
            .with("mail", Vec::<String>::new())
    }

    #[test]
    fn attributes_are_found_by_any_name_case_or_oid() {
        let e = alice();
        for name in ["givenName", "GIVENNAME", "gn", "2.5.4.42"] {
            assert_eq!(e.values(name), ["Alice"], "{name}");
        }
        assert!(e.get("givenName;lang-en").is_none());
        assert!(
            e.get("mail").is_none(),
            "an attribute without values does not exist"
        );
    }

    #[test]
    fn object_classes_match_by_name_or_oid() {
        let e = alice();
        assert!(e.has_object_class("inetorgperson"));
        assert!(e.has_object_class("2.16.840.1.113730.3.2.2"));
        assert!(!e.has_object_class("posixAccount"));
    }

    #[test]
    fn the_root_dse_shows_its_attributes_only_when_asked() {
        let base = Dn::parse("dc=example,dc=com").unwrap_or_default();
        let dse = root_dse(
            &[&base],
            &[crate::response::OID_WHOAMI],
            &[crate::response::OID_PAGED_RESULTS],
        );
        assert!(dse.dn.is_root());
        assert_eq!(dse.values("namingcontexts"), ["dc=example,dc=com"]);
        let names = |attrs: &[&str]| -> Vec<String> {
            let selection = crate::select::Selection::parse(attrs);
            selection
                .apply(&dse, true)
                .into_iter()
                .map(|a| a.atype)
                .collect()
        };
        // RFC 4512 5.1: the root DSE's attributes are operational.
        assert_eq!(names(&[]), ["objectClass"]);
        assert_eq!(names(&["supportedControl"]), ["supportedControl"]);
        assert_eq!(names(&["+"]).len(), 6);
    }

    #[test]
    fn adding_to_an_attribute_under_another_name_extends_it() {
        let mut e = alice();
        e.add("GN", ["Ally"]);
        assert_eq!(e.values("givenName"), ["Alice", "Ally"]);
        assert_eq!(e.get("gn").map(|a| a.name.as_str()), Some("givenName"));
    }
}
