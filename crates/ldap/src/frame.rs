//! Framing of LDAP messages read from a byte stream, with limits checked before decoding.
//!
//! [`decode_request`] (a server) and [`decode_response`] (a client) take the bytes read so far
//! and answer [`Frame::Incomplete`], one whole decoded [`LdapMsg`], or a [`FrameError`] whose
//! [`FrameError::action`] says what RFC 4511 wants done about it.
//!
//! Nothing proportional to what a peer *declares* is allocated: the outer length is read from
//! the first bytes and refused over [`Limits::max_message_bytes`] before any wait for the rest;
//! then the whole TLV tree is walked **iteratively** (`prescan`) to refuse indefinite lengths,
//! long-form lengths over 4 octets, high tag numbers, elements overrunning their parent and
//! nesting deeper than [`Limits::max_depth`]. Only bytes that pass are handed to
//! `ldap3_lber`/`ldap3_proto`, whose tag parser and filter decoder recurse, and whose lenient
//! corners (an indefinite length read as zero, a truncated child dropped silently, an unknown
//! protocolOp printed to stdout) are then unreachable. Its INTEGERs are read unsigned and
//! cut to 32 bits, and `ldap3_lber` writes negative ones wrongly: an Abandon's ID is checked
//! in the pre-scan and a search's limits and the paged-results size after decoding, so a
//! decoded request holds no integer outside RFC 4511's `0 .. maxInt`.
//!
//! Decoding a message that passed costs memory per element as well as per byte: `ldap3_lber`
//! builds a tag tree and `ldap3_proto` its message, about 200 bytes per element at the peak
//! (an OR of 4,080 two-byte items, 16 KB on the wire, peaked at 0.8 MB). Hence
//! [`Limits::max_elements`]: under the default limits one decode peaks near 1 MB, where 256
//! KB of empty elements would have cost 12 MB. `ldap3_proto` reports decoding failures
//! through `tracing` at `error` level (target `ldap3_proto`): a server should filter that
//! target, or a peer's garbage becomes its log volume.
//!
//! A server's read loop:
//!
//! ```
//! use portcullis_ldap::frame::{decode_request, Action, Frame, Limits};
//! use portcullis_ldap::response;
//!
//! // The bytes read so far: an Unbind (messageID 1) and the start of another message.
//! let mut buf = vec![0x30, 0x05, 0x02, 0x01, 0x01, 0x42, 0x00, 0x30];
//! let mut replies = Vec::new();
//! loop {
//!     match decode_request(&buf, &Limits::default()) {
//!         Ok(Frame::Incomplete) => break, // read more, up to max_message_bytes
//!         Ok(Frame::Message { message, consumed }) => {
//!             buf.drain(..consumed);
//!             // serve `message` ...
//!             # let _ = message;
//!         }
//!         Err(error) => {
//!             replies.extend(error.server_reply().map(response::encode));
//!             match error.action() {
//!                 Action::Respond { consumed, .. } | Action::Discard { consumed } => {
//!                     buf.drain(..consumed);
//!                 }
//!                 Action::Disconnect(_) | Action::Close => break, // write replies, close
//!             }
//!         }
//!     }
//! }
//! assert_eq!(buf, [0x30]);
//! ```

use crate::response;
use crate::result::ResultCode;
use ldap3_lber::parse::Parser;
use ldap3_proto::control::LdapControl;
use ldap3_proto::error::LdapProtoError;
use ldap3_proto::proto::{LdapMsg, LdapOp};

/// Bounds on what one message may cost to decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest whole LDAPMessage (tag, length and content) accepted, in bytes.
    pub max_message_bytes: usize,
    /// Deepest nesting of constructed elements, counting the LDAPMessage SEQUENCE as 1. A
    /// search request's filter starts at depth 3; each AND/OR/NOT adds one.
    pub max_depth: usize,
    /// Most elements (TLVs) in one message. Decoding costs memory per element, about 200
    /// bytes each at the peak, so this bounds a message's decoded size more tightly than its length
    /// does. A bind has 6, a search with a filter of n items about 3n + 15; a client reading
    /// the entries of large groups raises it.
    pub max_elements: usize,
}

impl Default for Limits {
    /// 256 KiB (OpenLDAP's default `sockbuf_max_incoming` for anonymous sessions is
    /// 262,143 bytes), depth 32 (the filters clients send nest a few levels) and 4096
    /// elements (a filter of over a thousand items).
    fn default() -> Self {
        Limits {
            max_message_bytes: 256 * 1024,
            max_depth: 32,
            max_elements: 4096,
        }
    }
}

