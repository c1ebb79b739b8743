//! gRPC status codes (the `grpc-status` trailer) by name, as gRPC's
//! `doc/statuscodes.md` names them. Apart from `grpc/`, which builds on
//! the HTTP/2 session: the session notes a response's status, and the
//! stats and reports count it, so the codes sit below them all.

/// The names of codes 0 to 16.
const NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The code of a successful call.
pub const OK: u8 = 0;
/// The code gRPC gives a status it cannot read.
pub const UNKNOWN: u8 = 2;
/// The code of a request that is not what the method takes.
pub const INVALID_ARGUMENT: u8 = 3;
/// The code of something asked for that does not exist.
pub const NOT_FOUND: u8 = 5;
/// The code of a request larger than the server takes.
pub const RESOURCE_EXHAUSTED: u8 = 8;
/// The code of a method the server does not have.
pub const UNIMPLEMENTED: u8 = 12;

/// The name of `code` (`UNAVAILABLE`), or `CODE_20` for one gRPC does not
/// name.
pub fn name(code: u8) -> String {
    match NAMES.get(usize::from(code)) {
        Some(name) => (*name).to_string(),
        None => format!("CODE_{code}"),
    }
}

/// The code a [`name`] gives back.
pub fn from_name(name: &str) -> Option<u8> {
    if let Some(at) = NAMES.iter().position(|known| *known == name) {
        return u8::try_from(at).ok();
    }
    name.strip_prefix("CODE_")?.parse().ok().filter(|&code| usize::from(code) >= NAMES.len())
}

/// The code of a `grpc-status` value: a decimal number. One that is not
/// (or does not fit) is UNKNOWN, as gRPC's clients read it.
pub fn parse(value: &[u8]) -> u8 {
    match value {
        [] => UNKNOWN,
        digits if digits.len() <= 3 && digits.iter().all(u8::is_ascii_digit) => {
            let n = digits.iter().fold(0u16, |n, d| n * 10 + u16::from(d - b'0'));
            u8::try_from(n).unwrap_or(UNKNOWN)
        }
        _ => UNKNOWN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_by_name_and_back() {
        assert_eq!(name(0), "OK");
        assert_eq!(name(14), "UNAVAILABLE");
        assert_eq!(name(16), "UNAUTHENTICATED");
        assert_eq!(name(20), "CODE_20");
        for code in [0, 4, 14, 16, 17, 255] {
            assert_eq!(from_name(&name(code)), Some(code));
        }
        assert_eq!(from_name("CODE_3"), None, "a named code goes by its name");
        assert_eq!(from_name("FINE"), None);
    }

    #[test]
    fn status_values() {
        assert_eq!(parse(b"0"), 0);
        assert_eq!(parse(b"14"), 14);
        assert_eq!(parse(b"200"), 200);
        assert_eq!(parse(b"256"), UNKNOWN);
        assert_eq!(parse(b"x"), UNKNOWN);
        assert_eq!(parse(b""), UNKNOWN);
        assert_eq!(parse(b"-1"), UNKNOWN);
        assert_eq!(parse(b"00014"), UNKNOWN);
    }
}
