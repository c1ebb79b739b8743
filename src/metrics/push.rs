//! `--metrics-push URL`: the final figures sent once, after the report,
//! with Prometheus' remote-write protocol 1.0 (a protobuf `WriteRequest`,
//! snappy-compressed, in an HTTP POST), for runs a scrape would miss.
//!
//! Both encodings are small enough to write here rather than pull in two
//! crates: the `WriteRequest` is three nested messages of strings, a
//! double and a varint, and a snappy block may be all literals (valid
//! snappy that any decoder reads; the figures are a few tens of KB, sent
//! once). Plain `http://` only: the receiver is usually a Prometheus (or
//! an agent) in the same network; `user:password@` in the URL is sent as
//! Basic authorization.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::exposition::families;
use super::figures::Figures;
use crate::error::io_reason;
use crate::target::{Scheme, Target};

/// How long connecting, sending and waiting for the answer may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// `--metrics-push`'s URL: an `http://` one.
pub fn parse_url(text: &str) -> Result<Target, String> {
    let target = Target::parse(text).map_err(|e| e.to_string())?;
    if target.scheme != Scheme::Http || !target.scheme_name.eq_ignore_ascii_case("http") {
        return Err(format!(
            "'{text}' is not an http:// URL (remote write over TLS is not supported)"
        ));
    }
    Ok(target)
}

/// Sends `figures` to `target`, stamped now.
pub fn push(target: &Target, figures: &Figures) -> Result<(), String> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let body = snappy_literals(&write_request(figures, now.as_millis() as i64));
    let fail = |why: String| format!("cannot push the metrics to {}: {why}", shown(target));
    let status = post(target, &body).map_err(fail)?;
    if !(200..300).contains(&status.0) {
        return Err(fail(format!("the receiver answered {}", status.1)));
    }
    Ok(())
}

/// The URL without its credentials.
fn shown(target: &Target) -> String {
    match target.url.split_once('@') {
        Some((_, rest)) if target.userinfo.is_some() => format!("http://{rest}"),
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

/// POSTs `body` to `target`; its status code and status line.
fn post(target: &Target, body: &[u8]) -> Result<(u16, String), String> {
    let addrs = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {}", target.host, io_reason(&e)))?;
    let mut last = String::from("the host has no address");
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, TIMEOUT) {
            Ok(connected) => {
                stream = Some(connected);
                break;
            }
            Err(e) => last = io_reason(&e),
        }
    }
    let mut stream = stream.ok_or(last)?;
    let io = |e: std::io::Error| io_reason(&e);
    stream.set_read_timeout(Some(TIMEOUT)).map_err(io)?;
    stream.set_write_timeout(Some(TIMEOUT)).map_err(io)?;
    let authorization = target
        .basic_authorization()
        .map(|credentials| format!("Authorization: {credentials}\r\n"))
        .unwrap_or_default();
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
    stream.write_all(head.as_bytes()).map_err(io)?;
    stream.write_all(body).map_err(io)?;
    // The status line is all that is needed, and the first line of the
    // body for a refusal's reason.
    let mut answer = Vec::new();
    let _ = stream.take(64 * 1024).read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let status_line = text.lines().next().unwrap_or("").to_string();
    let status = status_line.split(' ').nth(1).and_then(|code| code.parse::<u16>().ok());
    let Some(status) = status.filter(|_| status_line.starts_with("HTTP/1.")) else {
        return Err(match answer.is_empty() {
            true => "the connection closed without an answer".into(),
            false => format!("not an HTTP answer: {status_line}"),
        });
    };
    let reason = text.split("\r\n\r\n").nth(1).and_then(|body| body.lines().next());
    let shown = match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(reason) => format!("{status_line} ({reason})"),
        None => status_line,
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
    fn only_plain_http_urls() {
        assert!(parse_url("http://127.0.0.1:9090/api/v1/write").is_ok());
        assert_eq!(
            parse_url("https://x/api/v1/write").unwrap_err(),
            "'https://x/api/v1/write' is not an http:// URL (remote write over TLS is not supported)"
        );
        assert!(parse_url("prom:9090").unwrap_err().starts_with("invalid URL"));
        let with_password = parse_url("http://u:secret@h:9090/w").unwrap();
        assert_eq!(shown(&with_password), "http://h:9090/w");
    }
}
