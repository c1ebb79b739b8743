//! HTTP/2 (`--http2`, and `pace serve` on the same port as HTTP/1.1):
//! nghttp2's session API behind a safe wrapper ([`session`]), and requests
//! written as HTTP/1.1 text turned into HTTP/2 header blocks
//! ([`request`]). The client's exchanges are in `engine/http2.rs`, the
//! server's in `serve/`.

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

use std::io::{self, Read, Write};

use crate::blocking::{self, Deadline, Ended};
use crate::endpoint::Endpoint;
use crate::http::stream::Stream;
use crate::units::format_time_us;

/// The client connection preface, then an empty SETTINGS frame.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

/// Checks, with one blocking connection to `endpoint`, that the server speaks
/// HTTP/2 without TLS (h2c with prior knowledge: pace sends no HTTP/1.1
/// Upgrade): it must answer the preface with a SETTINGS frame. A server
/// that does not is reported once, in words, before the run. The whole
/// exchange is within `deadline`.
pub fn check_prior_knowledge(endpoint: &Endpoint, deadline: &Deadline) -> Result<(), String> {
    let socket = blocking::connect(endpoint, deadline).map_err(|e| failed(&e, deadline))?;
    check_prior_knowledge_on(socket, deadline)
}

/// [`check_prior_knowledge`] on `socket` (a proxy's tunnel to the server).
pub fn check_prior_knowledge_on(socket: Stream, deadline: &Deadline) -> Result<(), String> {
    let mut exchange = deadline.on(&socket);
    exchange.write_all(PREFACE).map_err(|e| failed(&e, deadline))?;
    let mut answer = [0u8; 80];
    let mut got = 0;
    // A frame header is 9 bytes; an HTTP/1.1 status line is longer (and
    // usually comes whole, for the message).
    while got < 9 {
        match exchange.read(&mut answer[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(failed(&e, deadline)),
        }
    }
    let answer = &answer[..got];
    const SETTINGS: u8 = 4;
    if answer.len() >= 9 && answer[3] == SETTINGS {
        return Ok(());
    }
    Err(if answer.starts_with(b"HTTP/") {
        format!(
            "it answered the HTTP/2 connection preface in HTTP/1.x ('{}'): it does not speak h2c \
             (HTTP/2 without TLS)",
            blocking::first_line(answer, 80)
        )
    } else if answer.is_empty() {
        "it closed the connection on the HTTP/2 connection preface: it does not speak h2c \
         (HTTP/2 without TLS)"
            .to_string()
    } else {
        "it did not answer the HTTP/2 connection preface with SETTINGS: it does not speak h2c \
         (HTTP/2 without TLS)"
            .to_string()
    })
}

/// A failed exchange in words.
fn failed(error: &io::Error, deadline: &Deadline) -> String {
    match blocking::ended(error) {
        Some(Ended::TimedOut) => format!(
            "no answer to the HTTP/2 connection preface within {}",
            format_time_us(deadline.within().as_micros() as f64)
        ),
        _ => crate::error::io_reason(error),
    }
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