/// What the decoder found at the front of the buffer.
// Returned once per message and destructured at once: boxing the message would cost an
// allocation per message for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// Not a whole message yet: read more bytes and call again with the longer buffer.
    Incomplete,
    /// One message; the caller drops `consumed` bytes from the front of its buffer.
    Message { message: LdapMsg, consumed: usize },
}

pub use crate::op::OpKind;

/// The messageID and protocolOp of a message whose body could not be decoded, read by the
/// pre-scan so a server can still answer that request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    pub msgid: i32,
    pub kind: OpKind,
}

/// Why the bytes at the front of the buffer are not an acceptable LDAPMessage.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("not an LDAPMessage: first tag {tag:#04x}, expected a SEQUENCE (0x30)")]
    NotASequence { tag: u8 },
    #[error("indefinite length at byte {offset}: LDAP allows definite lengths only (RFC 4511 5.1)")]
    IndefiniteLength { offset: usize },
    #[error("length field of {octets} octets at byte {offset}: at most 4 are accepted")]
    LengthTooLong { offset: usize, octets: u8 },
    #[error("high-tag-number form at byte {offset}: LDAP uses none")]
    HighTagNumber { offset: usize },
    #[error("message of {declared} bytes is over the limit of {max}")]
    TooLarge { declared: u64, max: usize },
    #[error("element at byte {offset} runs past the end of its enclosing element")]
    Overrun { offset: usize },
    #[error("elements nested deeper than {max} at byte {offset}")]
    TooDeep {
        max: usize,
        offset: usize,
        envelope: Option<Envelope>,
        consumed: usize,
    },
    #[error("message has more than {max} elements")]
    TooManyElements {
        max: usize,
        envelope: Option<Envelope>,
        consumed: usize,
    },
    #[error("LDAPMessage is not a messageID, a protocolOp and optional controls")]
    BadEnvelope,
    #[error("messageID is not an INTEGER in 1..2^31-1 (0 for a server's notice)")]
    BadMessageId,
    #[error("protocolOp tag {tag:#04x} of message {msgid} is not an LDAP operation")]
    UnknownOperation { msgid: i32, tag: u8 },
    #[error("{} (message {}) where a {expected} was expected", .envelope.kind.name(), .envelope.msgid)]
    UnexpectedOperation {
        envelope: Envelope,
        expected: &'static str,
    },
    #[error("{field} of {} (message {}) is out of range", .envelope.kind.name(), .envelope.msgid)]
    OutOfRange {
        envelope: Envelope,
        consumed: usize,
        field: &'static str,
    },
    #[error("malformed {} (message {}): {source}", .envelope.kind.name(), .envelope.msgid)]
    Malformed {
        envelope: Envelope,
        consumed: usize,
        #[source]
        source: LdapProtoError,
    },
}

/// What a server does about a [`FrameError`] (RFC 4511 sections 4.1.1 and 4.4.1). A client
/// facing a malformed response closes the connection whatever the action says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Send [`response::notice_of_disconnection`] with this code, then close: the stream
    /// cannot be trusted to be in step any more (a bad tag, a bad length, an unknown op).
    Disconnect(ResultCode),
    /// Answer the request with `protocolError` in its own response type
    /// ([`response::error_response`]), drop `consumed` bytes and keep the session.
    Respond { envelope: Envelope, consumed: usize },
    /// Drop `consumed` bytes and carry on without an answer: a malformed Abandon (it has no
    /// response).
    Discard { consumed: usize },
    /// Close without a notice: a malformed Unbind (the client is leaving).
    Close,
}

impl FrameError {
    /// What a server must do about this error.
    pub fn action(&self) -> Action {
        match self {
            FrameError::TooDeep {
                envelope: Some(envelope),
                consumed,
                ..
            }
            | FrameError::TooManyElements {
                envelope: Some(envelope),
                consumed,
                ..
            }
            | FrameError::OutOfRange {
                envelope, consumed, ..
            }
            | FrameError::Malformed {
                envelope, consumed, ..
            } => match envelope.kind {
                OpKind::Unbind => Action::Close,
                OpKind::Abandon => Action::Discard {
                    consumed: *consumed,
                },
                kind if kind.is_request() => Action::Respond {
                    envelope: *envelope,
                    consumed: *consumed,
                },
                _ => Action::Disconnect(ResultCode::ProtocolError),
            },
            _ => Action::Disconnect(ResultCode::ProtocolError),
        }
    }

