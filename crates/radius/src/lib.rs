//! RADIUS packet codec and authenticator maths (RFC 2865, RFC 2866, RFC 2869, RFC 3579 §3.2,
//! RFC 5997): pure functions over byte slices, no I/O, no clock, no randomness (callers
//! pass the Request Authenticator), so it is easy to fuzz and to share between the server's
//! UDP front end and the load lab's RADIUS driver.
//!
//! Module map:
//! - [`packet`]: codes, attribute numbers, the strict parser ([`Packet::parse`]).
//! - [`mppe`]: MS-MPPE-Send/Recv-Key hiding (RFC 2548), for EAP keys in Access-Accept.
//! - [`acct`]: accounting (RFC 2866): the Accounting-Request authenticator check,
//!   the Accounting-Response, and the typed record ([`AcctRequest`]).
//! - [`stream`]: RADIUS over TCP/TLS (RFC 6613, 6614): cutting a byte stream into
//!   packets by their Length field ([`Deframer`]).
//! - [`v11`]: RADIUS/1.1 (RFC 9765, negotiated by ALPN on RadSec): the Token in place
//!   of Identifier and authenticators, no MD5 at all, obfuscated attributes in the clear.
//! - [`auth`]: User-Password hiding, Message-Authenticator, Response Authenticator, and
//!   the request/reply encoders (Message-Authenticator always first).
//! - [`secret`]: a shared secret with its HMAC-MD5 key schedule done once ([`Secret`]),
//!   which a server keeps per NAS and hands to the `_keyed` checks and encoders.
//!
//! A server's path: [`Packet::parse`] → [`check_request_message_authenticator`] →
//! [`unhide_user_password`] → (verify) → [`encode_response`]. A client's:
//! [`hide_user_password`] → [`encode_request`] → [`verify_response`].
#![forbid(unsafe_code)]

pub mod acct;
pub mod auth;
pub mod mppe;
pub mod packet;
pub mod secret;
pub mod stream;
pub mod v11;

pub use acct::{
    AcctError, AcctRequest, StatusType, check_accounting_request, encode_accounting_request,
    encode_accounting_response,
};
pub use auth::{
    EncodeError, MAX_PASSWORD, MessageAuthenticator, PasswordError, ResponseError,
    check_request_message_authenticator, check_request_message_authenticator_keyed, encode_request,
    encode_response, encode_response_keyed, hide_user_password, unhide_user_password,
    verify_response,
};
pub use packet::{Code, MAX_PACKET, MIN_PACKET, Packet, PacketError, attr};
pub use secret::Secret;
pub use stream::{Deframer, StreamError};
