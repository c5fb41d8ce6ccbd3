//! LDAP result codes (RFC 4511 section 4.1.9 and appendix A) with their RFC names.
//!
//! `ldap3_proto::proto::LdapResultCode` is the wire vocabulary; this module gives the codes a
//! door sends and a client reads a `Copy` type with the names RFC 4511 uses, for metrics
//! labels, audit events and logs (`invalidCredentials`, not `InvalidCredentials` or `49`).

use ldap3_proto::proto::LdapResultCode;

macro_rules! result_codes {
    ($($variant:ident = $value:literal, $name:literal, $proto:ident;)*) => {
        /// An LDAP result code of RFC 4511 (and RFC 3909's `cannotCancel` family is left out:
        /// nothing here cancels).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ResultCode {
            $(
                #[doc = concat!("`", $name, "` (", stringify!($value), ")")]
                $variant = $value,
            )*
        }

        impl ResultCode {
            /// Every code, in numeric order.
            pub const ALL: &'static [ResultCode] = &[$(ResultCode::$variant),*];

            /// The numeric value sent on the wire.
            pub fn value(self) -> i64 {
                self as i64
            }

            /// The name RFC 4511 appendix A gives the code (`invalidCredentials`).
            pub fn name(self) -> &'static str {
                match self {
                    $(ResultCode::$variant => $name,)*
                }
            }

            /// The code with this numeric value, if it is one of RFC 4511's.
            pub fn from_value(value: i64) -> Option<Self> {
                match value {
                    $($value => Some(ResultCode::$variant),)*
                    _ => None,
                }
            }
        }

        impl From<ResultCode> for LdapResultCode {
            fn from(code: ResultCode) -> Self {
                match code {
                    $(ResultCode::$variant => LdapResultCode::$proto,)*
                }
            }
        }

        impl TryFrom<&LdapResultCode> for ResultCode {
            type Error = UnknownResultCode;

            /// The RFC 4511 code a decoded result carries; `Err` for the codes of other
            /// RFCs (sync's `esyncRefreshRequired`, cancel's) that ldap3_proto also decodes.
            fn try_from(code: &LdapResultCode) -> Result<Self, Self::Error> {
                match code {
                    $(LdapResultCode::$proto => Ok(ResultCode::$variant),)*
                    _ => Err(UnknownResultCode),
                }
            }
        }
    };
}

result_codes! {
    Success = 0, "success", Success;
    OperationsError = 1, "operationsError", OperationsError;
    ProtocolError = 2, "protocolError", ProtocolError;
    TimeLimitExceeded = 3, "timeLimitExceeded", TimeLimitExceeded;
    SizeLimitExceeded = 4, "sizeLimitExceeded", SizeLimitExceeded;
    CompareFalse = 5, "compareFalse", CompareFalse;
    CompareTrue = 6, "compareTrue", CompareTrue;
    AuthMethodNotSupported = 7, "authMethodNotSupported", AuthMethodNotSupported;
    StrongerAuthRequired = 8, "strongerAuthRequired", StrongerAuthRequired;
    Referral = 10, "referral", Referral;
    AdminLimitExceeded = 11, "adminLimitExceeded", AdminLimitExceeded;
    UnavailableCriticalExtension = 12, "unavailableCriticalExtension", UnavailableCriticalExtension;
    ConfidentialityRequired = 13, "confidentialityRequired", ConfidentialityRequired;
    SaslBindInProgress = 14, "saslBindInProgress", SaslBindInProgress;
    NoSuchAttribute = 16, "noSuchAttribute", NoSuchAttribute;
    UndefinedAttributeType = 17, "undefinedAttributeType", UndefinedAttributeType;
    InappropriateMatching = 18, "inappropriateMatching", InappropriateMatching;
    ConstraintViolation = 19, "constraintViolation", ConstraintViolation;
    AttributeOrValueExists = 20, "attributeOrValueExists", AttributeOrValueExists;
    InvalidAttributeSyntax = 21, "invalidAttributeSyntax", InvalidAttributeSyntax;
    NoSuchObject = 32, "noSuchObject", NoSuchObject;
    AliasProblem = 33, "aliasProblem", AliasProblem;
    InvalidDnSyntax = 34, "invalidDNSyntax", InvalidDNSyntax;
    AliasDereferencingProblem = 36, "aliasDereferencingProblem", AliasDereferencingProblem;
    InappropriateAuthentication = 48, "inappropriateAuthentication", InappropriateAuthentication;
    InvalidCredentials = 49, "invalidCredentials", InvalidCredentials;
    InsufficientAccessRights = 50, "insufficientAccessRights", InsufficentAccessRights;
    Busy = 51, "busy", Busy;
    Unavailable = 52, "unavailable", Unavailable;
    UnwillingToPerform = 53, "unwillingToPerform", UnwillingToPerform;
    LoopDetect = 54, "loopDetect", LoopDetect;
    NamingViolation = 64, "namingViolation", NamingViolation;
    ObjectClassViolation = 65, "objectClassViolation", ObjectClassViolation;
    NotAllowedOnNonLeaf = 66, "notAllowedOnNonLeaf", NotAllowedOnNonLeaf;
    NotAllowedOnRdn = 67, "notAllowedOnRDN", NotALlowedOnRDN;
    EntryAlreadyExists = 68, "entryAlreadyExists", EntryAlreadyExists;
    ObjectClassModsProhibited = 69, "objectClassModsProhibited", ObjectClassModsProhibited;
    AffectsMultipleDsas = 71, "affectsMultipleDSAs", AffectsMultipleDSAs;
    Other = 80, "other", Other;
}

