//! Search filters: evaluation over an [`Entry`] with RFC 4511 section 4.5.1.7's three-valued
//! logic, and the RFC 4515 string form ([`parse`], [`escape_value`], [`to_string`]).
//!
//! Filters are `ldap3_proto`'s [`LdapFilter`], as decoded from a SearchRequest or parsed from
//! configuration. [`check`] bounds a filter's depth and size without recursion before
//! [`Checked::evaluate`] (recursive) runs it over entries. Each item uses its attribute's
//! rule from the schema registry: equality, presence, substrings, approximate (as equality),
//! greaterOrEqual/lessOrEqual by the ordering rule; extensible matches are evaluated when
//! they name an attribute and one of the registry's equality rules (or none) without
//! `dnAttributes`, and are Undefined otherwise. An item whose attribute has no such rule, or
//! whose assertion is invalid in the rule's syntax, is Undefined.

mod string;

pub use string::{FilterParseError, escape_value, filter_template, parse, parse_with, to_string};

use crate::entry::Entry;
use crate::schema::{self, Equality, SubstringPart, prep};
use ldap3_proto::proto::{LdapFilter, LdapMatchingRuleAssertion, LdapSubstringFilter};

/// A filter's value on an entry (RFC 4511 4.5.1.7): only TRUE returns the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tri {
    True,
    False,
    Undefined,
}

impl Tri {
    fn from_bool(b: bool) -> Tri {
        if b { Tri::True } else { Tri::False }
    }

    fn from_option(b: Option<bool>) -> Tri {
        b.map_or(Tri::Undefined, Tri::from_bool)
    }

    fn not(self) -> Tri {
        match self {
            Tri::True => Tri::False,
            Tri::False => Tri::True,
            Tri::Undefined => Tri::Undefined,
        }
    }
}

/// Bounds on a filter's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Deepest nesting of AND/OR/NOT; an item alone is depth 1.
    pub max_depth: usize,
    /// Most filter nodes (items and AND/OR/NOT) in all.
    pub max_nodes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: 32,
            max_nodes: 1024,
        }
    }
}

/// A filter over the bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("filter nested deeper than {0}")]
    TooDeep(usize),
    #[error("filter has more than {0} parts")]
    TooLarge(usize),
}

/// A filter known to be within [`Limits`], ready to evaluate.
#[derive(Debug, Clone, Copy)]
pub struct Checked<'a>(&'a LdapFilter);

/// Checks `filter` against `limits` without recursion.
pub fn check<'a>(filter: &'a LdapFilter, limits: &Limits) -> Result<Checked<'a>, FilterError> {
    let mut stack = vec![(filter, 1usize)];
    let mut nodes = 0usize;
    while let Some((node, depth)) = stack.pop() {
        nodes += 1;
        if nodes > limits.max_nodes {
            return Err(FilterError::TooLarge(limits.max_nodes));
        }
        if depth > limits.max_depth {
            return Err(FilterError::TooDeep(limits.max_depth));
        }
        match node {
            LdapFilter::And(children) | LdapFilter::Or(children) => {
                stack.extend(children.iter().map(|c| (c, depth + 1)));
            }
            LdapFilter::Not(child) => stack.push((child, depth + 1)),
            _ => {}
        }
    }
    Ok(Checked(filter))
}

impl Checked<'_> {
    /// The filter's value on `entry`.
    pub fn evaluate(&self, entry: &Entry) -> Tri {
        evaluate(self.0, entry)
    }

    /// Whether `entry` is returned: the filter is TRUE on it.
    pub fn matches(&self, entry: &Entry) -> bool {
        self.evaluate(entry) == Tri::True
    }

    /// The filter checked.
    pub fn filter(&self) -> &LdapFilter {
        self.0
    }
}

