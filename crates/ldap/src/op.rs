//! The protocolOp of an LDAPMessage (RFC 4511 section 4.2 onwards), below both the
//! framing (which reads it from the tag) and the responses (which answer per kind).

/// The protocolOp of a message, from its tag (RFC 4511 section 4.2 onwards).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    Bind,
    Unbind,
    Search,
    Modify,
    Add,
    Delete,
    ModifyDn,
    Compare,
    Abandon,
    Extended,
    BindResponse,
    SearchEntry,
    SearchReference,
    SearchDone,
    ModifyResponse,
    AddResponse,
    DeleteResponse,
    ModifyDnResponse,
    CompareResponse,
    ExtendedResponse,
    Intermediate,
}

impl OpKind {
    /// The kind a protocolOp tag octet names, with the primitive/constructed form RFC 4511
    /// gives it; `None` for anything else.
    pub fn from_tag(tag: u8) -> Option<OpKind> {
        Some(match tag {
            0x60 => OpKind::Bind,
            0x42 => OpKind::Unbind,
            0x63 => OpKind::Search,
            0x66 => OpKind::Modify,
            0x68 => OpKind::Add,
            0x4a => OpKind::Delete,
            0x6c => OpKind::ModifyDn,
            0x6e => OpKind::Compare,
            0x50 => OpKind::Abandon,
            0x77 => OpKind::Extended,
            0x61 => OpKind::BindResponse,
            0x64 => OpKind::SearchEntry,
            0x73 => OpKind::SearchReference,
            0x65 => OpKind::SearchDone,
            0x67 => OpKind::ModifyResponse,
            0x69 => OpKind::AddResponse,
            0x6b => OpKind::DeleteResponse,
            0x6d => OpKind::ModifyDnResponse,
            0x6f => OpKind::CompareResponse,
            0x78 => OpKind::ExtendedResponse,
            0x79 => OpKind::Intermediate,
            _ => return None,
        })
    }

    /// A client's request (as opposed to a server's response).
    pub fn is_request(self) -> bool {
        matches!(
            self,
            OpKind::Bind
                | OpKind::Unbind
                | OpKind::Search
                | OpKind::Modify
                | OpKind::Add
                | OpKind::Delete
                | OpKind::ModifyDn
                | OpKind::Compare
                | OpKind::Abandon
                | OpKind::Extended
        )
    }

    /// The request's name for logs and metrics labels (`bind`, `search`, ...).
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Bind => "bind",
            OpKind::Unbind => "unbind",
            OpKind::Search => "search",
            OpKind::Modify => "modify",
            OpKind::Add => "add",
            OpKind::Delete => "delete",
            OpKind::ModifyDn => "modifyDN",
            OpKind::Compare => "compare",
            OpKind::Abandon => "abandon",
            OpKind::Extended => "extended",
            OpKind::BindResponse => "bindResponse",
            OpKind::SearchEntry => "searchResEntry",
            OpKind::SearchReference => "searchResRef",
            OpKind::SearchDone => "searchResDone",
            OpKind::ModifyResponse => "modifyResponse",
            OpKind::AddResponse => "addResponse",
            OpKind::DeleteResponse => "delResponse",
            OpKind::ModifyDnResponse => "modDNResponse",
            OpKind::CompareResponse => "compareResponse",
            OpKind::ExtendedResponse => "extendedResp",
            OpKind::Intermediate => "intermediateResponse",
        }
    }
}