/// A decoded result code outside RFC 4511's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("result code is not one of RFC 4511's")]
pub struct UnknownResultCode;

impl std::fmt::Display for ResultCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name(), self.value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4511 appendix A.1's table, copied by hand: name and value of every code.
    const RFC4511_A1: &[(&str, i64)] = &[
        ("success", 0),
        ("operationsError", 1),
        ("protocolError", 2),
        ("timeLimitExceeded", 3),
        ("sizeLimitExceeded", 4),
        ("compareFalse", 5),
        ("compareTrue", 6),
        ("authMethodNotSupported", 7),
        ("strongerAuthRequired", 8),
        ("referral", 10),
        ("adminLimitExceeded", 11),
        ("unavailableCriticalExtension", 12),
        ("confidentialityRequired", 13),
        ("saslBindInProgress", 14),
        ("noSuchAttribute", 16),
        ("undefinedAttributeType", 17),
        ("inappropriateMatching", 18),
        ("constraintViolation", 19),
        ("attributeOrValueExists", 20),
        ("invalidAttributeSyntax", 21),
        ("noSuchObject", 32),
        ("aliasProblem", 33),
        ("invalidDNSyntax", 34),
        ("aliasDereferencingProblem", 36),
        ("inappropriateAuthentication", 48),
        ("invalidCredentials", 49),
        ("insufficientAccessRights", 50),
        ("busy", 51),
        ("unavailable", 52),
        ("unwillingToPerform", 53),
        ("loopDetect", 54),
        ("namingViolation", 64),
        ("objectClassViolation", 65),
        ("notAllowedOnNonLeaf", 66),
        ("notAllowedOnRDN", 67),
        ("entryAlreadyExists", 68),
        ("objectClassModsProhibited", 69),
        ("affectsMultipleDSAs", 71),
        ("other", 80),
    ];

    #[test]
    fn names_and_values_follow_rfc4511_appendix_a() {
        assert_eq!(ResultCode::ALL.len(), RFC4511_A1.len());
        for (code, (name, value)) in ResultCode::ALL.iter().zip(RFC4511_A1) {
            assert_eq!(code.name(), *name);
            assert_eq!(code.value(), *value);
            assert_eq!(ResultCode::from_value(*value), Some(*code));
        }
        assert_eq!(ResultCode::from_value(9), None);
    }

    #[test]
    fn converts_to_and_from_ldap3_proto_with_the_same_number() {
        for code in ResultCode::ALL {
            let proto = LdapResultCode::from(*code);
            assert_eq!(proto.clone() as i64, code.value());
            assert_eq!(ResultCode::try_from(&proto), Ok(*code));
        }
        assert!(ResultCode::try_from(&LdapResultCode::EsyncRefreshRequired).is_err());
    }
}
