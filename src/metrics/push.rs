//! `--metrics-push URL`: the final figures sent once, after the report,
//! with Prometheus' remote-write protocol 1.0 (a protobuf `WriteRequest`,
//! snappy-compressed, in an HTTP POST), for runs a scrape would miss.
//!
//! Both encodings are small enough to write here rather than pull in two
//! crates: the `WriteRequest` is three nested messages of strings, a
//! double and a varint, and a snappy block may be all literals (valid
//! snappy that any decoder reads; the figures are a few tens of KB, sent
//! once).
//!
//! `http://` or `https://`. Over TLS the receiver is verified against the
//! system's trust store (`SSL_CERT_FILE`/`SSL_CERT_DIR` when set), with
//! the rustls client the run uses: `-k` and `--cacert` are the target's,
//! not the receiver's (a hosted receiver has a public certificate; an
//! internal one's CA goes in `SSL_CERT_FILE`), so a token is never sent to
//! a receiver nobody verified because the target has a self-signed
//! certificate. The receiver's credentials: `user:password@` in the URL
//! (Basic), or a bearer token read from a file
//! (`--metrics-push-token-file`, as Prometheus' own `bearer_token_file`:
//! a token on the command line shows in `ps`).
//!
//! The POST is one exchange of [`crate::blocking`]: one deadline for all
//! of it ([`TIMEOUT`]), the answer's head bounded, and a signal ends it.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::exposition::families;
use super::figures::Figures;
use crate::blocking::{self, Deadline, Ended, HeadError};
use crate::endpoint::Endpoint;
use crate::error::{io_reason, Error};
use crate::http::stream::Stream;
use crate::signals::Stop;
use crate::target::{Scheme, Target};
use crate::tls::{describe_handshake_error, TlsClient, TlsOptions};

/// How long connecting, sending and waiting for the answer may take, all
/// together.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The longest answer head read (a receiver's is a few hundred bytes).
const MAX_HEAD: usize = 16 * 1024;
/// How much of a refusal's body is read, for its reason.
const MAX_REASON: u64 = 1024;

/// `--metrics-push`'s URL: an `http://` or `https://` one.
pub fn parse_url(text: &str) -> Result<Target, String> {
    let target = Target::parse(text).map_err(|e| e.to_string())?;
    let scheme = target.scheme_name.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(format!("'{text}' is not an http:// or https:// URL"));
    }
    Ok(target)
}

/// A bearer token for the receiver (`--metrics-push-token-file`); never
/// shown.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(String);

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(...)")
    }
}

impl BearerToken {
    /// The token in `path`: its text without the whitespace around it (a
    /// file usually ends with a newline), visible ASCII only, since it
    /// goes into a header line. A file that cannot be read is
    /// `Error::Setup`; one that holds no token, `Error::Usage`.
    pub fn read(path: &Path) -> Result<BearerToken, Error> {
        let bytes = crate::files::read_bounded(path, crate::files::TOKEN)?;
        let wrong = |why: &str| {
            Error::Usage(format!("--metrics-push-token-file {}: {why}", path.display()))
        };
        let token = bytes.trim_ascii();
        if token.is_empty() {
            return Err(wrong("holds no token"));
        }
        if !token.iter().all(|b| b.is_ascii_graphic()) {
            return Err(wrong(
                "the token has characters a header cannot carry (it must be one word of \
                 visible ASCII, e.g. base64)",
            ));
        }
        Ok(BearerToken(String::from_utf8_lossy(token).into_owned()))
    }
}

/// Sends `figures` to `target`, stamped now, with `token` if given; a
/// signal heard by `stop` ends the push.
pub fn push(
    target: &Target,
    token: Option<&BearerToken>,
    figures: &Figures,
    stop: &Stop,
) -> Result<(), String> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let body = snappy_literals(&write_request(figures, now.as_millis() as i64));
    let fail = |why: String| format!("cannot push the metrics to {}: {why}", shown(target));
    let authorization = match token {
        Some(BearerToken(token)) => Some(format!("Bearer {token}")),
        None => target.basic_authorization(),
    };
    let status = post(target, authorization.as_deref(), &body, stop).map_err(fail)?;
    if !(200..300).contains(&status.0) {
        return Err(fail(format!("the receiver answered {}", status.1)));
    }
    Ok(())
}