fn evaluate(filter: &LdapFilter, entry: &Entry) -> Tri {
    match filter {
        LdapFilter::And(children) => {
            children
                .iter()
                .fold(Tri::True, |acc, c| match (acc, evaluate(c, entry)) {
                    (Tri::False, _) | (_, Tri::False) => Tri::False,
                    (Tri::Undefined, _) | (_, Tri::Undefined) => Tri::Undefined,
                    _ => Tri::True,
                })
        }
        LdapFilter::Or(children) => {
            children
                .iter()
                .fold(Tri::False, |acc, c| match (acc, evaluate(c, entry)) {
                    (Tri::True, _) | (_, Tri::True) => Tri::True,
                    (Tri::Undefined, _) | (_, Tri::Undefined) => Tri::Undefined,
                    _ => Tri::False,
                })
        }
        LdapFilter::Not(child) => evaluate(child, entry).not(),
        LdapFilter::Equality(attr, value) | LdapFilter::Approx(attr, value) => {
            equality(entry, attr, value, schema::attribute_type(attr).equality)
        }
        LdapFilter::Present(attr) => Tri::from_bool(entry.get(attr).is_some()),
        LdapFilter::Substring(attr, sub) => substrings(entry, attr, sub),
        LdapFilter::GreaterOrEqual(attr, value) => ordering(entry, attr, value, true),
        LdapFilter::LessOrEqual(attr, value) => ordering(entry, attr, value, false),
        LdapFilter::Extensible(assertion) => extensible(entry, assertion),
    }
}

fn values<'e>(entry: &'e Entry, attr: &str) -> impl Iterator<Item = &'e str> {
    entry.values(attr).iter().map(String::as_str)
}

fn equality(entry: &Entry, attr: &str, value: &str, rule: Option<Equality>) -> Tri {
    match rule {
        Some(rule) => Tri::from_option(rule.matches(value, values(entry, attr))),
        None => Tri::Undefined,
    }
}

fn ordering(entry: &Entry, attr: &str, value: &str, greater: bool) -> Tri {
    let Some(rule) = schema::attribute_type(attr).ordering else {
        return Tri::Undefined;
    };
    // An assertion invalid in the syntax is Undefined whatever the values.
    if rule.compare(value, value).is_none() {
        return Tri::Undefined;
    }
    let hit = values(entry, attr).any(|v| match rule.compare(v, value) {
        Some(std::cmp::Ordering::Equal) => true,
        Some(std::cmp::Ordering::Greater) => greater,
        Some(std::cmp::Ordering::Less) => !greater,
        None => false,
    });
    Tri::from_bool(hit)
}

fn substrings(entry: &Entry, attr: &str, sub: &LdapSubstringFilter) -> Tri {
    let Some(rule) = schema::attribute_type(attr).substrings else {
        return Tri::Undefined;
    };
    let mut parts = sub.initial.iter().chain(&sub.any).chain(&sub.final_);
    if rule.ia5() && !parts.all(|p| p.is_ascii()) {
        return Tri::Undefined;
    }
    let fold = rule.folds_case();
    let prep = |s: &String, part| prep::prepare_substring(s, part, fold);
    let initial = sub
        .initial
        .as_ref()
        .map(|s| prep(s, SubstringPart::Initial));
    let any: Vec<String> = sub
        .any
        .iter()
        .map(|s| prep(s, SubstringPart::Any))
        .collect();
    let final_ = sub.final_.as_ref().map(|s| prep(s, SubstringPart::Final));
    let hit = values(entry, attr)
        .filter(|v| !rule.ia5() || v.is_ascii())
        .any(|v| {
            let value = prep::prepare(v, fold);
            prep::substrings_match(&value, initial.as_deref(), &any, final_.as_deref())
        });
    Tri::from_bool(hit)
}

/// `attr:=value` and `attr:rule:=value` without `:dn`; everything else is Undefined.
fn extensible(entry: &Entry, assertion: &LdapMatchingRuleAssertion) -> Tri {
    let Some(attr) = assertion.type_.as_deref() else {
        return Tri::Undefined;
    };
    if assertion.dn_attributes {
        return Tri::Undefined;
    }
    let rule = match assertion.matching_rule.as_deref() {
        None => schema::attribute_type(attr).equality,
        Some(id) => match Equality::from_rule_id(id) {
            Some(rule) => Some(rule),
            None => return Tri::Undefined,
        },
    };
    equality(entry, attr, &assertion.match_value, rule)
}

#[cfg(test)]
mod tests;
