//! The HTTP/2 check before a run: one blocking exchange that sends the
//! client's connection preface and reads the server's first SETTINGS
//! frame. A server that does not speak HTTP/2, or allows no streams, is
//! reported once, in words, before the run; how many streams it allows is
//! what the run's header says it uses.

use std::io::{self, Read, Write};

use crate::blocking::{self, Deadline, Ended};
use crate::endpoint::Endpoint;
use crate::http::stream::Stream;
use crate::units::format_time_us;

/// The client connection preface, then an empty SETTINGS frame.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

const FRAME_HEADER: usize = 9;
const SETTINGS: u8 = 0x4;
const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
/// A SETTINGS frame must fit the initial SETTINGS_MAX_FRAME_SIZE (RFC 9113
/// 4.2); a longer one is read no further.
const MAX_SETTINGS_PAYLOAD: usize = 16_384;

/// What the server's first SETTINGS frame says that a run depends on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerSettings {
    /// SETTINGS_MAX_CONCURRENT_STREAMS, when the server sets it (else
    /// there is no limit).
    pub max_concurrent_streams: Option<u32>,
}

/// Checks, with one blocking connection to `endpoint`, that the server
/// speaks HTTP/2 without TLS (h2c with prior knowledge: pace sends no
/// HTTP/1.1 Upgrade), and returns its settings. The whole exchange is
/// within `deadline`.
pub fn prior_knowledge(endpoint: &Endpoint, deadline: &Deadline) -> Result<ServerSettings, String> {
    let socket = blocking::connect(endpoint, deadline).map_err(|e| failed(&e, deadline))?;
    prior_knowledge_on(socket, deadline)
}

/// [`prior_knowledge`] on `socket` (a proxy's tunnel to the server).
pub fn prior_knowledge_on(socket: Stream, deadline: &Deadline) -> Result<ServerSettings, String> {
    server_settings(&mut deadline.on(&socket), deadline).map_err(|failure| match failure {
        Failure::NotHttp2(why) => format!("{why}: it does not speak h2c (HTTP/2 without TLS)"),
        Failure::Exchange(why) => why,
    })
}

/// Why the check failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The server answered the preface with something else than SETTINGS
    /// (in words).
    NotHttp2(String),
    /// The exchange failed (in words): a timeout, a reset, a cut frame.
    Exchange(String),
}

