//! The OpenAPI 3.1 document of the admin API, generated from the handlers'
//! `#[utoipa::path]` annotations and the request and response types, and served at
//! `/admin/v1/openapi.json` without authentication (it describes, it holds no data).
//! The integration tests check real answers against it (Schemathesis).

use std::sync::OnceLock;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

use crate::problem::{FieldError, ProblemDetails};
use crate::{apply_endpoint, clients, groups, keys, nas, registration_tokens, throttle, users};

struct Bearer;

impl utoipa::Modify for Bearer {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "An access token of this server (client_credentials) with scope \
                         portcullis:admin:read or portcullis:admin:write",
                    ))
                    .build(),
            ),
        );
    }
}

/// The document's root.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Portcullis admin API",
        version = "1",
        description = "Clients, users, NAS, signing keys, revocations, initial access \
            tokens for dynamic client registration and throttle state. \
            Every change needs If-Match with the resource's ETag (428 without, 412 when \
            stale); creations accept Idempotency-Key; lists are keyset pages with Link \
            headers; errors are RFC 9457 problem details naming the wrong field."
    ),
    paths(
        clients::list, clients::create, clients::get, clients::update, clients::rotate,
        clients::finish_rotation, clients::remove,
        users::list, users::create, users::get, users::update, users::remove,
        groups::list, groups::create, groups::get, groups::update, groups::remove,
        nas::list, nas::create, nas::get, nas::update, nas::rotate, nas::remove,
        keys::list_keys, keys::rotate_keys, keys::list_revocations, keys::revoke,
        registration_tokens::list, registration_tokens::create, registration_tokens::get,
        registration_tokens::revoke,
        throttle::show, throttle::lift,
        apply_endpoint::apply,
    ),
    components(schemas(ProblemDetails, FieldError)),
    modifiers(&Bearer),
    tags(
        (name = "clients", description = "OAuth clients"),
        (name = "users", description = "Resource owners"),
        (name = "groups", description = "Groups of users (the directory's groups)"),
        (name = "nas", description = "RADIUS clients"),
        (name = "signing-keys", description = "Token signing keys"),
        (name = "revocations", description = "Revoked tokens"),
        (name = "registration-tokens", description = "Initial access tokens (RFC 7591)"),
        (name = "throttle", description = "Failure budgets and blocks"),
        (name = "apply", description = "Configuration as code (portcullis apply --server)"),
    )
)]
pub struct ApiDoc;

/// The document as JSON, rendered once.
pub fn json() -> &'static str {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| {
        ApiDoc::openapi()
            .to_json()
            .unwrap_or_else(|_| "{}".to_owned())
    })
}

/// `GET /admin/v1/openapi.json`
pub async fn document() -> Response {
    let mut r = json().to_owned().into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_document_is_openapi_3_1_and_lists_every_route() {
        let doc: serde_json::Value = serde_json::from_str(super::json()).unwrap_or_default();
        assert!(
            doc["openapi"].as_str().unwrap_or("").starts_with("3.1"),
            "{doc}"
        );
        for p in [
            "/admin/v1/clients",
            "/admin/v1/clients/{id}",
            "/admin/v1/clients/{id}/rotate-secret",
            "/admin/v1/users/{username}",
            "/admin/v1/groups",
            "/admin/v1/groups/{name}",
            "/admin/v1/nas/{name}/rotate-secret",
            "/admin/v1/signing-keys/rotate",
            "/admin/v1/revocations",
            "/admin/v1/throttle/lift",
            "/admin/v1/registration-tokens",
            "/admin/v1/registration-tokens/{id}",
            "/admin/v1/apply",
        ] {
            assert!(doc["paths"].get(p).is_some(), "{p} missing");
        }
        assert!(doc["components"]["schemas"].get("Problem").is_some());
        let mut ids: Vec<&str> = doc["paths"]
            .as_object()
            .into_iter()
            .flat_map(|p| p.values())
            .filter_map(|ops| ops.as_object())
            .flat_map(|ops| ops.values())
            .filter_map(|op| op["operationId"].as_str())
            .collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "operationIds must be unique");
        assert_eq!(n, 34);
    }

    /// The copy in docs/ (linked from the README) is the served document. Regenerate it
    /// with `PORTCULLIS_UPDATE_OPENAPI=1 cargo test -p portcullis-server --lib openapi`.
    #[test]
    fn the_checked_in_copy_is_current() {
        use utoipa::OpenApi;
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/admin-openapi.json");
        let now = super::ApiDoc::openapi()
            .to_pretty_json()
            .unwrap_or_default()
            + "\n";
        if std::env::var_os("PORTCULLIS_UPDATE_OPENAPI").is_some() {
            std::fs::write(path, &now).unwrap_or_else(|e| panic!("{path}: {e}"));
        }
        let kept = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            kept == now,
            "docs/admin-openapi.json is stale: PORTCULLIS_UPDATE_OPENAPI=1 cargo test -p portcullis-server --lib openapi"
        );
    }
}
