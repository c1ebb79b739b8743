//! HTTP/2 (`--http2`, and `pace serve` on the same port as HTTP/1.1):
//! nghttp2's session API behind a safe wrapper ([`session`]), requests
//! written as HTTP/1.1 text turned into HTTP/2 header blocks
//! ([`request`]), the check before a run ([`check`]), and the memory
//! nghttp2 allocates per session ([`pool`]). The client's
//! exchanges are in `engine/http2.rs`, the server's in `serve/`.

pub mod check;
mod pool;
pub mod request;
pub mod session;

/// A header name as HTTP/1.1 usually writes it (`content-type` becomes
/// `Content-Type`, as Go's `CanonicalHeaderKey` does): HTTP/2 sends names
/// in lower case, and scripts written for wrk look headers up by their
/// HTTP/1.1 names (`headers["X-Token"]`).
pub fn canonical_name(name: &[u8]) -> String {
    let mut upper = true;
    name.iter()
        .map(|&byte| {
            let c = if upper { byte.to_ascii_uppercase() } else { byte.to_ascii_lowercase() };
            upper = byte == b'-';
            char::from(c)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_their_http1_case() {
        assert_eq!(canonical_name(b"x-token"), "X-Token");
        assert_eq!(canonical_name(b"content-type"), "Content-Type");
        assert_eq!(canonical_name(b"www-authenticate"), "Www-Authenticate");
        assert_eq!(canonical_name(b"etag"), "Etag");
    }
}