    /// The message a server sends for this error, if any: the Notice of Disconnection or the
    /// request's `protocolError` response, whose message text is this error's.
    pub fn server_reply(&self) -> Option<LdapMsg> {
        match self.action() {
            Action::Disconnect(code) => {
                Some(response::notice_of_disconnection(code, &self.to_string()))
            }
            Action::Respond { envelope, .. } => response::error_response(
                envelope.msgid,
                envelope.kind,
                ResultCode::ProtocolError,
                &self.to_string(),
            ),
            Action::Discard { .. } | Action::Close => None,
        }
    }
}

/// Decodes one request from the front of `buf` (a server's side of the stream).
pub fn decode_request(buf: &[u8], limits: &Limits) -> Result<Frame, FrameError> {
    decode(buf, limits, true)
}

/// Decodes one response from the front of `buf` (a client's side of the stream).
pub fn decode_response(buf: &[u8], limits: &Limits) -> Result<Frame, FrameError> {
    decode(buf, limits, false)
}

fn decode(buf: &[u8], limits: &Limits, requests: bool) -> Result<Frame, FrameError> {
    let Some(first) = buf.first() else {
        return Ok(Frame::Incomplete);
    };
    if *first != 0x30 {
        return Err(FrameError::NotASequence { tag: *first });
    }
    let Some(header) = read_length(buf, 0)? else {
        return Ok(Frame::Incomplete);
    };
    let total = (header.header_len as u64).saturating_add(header.content_len);
    if total > limits.max_message_bytes as u64 {
        return Err(FrameError::TooLarge {
            declared: total,
            max: limits.max_message_bytes,
        });
    }
    let Some(message) = usize::try_from(total).ok().and_then(|t| buf.get(..t)) else {
        return Ok(Frame::Incomplete);
    };
    let consumed = message.len();
    let envelope = prescan(message, limits, requests)?;
    if envelope.kind.is_request() != requests {
        let expected = if requests { "request" } else { "response" };
        return Err(FrameError::UnexpectedOperation { envelope, expected });
    }
    // The pre-scan bounded the depth; the parser's own bound is set above it so it never
    // refuses what the pre-scan let through.
    let mut parser = Parser::new(limits.max_depth.saturating_add(2));
    let tag = match parser.parse(message) {
        Ok((_, tag)) => tag,
        Err(_) => return Err(FrameError::BadEnvelope),
    };
    match LdapMsg::try_from(tag) {
        Ok(message) => match out_of_range(&message) {
            Some(field) => Err(FrameError::OutOfRange {
                envelope,
                consumed,
                field,
            }),
            None => Ok(Frame::Message { message, consumed }),
        },
        Err(source) => Err(FrameError::Malformed {
            envelope,
            consumed,
            source,
        }),
    }
}

/// The field of a decoded request whose INTEGER is outside its range (0 .. maxInt in RFC
/// 4511 and RFC 2696), if any: ldap3_proto reads these as `i32` without checking, and
/// `ldap3_lber` encodes negative numbers wrongly, so they are refused here.
fn out_of_range(message: &LdapMsg) -> Option<&'static str> {
    if let LdapOp::SearchRequest(search) = &message.op {
        if search.sizelimit < 0 {
            return Some("sizeLimit");
        }
        if search.timelimit < 0 {
            return Some("timeLimit");
        }
    }
    let paged = message.ctrl.iter().any(|c| {
        matches!(c, LdapControl::SimplePagedResults { size, .. } if !(0..=i64::from(i32::MAX)).contains(size))
    });
    paged.then_some("paged results size")
}

/// A TLV header: how many octets the tag and length take, and the content's length.
#[derive(Debug, Clone, Copy)]
struct Header {
    header_len: usize,
    content_len: u64,
}

/// Reads the tag and length at `at`; `Ok(None)` when `buf` ends inside them.
fn read_length(buf: &[u8], at: usize) -> Result<Option<Header>, FrameError> {
    let Some(&tag) = buf.get(at) else {
        return Ok(None);
    };
    if tag & 0x1f == 0x1f {
        return Err(FrameError::HighTagNumber { offset: at });
    }
    let len_at = at + 1;
    let Some(&first) = buf.get(len_at) else {
        return Ok(None);
    };
    if first < 0x80 {
        return Ok(Some(Header {
            header_len: 2,
            content_len: u64::from(first),
        }));
    }
    let octets = first & 0x7f;
    if octets == 0 {
        return Err(FrameError::IndefiniteLength { offset: len_at });
    }
    if octets > 4 {
        return Err(FrameError::LengthTooLong {
            offset: len_at,
            octets,
        });
    }
    let Some(bytes) = buf.get(len_at + 1..len_at + 1 + usize::from(octets)) else {
        return Ok(None);
    };
    let content_len = bytes.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
    Ok(Some(Header {
        header_len: 2 + usize::from(octets),
        content_len,
    }))
}

