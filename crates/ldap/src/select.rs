//! Which attributes a search returns (RFC 4511 section 4.5.1.8, RFC 3673).
//!
//! An empty list or `*` selects every user attribute; `+` every operational one (RFC 3673);
//! `1.1` alone none; names select their attribute by any of its names, in any case, or its
//! OID. Names the directory does not have select nothing (they are not an error). `1.1`
//! beside other names is ignored, as OpenLDAP does.

use crate::entry::{Attribute, Entry};
use crate::schema::{self, Usage};
use ldap3_proto::proto::LdapPartialAttribute;

/// A search's attribute selection, parsed once per search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    all_user: bool,
    all_operational: bool,
    /// Canonical keys ([`schema::canonical_key`]) of the attributes named.
    names: Vec<String>,
}

impl Selection {
    /// The selection a SearchRequest's `attributes` field asks for.
    pub fn parse<S: AsRef<str>>(attributes: &[S]) -> Selection {
        let mut selection = Selection {
            all_user: false,
            all_operational: false,
            names: Vec::new(),
        };
        for attribute in attributes {
            match attribute.as_ref() {
                "*" => selection.all_user = true,
                "+" => selection.all_operational = true,
                "1.1" => {}
                name => selection.names.push(schema::canonical_key(name)),
            }
        }
        selection.all_user |= attributes.is_empty();
        selection
    }

    /// Every user attribute (an empty list, or `*`).
    pub fn all_user() -> Selection {
        Selection::parse::<&str>(&[])
    }

    /// Whether the selection includes `attribute`.
    pub fn includes(&self, attribute: &Attribute) -> bool {
        let operational = attribute.attribute_type().usage == Usage::Operational;
        if (operational && self.all_operational) || (!operational && self.all_user) {
            return true;
        }
        let key = schema::canonical_key(&attribute.name);
        self.names.contains(&key)
    }

    /// The selected attributes of `entry` as a SearchResultEntry carries them; with
    /// `types_only`, their names without values.
    pub fn apply(&self, entry: &Entry, types_only: bool) -> Vec<LdapPartialAttribute> {
        entry
            .attributes
            .iter()
            .filter(|a| self.includes(a))
            .map(|a| LdapPartialAttribute {
                atype: a.name.clone(),
                vals: if types_only {
                    Vec::new()
                } else {
                    a.values.iter().map(|v| v.as_bytes().to_vec()).collect()
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dn::Dn;

    fn entry() -> Entry {
        Entry::new(Dn::parse("uid=alice,ou=people,dc=example,dc=com").unwrap_or_default())
            .with("objectClass", ["inetOrgPerson"])
            .with("uid", ["alice"])
            .with("cn", ["Alice Liddell"])
            .with("entryUUID", ["0f4a7c3e-8a5b-4f1e-9a64-6c1d2e3f4a5b"])
            .with("memberOf", ["cn=staff,ou=groups,dc=example,dc=com"])
    }

    fn names(selection: &Selection) -> Vec<String> {
        selection
            .apply(&entry(), false)
            .into_iter()
            .map(|a| a.atype)
            .collect()
    }

    #[test]
    fn rfc4511_and_rfc3673_special_selectors() {
        let user = ["objectClass", "uid", "cn"];
        let operational = ["entryUUID", "memberOf"];
        assert_eq!(names(&Selection::parse::<&str>(&[])), user);
        assert_eq!(names(&Selection::parse(&["*"])), user);
        assert_eq!(names(&Selection::parse(&["+"])), operational);
        assert_eq!(names(&Selection::parse(&["*", "+"])).len(), 5);
        assert!(names(&Selection::parse(&["1.1"])).is_empty());
        assert_eq!(names(&Selection::parse(&["1.1", "uid"])), ["uid"]);
    }

    #[test]
    fn names_select_case_insensitively_by_name_alias_or_oid() {
        assert_eq!(
            names(&Selection::parse(&["UID", "commonName"])),
            ["uid", "cn"]
        );
        assert_eq!(names(&Selection::parse(&["2.5.4.3", "nosuchattr"])), ["cn"]);
        assert_eq!(names(&Selection::parse(&["entryuuid"])), ["entryUUID"]);
        assert_eq!(
            names(&Selection::parse(&["*", "memberOf"])),
            ["objectClass", "uid", "cn", "memberOf"]
        );
    }

    #[test]
    fn types_only_leaves_values_out() {
        let attrs = Selection::parse(&["cn"]).apply(&entry(), true);
        assert_eq!(attrs.len(), 1);
        assert!(attrs.iter().all(|a| a.vals.is_empty()));
        let attrs = Selection::parse(&["cn"]).apply(&entry(), false);
        assert_eq!(
            attrs.first().map(|a| a.vals.clone()),
            Some(vec![b"Alice Liddell".to_vec()])
        );
    }
}