/// Sends the preface on `exchange` (a connection that speaks HTTP/2: h2c,
/// or TLS that chose h2) and reads the server's SETTINGS; `deadline` is
/// the exchange's, for the words of a timeout.
pub fn server_settings(
    exchange: &mut (impl Read + Write + ?Sized),
    deadline: &Deadline,
) -> Result<ServerSettings, Failure> {
    let failed = |e: io::Error| Failure::Exchange(failed(&e, deadline));
    exchange.write_all(PREFACE).and_then(|()| exchange.flush()).map_err(failed)?;
    let mut answer = [0u8; 80];
    let mut got = 0;
    // A frame header is 9 bytes; an HTTP/1.1 status line is longer (and
    // usually comes whole, for the message).
    while got < FRAME_HEADER {
        match exchange.read(&mut answer[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(failed(e)),
        }
    }
    let answer = &answer[..got];
    if answer.len() < FRAME_HEADER || answer[3] != SETTINGS {
        return Err(Failure::NotHttp2(not_http2(answer)));
    }
    let length =
        usize::from(answer[0]) << 16 | usize::from(answer[1]) << 8 | usize::from(answer[2]);
    let mut payload = answer[FRAME_HEADER..].to_vec();
    payload.truncate(length);
    let wanted = length.min(MAX_SETTINGS_PAYLOAD);
    if payload.len() < wanted {
        let mut rest = vec![0; wanted - payload.len()];
        exchange.read_exact(&mut rest).map_err(failed)?;
        payload.extend_from_slice(&rest);
    }
    Ok(parse_settings(&payload))
}

/// The settings of a SETTINGS payload (6 bytes each; the last one of an
/// identifier counts, RFC 9113 6.5).
fn parse_settings(payload: &[u8]) -> ServerSettings {
    let mut settings = ServerSettings::default();
    for entry in payload.chunks_exact(6) {
        let id = u16::from_be_bytes([entry[0], entry[1]]);
        let value = u32::from_be_bytes([entry[2], entry[3], entry[4], entry[5]]);
        if id == SETTINGS_MAX_CONCURRENT_STREAMS {
            settings.max_concurrent_streams = Some(value);
        }
    }
    settings
}

/// Why an answer to the preface is not HTTP/2, in words.
fn not_http2(answer: &[u8]) -> String {
    if answer.starts_with(b"HTTP/") {
        format!(
            "it answered the HTTP/2 connection preface in HTTP/1.x ('{}')",
            blocking::first_line(answer, 80)
        )
    } else if answer.is_empty() {
        "it closed the connection on the HTTP/2 connection preface".to_string()
    } else {
        "it did not answer the HTTP/2 connection preface with SETTINGS".to_string()
    }
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
    use std::io::Cursor;
    use std::time::Duration;

    use super::*;
    use crate::signals::Stop;

    /// A server's side of the exchange: what it sends; what pace writes is
    /// kept apart.
    struct Scripted {
        answer: Cursor<Vec<u8>>,
        written: Vec<u8>,
    }

    impl Read for Scripted {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.answer.read(buf)
        }
    }

    impl Write for Scripted {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.written.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn settings_frame(entries: &[(u16, u32)]) -> Vec<u8> {
        let length = entries.len() * 6;
        let mut frame = vec![0, (length >> 8) as u8, length as u8, SETTINGS, 0, 0, 0, 0, 0];
        for &(id, value) in entries {
            frame.extend_from_slice(&id.to_be_bytes());
            frame.extend_from_slice(&value.to_be_bytes());
        }
        frame
    }

    fn check(answer: Vec<u8>) -> Result<ServerSettings, Failure> {
        let mut server = Scripted { answer: Cursor::new(answer), written: Vec::new() };
        let deadline = Deadline::after(Duration::from_secs(1), &Stop::never());
        let settings = server_settings(&mut server, &deadline);
        assert_eq!(server.written, PREFACE);
        settings
    }

    #[test]
    fn the_streams_a_server_allows_are_read_from_its_settings() {
        // Settings of other kinds around it; the last value counts.
        let frame = settings_frame(&[(0x4, 65_535), (0x3, 250), (0x5, 16_384), (0x3, 100)]);
        assert_eq!(check(frame).unwrap().max_concurrent_streams, Some(100));
        assert_eq!(check(settings_frame(&[(0x3, 0)])).unwrap().max_concurrent_streams, Some(0));
        // No limit set, and frames that follow the SETTINGS are not read.
        let mut frames = settings_frame(&[]);
        frames.extend_from_slice(&[0, 0, 8, 6, 0, 0, 0, 0, 0]);
        assert_eq!(check(frames).unwrap(), ServerSettings::default());
    }

    #[test]
    fn a_settings_frame_that_comes_in_pieces_is_read_whole() {
        let entries: Vec<(u16, u32)> = (0..20).map(|i| (0x10 + i, 1)).chain([(0x3, 7)]).collect();
        assert_eq!(check(settings_frame(&entries)).unwrap().max_concurrent_streams, Some(7));
    }

    #[test]
    fn servers_that_do_not_speak_http2_are_said_in_words() {
        let not_http2 = |answer: &[u8]| match check(answer.to_vec()) {
            Err(Failure::NotHttp2(why)) => why,
            other => panic!("{other:?}"),
        };
        let http1 = not_http2(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        assert!(http1.contains("in HTTP/1.x ('HTTP/1.1 400 Bad Request')"), "{http1}");
        assert!(not_http2(b"").contains("closed the connection"));
        let ping = not_http2(&[0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3]);
        assert!(ping.contains("did not answer the HTTP/2 connection preface with SETTINGS"));
        // A SETTINGS frame cut short.
        let mut cut = settings_frame(&[(0x3, 1), (0x4, 1)]);
        cut.truncate(14);
        assert!(matches!(check(cut), Err(Failure::Exchange(_))));
    }
}