/// The URL without its credentials.
fn shown(target: &Target) -> String {
    match target.url.split_once('@') {
        Some((_, rest)) if target.userinfo.is_some() => {
            format!("{}://{rest}", target.scheme_name)
        }
        _ => target.url.clone(),
    }
}

/// A remote-write `WriteRequest`: one time series a sample, each with
/// the labels `__name__`, `job="pace"`, `shard` and its own, sorted by
/// name as the protocol asks.
fn write_request(figures: &Figures, timestamp_ms: i64) -> Vec<u8> {
    let mut request = Vec::with_capacity(64 * 1024);
    for family in families(figures) {
        for sample in &family.samples {
            let mut labels: Vec<(&str, &str)> =
                vec![("__name__", &sample.name), ("job", "pace"), ("shard", &figures.shard)];
            labels.extend(sample.labels.iter().map(|(name, value)| (*name, value.as_str())));
            labels.sort();
            let mut series = Vec::with_capacity(256);
            for (name, value) in labels {
                let mut label = Vec::with_capacity(name.len() + value.len() + 4);
                field_bytes(&mut label, 1, name.as_bytes());
                field_bytes(&mut label, 2, value.as_bytes());
                field_bytes(&mut series, 1, &label);
            }
            let mut point = Vec::with_capacity(20);
            key(&mut point, 1, 1);
            point.extend_from_slice(&sample.value.to_le_bytes());
            key(&mut point, 2, 0);
            varint(&mut point, timestamp_ms as u64);
            field_bytes(&mut series, 2, &point);
            field_bytes(&mut request, 1, &series);
        }
    }
    request
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn key(out: &mut Vec<u8>, field: u64, wire_type: u64) {
    varint(out, field << 3 | wire_type);
}

/// A length-delimited field (strings, bytes, messages).
fn field_bytes(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    key(out, field, 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// `data` as a snappy block of literals: the length, then the bytes in
/// pieces of at most 64 KiB, each behind its literal tag.
fn snappy_literals(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 65536 * 3 + 16);
    varint(&mut out, data.len() as u64);
    for piece in data.chunks(1 << 16) {
        let n = piece.len() - 1;
        match n {
            0..60 => out.push((n as u8) << 2),
            60..256 => out.extend_from_slice(&[60 << 2, n as u8]),
            _ => out.extend_from_slice(&[61 << 2, n as u8, (n >> 8) as u8]),
        }
        out.extend_from_slice(piece);
    }
    out
}

/// POSTs `body` to `target` within [`TIMEOUT`], with an `Authorization`
/// value if given; the answer's status code and status line (with the
/// first line of its body, for a refusal). A signal heard by `stop` ends
/// it.
fn post(
    target: &Target,
    authorization: Option<&str>,
    body: &[u8],
    stop: &Stop,
) -> Result<(u16, String), String> {
    let deadline = &Deadline::after(TIMEOUT, stop);
    let failed = |e: io::Error| match blocking::ended(&e) {
        Some(Ended::TimedOut) => {
            format!("no answer within {}", crate::units::format_time_s(TIMEOUT.as_secs_f64()))
        }
        _ => describe_handshake_error(&e, None),
    };
    let socket = connect(target, deadline, stop)?;
    let authorization =
        authorization.map(|value| format!("Authorization: {value}\r\n")).unwrap_or_default();
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: pace/{}\r\n\
         Content-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\n\
         X-Prometheus-Remote-Write-Version: 0.1.0\r\n{authorization}Content-Length: {}\r\n\
         Connection: close\r\n\r\n",
        target.path,
        target.host_header(),
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    let request = [head.as_bytes(), body].concat();
    let plain = deadline.on(&socket);
    match target.scheme {
        Scheme::Http => exchange(plain, &request),
        Scheme::Https => {
            // The system's trust store, and HTTP/1.1 by ALPN.
            let tls = TlsClient::new(&target.host, &TlsOptions::default(), &[b"http/1.1"])
                .map_err(|e| e.to_string())?;
            exchange(rustls::StreamOwned::new(tls.session()?, plain), &request)
        }
    }
    .map_err(|e| match e {
        Exchange::Io(e) => failed(e),
        Exchange::Answer(why) => why,
    })
}

/// Why an exchange failed: an I/O error (the TLS handshake's included), or
/// an answer that is not HTTP, in words.
enum Exchange {
    Io(io::Error),
    Answer(String),
}

/// The first address of `target` that takes a connection within
/// `deadline` (`stop` ends the lookup).
fn connect(target: &Target, deadline: &Deadline, stop: &Stop) -> Result<Stream, String> {
    let addrs: Vec<SocketAddr> = crate::resolve::addresses(&target.host, target.port, stop)
        .map_err(|e| format!("cannot resolve {}: {}", target.host, io_reason(&e)))?;
    let mut last = String::from("the host has no address");
    for addr in addrs {
        match blocking::connect(&Endpoint::Tcp(addr), deadline) {
            Ok(socket) => return Ok(socket),
            Err(e) if blocking::ended(&e).is_some() => return Err(e.to_string()),
            Err(e) => last = io_reason(&e),
        }
    }
    Err(last)
}

/// Writes `request` on `stream` and reads the answer's status line (and
/// for a refusal the first line of its body).
fn exchange(mut stream: impl Read + Write, request: &[u8]) -> Result<(u16, String), Exchange> {
    stream.write_all(request).and_then(|()| stream.flush()).map_err(Exchange::Io)?;
    let head = match blocking::read_head(&mut stream, MAX_HEAD) {
        Ok(head) => head,
        Err(HeadError::Io(e)) => return Err(Exchange::Io(e)),
        Err(HeadError::TooLong) => {
            return Err(Exchange::Answer(format!(
                "the answer has no end of its head within {} KiB",
                MAX_HEAD / 1024
            )))
        }
        Err(HeadError::Closed(got)) if got.is_empty() => {
            return Err(Exchange::Answer("the connection closed without an answer".into()))
        }
        Err(HeadError::Closed(got)) => {
            return Err(Exchange::Answer(format!(
                "not an HTTP answer: {}",
                blocking::first_line(&got, 80)
            )))
        }
    };
    let status_line = blocking::first_line(&head, 200);
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut answer = httparse::Response::new(&mut headers);
    let (Ok(httparse::Status::Complete(_)), Some(status)) = (answer.parse(&head), answer.code)
    else {
        return Err(Exchange::Answer(format!("not an HTTP answer: {status_line}")));
    };
    if (200..300).contains(&status) {
        return Ok((status, status_line));
    }
    // The refusal's reason: the first line of its body (at most
    // Content-Length, or what comes before the receiver closes).
    let length = answer
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
        .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse::<u64>().ok())
        .unwrap_or(MAX_REASON);
    let mut body = Vec::new();
    let _ = stream.take(length.min(MAX_REASON)).read_to_end(&mut body);
    let reason = blocking::first_line(&body, 200);
    let shown = match reason.trim() {
        "" => status_line,
        reason => format!("{status_line} ({reason})"),
    };
    Ok((status, shown))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snappy_blocks_of_literals() {
        assert_eq!(snappy_literals(b"hello"), [5, 4 << 2, b'h', b'e', b'l', b'l', b'o']);
        let long = vec![7u8; 100];
        assert_eq!(snappy_literals(&long)[..3], [100, 60 << 2, 99]);
        let huge = vec![1u8; 70_000];
        let block = snappy_literals(&huge);
        // Length 70000 as a varint, then 65536 and 4464 bytes.
        assert_eq!(block[..3], [0xF0, 0xA2, 0x04]);
        assert_eq!(block[3..6], [61 << 2, 0xFF, 0xFF]);
        assert_eq!(block[6 + 65536..6 + 65536 + 3], [61 << 2, 0x6F, 0x11]);
        assert_eq!(block.len(), 3 + 3 + 65536 + 3 + 4464);
    }

    #[test]
    fn protobuf_fields() {
        let mut out = Vec::new();
        varint(&mut out, 300);
        assert_eq!(out, [0xAC, 0x02]);
        let mut out = Vec::new();
        field_bytes(&mut out, 1, b"ab");
        assert_eq!(out, [0x0A, 2, b'a', b'b']);
    }

    #[test]
    fn a_write_request_holds_every_sample_with_sorted_labels() {
        let figures = Figures::new("1/2".into(), None);
        let request = write_request(&figures, 1_700_000_000_000);
        // The first series: pace_requests_total, labels sorted, value 0.
        let mut expected = Vec::new();
        let mut series = Vec::new();
        for (name, value) in
            [("__name__", "pace_requests_total"), ("job", "pace"), ("shard", "1/2")]
        {
            let mut label = Vec::new();
            field_bytes(&mut label, 1, name.as_bytes());
            field_bytes(&mut label, 2, value.as_bytes());
            field_bytes(&mut series, 1, &label);
        }
        let mut point = vec![0x09];
        point.extend_from_slice(&0f64.to_le_bytes());
        point.push(0x10);
        varint(&mut point, 1_700_000_000_000);
        field_bytes(&mut series, 2, &point);
        field_bytes(&mut expected, 1, &series);
        assert_eq!(request[..expected.len()], expected[..]);
        // One series a sample.
        let samples: usize = families(&figures).iter().map(|f| f.samples.len()).sum();
        let series = count_series(&request);
        assert_eq!(series, samples);
    }

    /// The top-level fields of a WriteRequest (all field 1, messages).
    fn count_series(mut bytes: &[u8]) -> usize {
        let mut n = 0;
        while !bytes.is_empty() {
            assert_eq!(bytes[0], 0x0A);
            let (mut length, mut shift, mut i) = (0usize, 0, 1);
            loop {
                length |= usize::from(bytes[i] & 0x7F) << shift;
                shift += 7;
                i += 1;
                if bytes[i - 1] < 0x80 {
                    break;
                }
            }
            bytes = &bytes[i + length..];
            n += 1;
        }
        n
    }

    #[test]
    fn http_and_https_urls() {
        assert!(parse_url("http://127.0.0.1:9090/api/v1/write").is_ok());
        let tls = parse_url("https://x/api/v1/write").unwrap();
        assert_eq!((tls.scheme, tls.port), (Scheme::Https, 443));
        assert_eq!(
            parse_url("ws://x/w").unwrap_err(),
            "'ws://x/w' is not an http:// or https:// URL"
        );
        assert!(parse_url("prom:9090").unwrap_err().starts_with("invalid URL"));
        let with_password = parse_url("http://u:secret@h:9090/w").unwrap();
        assert_eq!(shown(&with_password), "http://h:9090/w");
        let with_password = parse_url("https://u:secret@h/w").unwrap();
        assert_eq!(shown(&with_password), "https://h/w");
    }

    #[test]
    fn a_token_file_holds_one_word() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let token = BearerToken::read(&file("ok", b"  eyJh.bGc+/_-=\n")).unwrap();
        assert_eq!(token, BearerToken("eyJh.bGc+/_-=".into()));
        assert_eq!(format!("{token:?}"), "BearerToken(...)");
        let usage = |path: &Path| match BearerToken::read(path) {
            Err(Error::Usage(message)) => message,
            other => panic!("{other:?}"),
        };
        let empty = file("empty", b"\n \n");
        assert_eq!(
            usage(&empty),
            format!("--metrics-push-token-file {}: holds no token", empty.display())
        );
        let injected = file("two-lines", b"abc\r\nX-Injected: 1\n");
        assert!(usage(&injected).ends_with(
            "the token has characters a header cannot carry (it \
             must be one word of visible ASCII, e.g. base64)"
        ));
        match BearerToken::read(Path::new("/dev/zero")) {
            Err(Error::Setup(message)) => assert_eq!(
                message,
                "cannot read --metrics-push-token-file /dev/zero: larger than 64 KiB, the most \
                 pace reads of such a file"
            ),
            other => panic!("{other:?}"),
        }
    }
}
