//! RFC 4518 string preparation: mapping (section 2.2), case folding (2.4, approximated by
//! `char::to_lowercase`) and insignificant space handling (2.6.1). Normalisation (2.3, NFKC)
//! and the prohibit and bidi steps (2.4, 2.5) are not done: see the module above.

/// Which part of a substrings assertion a component is (RFC 4518 section 2.6.1 prepares
/// each differently, so that spaces match across the `*`s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubstringPart {
    Initial,
    Any,
    Final,
}

/// RFC 4518 2.2 Map: characters mapped to nothing, to SPACE, or kept; then case folding when
/// `fold`.
fn map_chars(value: &str, fold: bool) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            // Soft hyphens, combining grapheme joiner, variation selectors, object
            // replacement, zero width space and the formatting characters (Cf) in use.
            '\u{00AD}'
            | '\u{1806}'
            | '\u{034F}'
            | '\u{180B}'..='\u{180D}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FFFC}'
            | '\u{200B}'
            | '\u{200C}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{FEFF}' => {}
            '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | '\u{85}' => out.push(' '),
            c if c.is_control() => {}
            // Separators (Zs, Zl, Zp) become SPACE.
            c if c.is_whitespace() => out.push(' '),
            c if fold => out.extend(c.to_lowercase()),
            c => out.push(c),
        }
    }
    out
}

/// An attribute value or a non-substring assertion value, prepared: no non-space character
/// gives two SPACEs; otherwise one SPACE at each end and every inner run of spaces as two.
pub fn prepare(value: &str, fold: bool) -> String {
    let mapped = map_chars(value, fold);
    let words: Vec<&str> = mapped.split(' ').filter(|w| !w.is_empty()).collect();
    if words.is_empty() {
        return "  ".to_owned();
    }
    format!(" {} ", words.join("  "))
}

/// The form equality compares: the words of the mapped (and, with `fold`, case-folded)
/// string joined by single spaces. Two values are equal under RFC 4518's preparation exactly
/// when these are, and the form reads well in a normalised DN (`cn=alice liddell`).
pub fn equality_form(value: &str, fold: bool) -> String {
    let mapped = map_chars(value, fold);
    let words: Vec<&str> = mapped.split(' ').filter(|w| !w.is_empty()).collect();
    words.join(" ")
}

/// One component of a substrings assertion, prepared per its `part`.
pub fn prepare_substring(value: &str, part: SubstringPart, fold: bool) -> String {
    let mapped = map_chars(value, fold);
    let words: Vec<&str> = mapped.split(' ').filter(|w| !w.is_empty()).collect();
    if words.is_empty() {
        return " ".to_owned();
    }
    let leading = mapped.starts_with(' ');
    let trailing = mapped.ends_with(' ');
    let start = part == SubstringPart::Initial || leading;
    let end = part == SubstringPart::Final || trailing;
    let mut out = String::with_capacity(mapped.len() + 2);
    if start {
        out.push(' ');
    }
    out.push_str(&words.join("  "));
    if end {
        out.push(' ');
    }
    out
}

/// Whether the prepared `value` matches the prepared components, in order and without
/// overlap (X.520's substrings match).
pub fn substrings_match(
    value: &str,
    initial: Option<&str>,
    any: &[String],
    final_: Option<&str>,
) -> bool {
    let mut rest = value;
    if let Some(initial) = initial {
        match rest.strip_prefix(initial) {
            Some(r) => rest = r,
            None => return false,
        }
    }
    for part in any {
        match rest.find(part.as_str()) {
            Some(at) => rest = rest.get(at + part.len()..).unwrap_or_default(),
            None => return false,
        }
    }
    final_.is_none_or(|f| rest.ends_with(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4518 section 2.6.1's own example: "foo<SPACE>bar<SPACE><SPACE>" prepares to
    /// "<SPACE>foo<SPACE><SPACE>bar<SPACE>".
    #[test]
    fn insignificant_space_example_of_rfc4518() {
        assert_eq!(prepare("foo bar  ", false), " foo  bar ");
        assert_eq!(prepare("   ", false), "  ");
        assert_eq!(prepare("", false), "  ");
    }

    #[test]
    fn substring_components_keep_spaces_that_meet_a_star() {
        assert_eq!(
            prepare_substring("foo", SubstringPart::Initial, false),
            " foo"
        );
        assert_eq!(
            prepare_substring("foo ", SubstringPart::Initial, false),
            " foo "
        );
        assert_eq!(
            prepare_substring(" o b", SubstringPart::Any, false),
            " o  b"
        );
        assert_eq!(
            prepare_substring("bar", SubstringPart::Final, false),
            "bar "
        );
        assert_eq!(prepare_substring("  ", SubstringPart::Any, false), " ");
    }

    #[test]
    fn mapping_removes_format_characters_and_folds_case() {
        assert_eq!(prepare("Ba\u{00AD}r\u{200B}\tÉ", true), " bar  é ");
        assert_eq!(prepare("A\u{00A0}B", true), " a  b ");
    }

    #[test]
    fn equality_form_agrees_with_the_prepared_form() {
        let values = [
            "foo bar  ",
            " foo  bar",
            "Foo\tBar",
            "foobar",
            "",
            "   ",
            "foo\u{00AD}bar",
        ];
        for a in values {
            for b in values {
                let prepared = prepare(a, true) == prepare(b, true);
                assert_eq!(
                    equality_form(a, true) == equality_form(b, true),
                    prepared,
                    "{a:?} {b:?}"
                );
            }
        }
        assert_eq!(equality_form("  Alice   Liddell ", true), "alice liddell");
    }

    #[test]
    fn substrings_do_not_overlap() {
        let v = prepare("abc", false);
        assert!(!substrings_match(&v, Some(" ab"), &[], Some("bc ")));
        assert!(substrings_match(
            &v,
            Some(" a"),
            &["b".to_owned()],
            Some("c ")
        ));
        assert!(!substrings_match(
            &v,
            Some(" a"),
            &["c".to_owned()],
            Some("c ")
        ));
    }
}
