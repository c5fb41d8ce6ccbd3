//! Storage: the identity store (clients, users, signing keys, revoked tokens) behind the
//! [`Store`] trait, with the embedded SQLite backend by default.
