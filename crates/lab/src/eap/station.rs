//! What an 802.1X station is (its method and its own TLS) and what one of its logins
//! came to: the types the driver's `Identity` and `AttemptResult` carry. A leaf under
//! `eap`, so the driver can name them while the EAP driver implements the driver's trait.

use crate::scenario::EapMethod;

/// What makes a virtual client an 802.1X station (set on its driver `Identity`).
#[derive(Debug, Clone)]
pub struct Station {
    /// EAP-TLS or EAP-TTLS/PAP.
    pub method: EapMethod,
    /// Its TLS: its own configuration, resuming or not.
    pub tls: crate::tls::Tls,
    /// TTLS outer identity (default: the user name).
    pub anonymous_identity: Option<String>,
}

/// One login's particulars, carried in the driver's `AttemptResult`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EapLogin {
    /// Access-Requests of the login (retransmissions not counted).
    pub round_trips: u32,
    /// The TLS handshake was abbreviated (a resumed session).
    pub resumed: bool,
    /// An Access-Accept whose MS-MPPE keys differ from the station's own (or are
    /// missing): a wrong response that fails the run.
    pub wrong_keys: bool,
}
