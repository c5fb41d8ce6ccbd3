//! The equality rules applied to values: [`Equality::normalize`] and
//! [`Equality::matches`], above both the schema (the rules) and DNs, because
//! distinguishedNameMatch compares DNs and a DN's values are compared by their attribute's
//! rule (`Equality::normalize_plain`).

use crate::dn::Dn;
use crate::schema::Equality;

impl Equality {
    /// The value in the form this rule compares, or `None` when the value is not valid in
    /// the rule's syntax (an assertion that is not an integer for integerMatch, a non-IA5
    /// string for the IA5 rules): a filter item with such an assertion is Undefined.
    pub fn normalize(self, value: &str) -> Option<String> {
        match self {
            Equality::DistinguishedName => Dn::parse(value).ok().map(|dn| dn.normalized()),
            other => other.normalize_plain(value),
        }
    }

    /// Whether `stored` matches `assertion` under this rule: `None` (Undefined) when the
    /// assertion is not valid in the rule's syntax.
    pub fn matches<'a>(
        self,
        assertion: &str,
        stored: impl IntoIterator<Item = &'a str>,
    ) -> Option<bool> {
        let wanted = self.normalize(assertion)?;
        Some(
            stored
                .into_iter()
                .any(|v| self.normalize(v).as_deref() == Some(wanted.as_str())),
        )
    }
}
