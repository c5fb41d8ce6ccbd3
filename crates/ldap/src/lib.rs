//! LDAPv3 protocol pieces for Portcullis: pure, no I/O. The LDAP door (issue 39), the lab's
//! LDAP driver and the upstream-directory client (issue 40) build on this crate.
//!
//! # The codec: kanidm's `ldap3_proto`
//!
//! Messages are encoded and decoded by [`ldap3_proto`] (re-exported as [`proto`]; its
//! `LdapMsg`, `LdapOp`, `LdapFilter`, `LdapControl` are the vocabulary of every crate that
//! speaks LDAP here). It fits because it is kept up and runs in production in kanidm's LDAP
//! interface; it decodes and encodes both directions (a server's requests, a client's
//! responses); it has the controls and extended operations the door and clients need
//! (simple paged results, WhoAmI, Password Modify, StartTLS by name, sync, server-side
//! sort); it has no `unsafe` of its own; and its `strict` feature (enabled) refuses
//! mistagged filter values, scopes and attribute lists rather than guessing.
//!
//! # What this crate adds around it
//!
//! - [`frame`]: framing with limits. Lengths, tags and nesting depth are checked by an
//!   iterative pre-scan before any byte reaches `ldap3_proto`, whose BER layer recurses, reads
//!   an indefinite length as zero, and prints unknown operations to stdout. Each error maps
//!   to RFC 4511's answer (a `protocolError` response or a Notice of Disconnection).
//! - [`dn`]: RFC 4514 DNs parsed, normalised and compared under each attribute's matching
//!   rule, with scope tests and escaping for templates (`uid={user},ou=people,...`).
//! - [`schema`] and [`entry`]: the attribute types the directory shows with their matching
//!   rules (RFC 4517, RFC 4518 string preparation), and entries.
//! - [`filter`]: three-valued filter evaluation (RFC 4511 4.5.1.7) with bounds, and an RFC
//!   4515 string parser (`ldap3_proto`'s string parser is not RFC 4515: see there), value
//!   escaping and printing.
//! - [`select`]: attribute selection (RFC 4511 4.5.1.8, `*`, `+`, `1.1`, `typesOnly`).
//! - [`result`] and [`response`]: named result codes and builders of every response a
//!   server sends, so the door stays thin.
#![forbid(unsafe_code)]

pub use ldap3_proto as proto;

pub mod dn;
pub mod entry;
pub mod filter;
pub mod frame;
mod matching;
mod op;
pub mod response;
pub mod result;
pub mod schema;
pub mod select;

pub use dn::Dn;
pub use entry::{Attribute, Entry};
pub use frame::{Frame, FrameError, Limits};
pub use result::ResultCode;
pub use select::Selection;
