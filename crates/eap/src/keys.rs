//! Keying material of the TLS-based methods, from the TLS session's exporter:
//!
//! | method, TLS version | material (128 octets: MSK then EMSK) | Session-Id |
//! |---|---|---|
//! | EAP-TLS, 1.2 (RFC 5216 §2.3) | PRF(master, "client EAP encryption", client.random ‖ server.random) | 0x0D ‖ client.random ‖ server.random |
//! | EAP-TTLS, 1.2 (RFC 5281 §8) | PRF(master, "ttls keying material", randoms) | 0x15 ‖ randoms (RFC 5247) |
//! | both, 1.3 (RFC 9190 §2.3, RFC 9427 §2.1) | TLS-Exporter("EXPORTER_EAP_TLS_Key_Material", type, 128) | type ‖ TLS-Exporter("EXPORTER_EAP_TLS_Method-Id", type, 64) |
//!
//! TLS 1.2's exporter without a context is exactly the PRF of the first two rows, so one
//! exporter call serves every row; the randoms of the 1.2 Session-Id come from the hello
//! messages ([`crate::hello`]).

use zeroize::Zeroizing;

use crate::EapError;
use crate::packet::method;

/// MSK, EMSK and Session-Id of a finished method.
pub struct Keys {
    /// Master Session Key: its halves become MS-MPPE-Recv-Key and MS-MPPE-Send-Key.
    pub msk: Zeroizing<[u8; 64]>,
    /// Extended MSK (not sent to the NAS; kept for completeness of the derivation).
    pub emsk: Zeroizing<[u8; 64]>,
    /// EAP Session-Id (RFC 5247), when it can be computed.
    pub session_id: Option<Vec<u8>>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

impl Keys {
    /// MS-MPPE-Recv-Key (RFC 2548 §2.4.3 as used by RFC 5216): the MSK's first half.
    pub fn recv_key(&self) -> &[u8] {
        &self.msk[..32]
    }

    /// MS-MPPE-Send-Key: the MSK's second half.
    pub fn send_key(&self) -> &[u8] {
        &self.msk[32..]
    }
}

/// A TLS connection's exporter: `(output, label, context)`.
pub trait Exporter {
    /// Fill `out` from the session's exporter.
    fn export(
        &self,
        out: &mut [u8],
        label: &[u8],
        context: Option<&[u8]>,
    ) -> Result<(), rustls::Error>;
}

impl<D> Exporter for rustls::ConnectionCommon<D> {
    fn export(
        &self,
        out: &mut [u8],
        label: &[u8],
        context: Option<&[u8]>,
    ) -> Result<(), rustls::Error> {
        self.export_keying_material(out, label, context).map(|_| ())
    }
}

/// Derive the keys of `method_type` (TLS or TTLS) from a finished session. `randoms`
/// (client, server) are needed for the TLS 1.2 Session-Id only.
pub fn derive(
    conn: &dyn Exporter,
    method_type: u8,
    tls13: bool,
    randoms: Option<([u8; 32], [u8; 32])>,
) -> Result<Keys, EapError> {
    let mut material = Zeroizing::new([0u8; 128]);
    let tls_err = |e: rustls::Error| EapError::Tls(e.to_string());
    let session_id = if tls13 {
        let ctx = [method_type];
        conn.export(
            &mut material[..],
            b"EXPORTER_EAP_TLS_Key_Material",
            Some(&ctx),
        )
        .map_err(tls_err)?;
        let mut id = vec![0u8; 65];
        id[0] = method_type;
        conn.export(&mut id[1..], b"EXPORTER_EAP_TLS_Method-Id", Some(&ctx))
            .map_err(tls_err)?;
        Some(id)
    } else {
        let label: &[u8] = match method_type {
            method::TTLS => b"ttls keying material",
            _ => b"client EAP encryption",
        };
        conn.export(&mut material[..], label, None)
            .map_err(tls_err)?;
        randoms.map(|(c, s)| {
            let mut id = Vec::with_capacity(65);
            id.push(method_type);
            id.extend_from_slice(&c);
            id.extend_from_slice(&s);
            id
        })
    };
    let mut msk = Zeroizing::new([0u8; 64]);
    let mut emsk = Zeroizing::new([0u8; 64]);
    msk.copy_from_slice(&material[..64]);
    emsk.copy_from_slice(&material[64..]);
    Ok(Keys {
        msk,
        emsk,
        session_id,
    })
}
