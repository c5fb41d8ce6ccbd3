//! The error answers each kind of operation documents in the OpenAPI document: every one
//! is an RFC 9457 problem (`application/problem+json`, schema `Problem`).

use std::collections::BTreeMap;

use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::{Ref, RefOr};

fn problem(description: &str) -> RefOr<Response> {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/problem+json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Problem")))
                .build(),
        )
        .build()
        .into()
}

fn set(codes: &[(&str, &str)]) -> BTreeMap<String, RefOr<Response>> {
    codes
        .iter()
        .map(|(c, d)| ((*c).to_owned(), problem(d)))
        .collect()
}

const AUTH: [(&str, &str); 4] = [
    ("401", "No token, or a token that does not authenticate"),
    ("403", "The token lacks the scope"),
    (
        "429",
        "Too many failed authentications from this source (Retry-After)",
    ),
    ("503", "The store cannot answer now (Retry-After)"),
];

/// Errors of a read.
pub struct ReadErrors;

impl utoipa::IntoResponses for ReadErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut m = set(&AUTH);
        m.extend(set(&[
            (
                "400",
                "A query parameter or path segment is wrong (named in errors)",
            ),
            ("404", "No such resource"),
        ]));
        m
    }
}

/// Errors of a change or creation.
pub struct WriteErrors;

impl utoipa::IntoResponses for WriteErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut m = set(&AUTH);
        m.extend(set(&[
            (
                "400",
                "The body, a parameter or a header is wrong (named in errors)",
            ),
            ("404", "No such resource"),
            ("409", "Exists already, or the Idempotency-Key is in use"),
            ("412", "If-Match names another version than the current one"),
            ("413", "The body is larger than admin.body_limit"),
            ("415", "The body is not application/json"),
            ("422", "The Idempotency-Key was used for another request"),
            ("428", "If-Match is missing"),
        ]));
        m
    }
}
