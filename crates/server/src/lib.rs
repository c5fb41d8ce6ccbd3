//! Front ends over the verification core: the OAuth 2.0 token server (HTTP), metrics and
//! health endpoints, and the typed configuration they share.