/// Walks the TLV tree of one whole message without recursion, checking every tag and length
/// and the nesting depth and element count, and reads its messageID and protocolOp.
fn prescan(message: &[u8], limits: &Limits, requests: bool) -> Result<Envelope, FrameError> {
    let max_depth = limits.max_depth;
    // End offsets of the open constructed elements: at most max_depth of them.
    let mut open: Vec<usize> = Vec::with_capacity(max_depth.min(64));
    let mut scan = EnvelopeScan::default();
    let mut pos = 0usize;
    let mut elements = 0usize;
    loop {
        while open.last() == Some(&pos) {
            open.pop();
        }
        let limit = open.last().copied().unwrap_or(message.len());
        if pos >= limit {
            break;
        }
        let window = message.get(..limit).unwrap_or_default();
        let header = read_length(window, pos)?.ok_or(FrameError::Overrun { offset: pos })?;
        let end = usize::try_from(header.content_len)
            .ok()
            .and_then(|len| pos.checked_add(header.header_len)?.checked_add(len))
            .filter(|end| *end <= limit)
            .ok_or(FrameError::Overrun { offset: pos })?;
        let tag = window.get(pos).copied().unwrap_or(0);
        elements += 1;
        if elements > limits.max_elements {
            return Err(FrameError::TooManyElements {
                max: limits.max_elements,
                envelope: scan.envelope(requests).ok(),
                consumed: message.len(),
            });
        }
        if open.len() == 1 {
            scan.child(
                tag,
                window.get(pos + header.header_len..end).unwrap_or_default(),
            )?;
        }
        if tag & 0x20 != 0 {
            if open.len() >= max_depth {
                let envelope = scan.envelope(requests).ok();
                let consumed = message.len();
                return Err(FrameError::TooDeep {
                    max: max_depth,
                    offset: pos,
                    envelope,
                    consumed,
                });
            }
            open.push(end);
            pos += header.header_len;
        } else {
            pos = end;
        }
    }
    let envelope = scan.envelope(requests)?;
    if scan.bad_abandon {
        return Err(FrameError::OutOfRange {
            envelope,
            consumed: message.len(),
            field: "abandon's messageID",
        });
    }
    Ok(envelope)
}

/// The outer SEQUENCE's children as the pre-scan meets them.
#[derive(Debug, Default)]
struct EnvelopeScan {
    children: usize,
    msgid: Option<i32>,
    kind: Option<OpKind>,
    /// An Abandon's ID outside MessageID's range: ldap3_proto would truncate it to 32 bits.
    bad_abandon: bool,
}

impl EnvelopeScan {
    fn child(&mut self, tag: u8, content: &[u8]) -> Result<(), FrameError> {
        self.children += 1;
        match self.children {
            1 if tag == 0x02 => self.msgid = Some(message_id(content)?),
            1 => return Err(FrameError::BadMessageId),
            2 => match OpKind::from_tag(tag) {
                Some(kind) => {
                    self.kind = Some(kind);
                    self.bad_abandon = kind == OpKind::Abandon && message_id(content).is_err();
                }
                None => {
                    let msgid = self.msgid.unwrap_or(0);
                    return Err(FrameError::UnknownOperation { msgid, tag });
                }
            },
            // controls [0] Controls OPTIONAL, and nothing after it.
            3 if tag == 0xa0 => {}
            _ => return Err(FrameError::BadEnvelope),
        }
        Ok(())
    }

    fn envelope(&self, requests: bool) -> Result<Envelope, FrameError> {
        let (Some(msgid), Some(kind)) = (self.msgid, self.kind) else {
            return Err(FrameError::BadEnvelope);
        };
        // A request's ID is never 0: that value is for unsolicited notifications.
        if requests && msgid == 0 && kind.is_request() {
            return Err(FrameError::BadMessageId);
        }
        Ok(Envelope { msgid, kind })
    }
}

/// MessageID ::= INTEGER (0 .. maxInt), minimally encoded (X.690 8.3.2).
fn message_id(content: &[u8]) -> Result<i32, FrameError> {
    let minimal = match content {
        [] => false,
        [0, next, ..] => next & 0x80 != 0,
        _ => true,
    };
    if !minimal || content.len() > 4 || content.first().is_some_and(|b| b & 0x80 != 0) {
        return Err(FrameError::BadMessageId);
    }
    let value = content
        .iter()
        .fold(0i64, |acc, b| (acc << 8) | i64::from(*b));
    i32::try_from(value).map_err(|_| FrameError::BadMessageId)
}

#[cfg(test)]
mod tests;
