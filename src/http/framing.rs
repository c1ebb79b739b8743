//! What the header fields of a message say about where its body ends and
//! whether its connection stays open (RFC 9112 §6 and §9): one scanner for
//! the client reading responses, for the request counter and for the
//! built-in server reading requests, so that all three read a header the
//! same way.

/// What the headers of a message say about its framing and its connection.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Framing {
    /// The Content-Length, once every occurrence agreed on it.
    pub content_length: Option<u64>,
    /// What `Transfer-Encoding` says.
    pub transfer_coding: TransferCoding,
    /// `Connection` lists `close`.
    pub close: bool,
    /// `Connection` lists `keep-alive`.
    pub keep_alive: bool,
}

/// The transfer codings of a message, as far as framing cares.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum TransferCoding {
    /// No Transfer-Encoding header.
    #[default]
    Absent,
    /// `chunked` alone.
    Chunked,
    /// Other codings (`gzip, chunked`), then `chunked`: chunked framing
    /// around a body that is itself encoded.
    ChunkedAfterOthers,
    /// The last coding is not `chunked` (or none is named), so nothing says
    /// where the body ends: a response runs until the connection closes, a
    /// request is invalid.
    NotChunked,
}

/// The index of a header whose Content-Length is not a number or disagrees
/// with an earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadContentLength(pub usize);

/// How the body of a request is delimited (RFC 9112 §6.3; a request without
/// framing headers has no body).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestBody {
    /// This many bytes (0: no body).
    Length(u64),
    Chunked,
}

/// Why the framing headers of a request leave its end unknown or ambiguous.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadRequestFraming {
    /// A Transfer-Encoding whose last coding is not `chunked`.
    NotChunked,
    /// Both Transfer-Encoding and Content-Length: the smuggling case of
    /// RFC 9112 §6.3, rejected rather than resolved.
    LengthAndEncoding,
}

impl Framing {
    /// Reads the framing headers of one parsed header block. Names are
    /// case-insensitive; repeated headers combine as lists (RFC 9110 §5.3).
    pub fn scan(headers: &[httparse::Header<'_>]) -> Result<Framing, BadContentLength> {
        let mut framing = Framing::default();
        let mut codings = Codings::default();
        for (index, header) in headers.iter().enumerate() {
            let name = header.name;
            if name.eq_ignore_ascii_case("content-length") {
                let length = content_length(header.value)
                    .filter(|length| framing.content_length.is_none_or(|known| known == *length))
                    .ok_or(BadContentLength(index))?;
                framing.content_length = Some(length);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                codings.add(header.value);
            } else if name.eq_ignore_ascii_case("connection") {
                for option in list_items(header.value) {
                    framing.close |= option.eq_ignore_ascii_case(b"close");
                    framing.keep_alive |= option.eq_ignore_ascii_case(b"keep-alive");
                }
            }
        }
        framing.transfer_coding = codings.meaning();
        Ok(framing)
    }

    /// The body is chunked: `chunked` is the last transfer coding.
    pub fn chunked(&self) -> bool {
        matches!(self.transfer_coding, TransferCoding::Chunked | TransferCoding::ChunkedAfterOthers)
    }

    /// How the body of a request with these headers is delimited.
    pub fn request_body(&self) -> Result<RequestBody, BadRequestFraming> {
        match (self.transfer_coding, self.content_length) {
            (TransferCoding::Absent, length) => Ok(RequestBody::Length(length.unwrap_or(0))),
            (TransferCoding::NotChunked, _) => Err(BadRequestFraming::NotChunked),
            (_, Some(_)) => Err(BadRequestFraming::LengthAndEncoding),
            (_, None) => Ok(RequestBody::Chunked),
        }
    }
}

/// The Transfer-Encoding list so far, over all its header fields.
#[derive(Default)]
struct Codings {
    present: bool,
    count: usize,
    last_is_chunked: bool,
}

impl Codings {
    fn add(&mut self, value: &[u8]) {
        self.present = true;
        for coding in list_items(value) {
            self.count += 1;
            self.last_is_chunked = coding.eq_ignore_ascii_case(b"chunked");
        }
    }

    fn meaning(&self) -> TransferCoding {
        match (self.present, self.last_is_chunked, self.count) {
            (false, _, _) => TransferCoding::Absent,
            (true, false, _) => TransferCoding::NotChunked,
            (true, true, 1) => TransferCoding::Chunked,
            (true, true, _) => TransferCoding::ChunkedAfterOthers,
        }
    }
}

/// The non-empty, trimmed items of a comma-separated header value.
fn list_items(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&byte| byte == b',').map(<[u8]>::trim_ascii).filter(|item| !item.is_empty())
}

/// A Content-Length value: one decimal number, or a list repeating the same
/// number (`42, 42`, which RFC 9110 §8.6 allows a recipient to accept).
fn content_length(value: &[u8]) -> Option<u64> {
    // Nearly always a single number: no need to split.
    if let Some(length) = decimal(value.trim_ascii()) {
        return Some(length);
    }
    let mut length = None;
    for item in value.split(|&byte| byte == b',') {
        let item = decimal(item.trim_ascii())?;
        if length.is_some_and(|known| known != item) {
            return None;
        }
        length = Some(item);
    }
    length
}

/// An unsigned decimal number without sign or spaces that fits in a u64.
pub fn decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |number, &digit| {
        if !digit.is_ascii_digit() {
            return None;
        }
        number.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header<'a>(name: &'a str, value: &'a str) -> httparse::Header<'a> {
        httparse::Header { name, value: value.as_bytes() }
    }

    fn scan(headers: &[(&str, &str)]) -> Result<Framing, BadContentLength> {
        let headers: Vec<_> = headers.iter().map(|(name, value)| header(name, value)).collect();
        Framing::scan(&headers)
    }

    #[test]
    fn decimal_accepts_digits_up_to_u64_max() {
        assert_eq!(decimal(b"0"), Some(0));
        assert_eq!(decimal(b"007"), Some(7));
        assert_eq!(decimal(b"18446744073709551615"), Some(u64::MAX));
        for bad in [&b""[..], b"18446744073709551616", b"99999999999999999999", b"1a", b" 1", b"+1"]
        {
            assert_eq!(decimal(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn content_length_accepts_numbers_and_repeated_lists() {
        assert_eq!(content_length(b"0"), Some(0));
        assert_eq!(content_length(b" 42 "), Some(42));
        assert_eq!(content_length(b"42, 42,42"), Some(42));
        assert_eq!(content_length(b"18446744073709551615"), Some(u64::MAX));
    }

    #[test]
    fn content_length_rejects_garbage_conflicts_and_overflow() {
        for bad in
            [&b""[..], b"-1", b"+1", b"1 2", b"0x10", b"42, 43", b"42,", b"18446744073709551616"]
        {
            assert_eq!(content_length(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn framing_reads_lengths_codings_and_connection_options() {
        let framing = scan(&[
            ("content-LENGTH", "7"),
            ("Content-Length", "7"),
            ("Transfer-Encoding", "gzip"),
            ("transfer-encoding", "Chunked"),
            ("Connection", "Upgrade, CLOSE"),
        ])
        .unwrap();
        assert_eq!(
            framing,
            Framing {
                content_length: Some(7),
                transfer_coding: TransferCoding::ChunkedAfterOthers,
                close: true,
                keep_alive: false,
            }
        );
        assert!(framing.chunked());
        let framing = scan(&[("Connection", "keep-alive")]).unwrap();
        assert!(framing.keep_alive && !framing.close);
    }

    #[test]
    fn transfer_codings() {
        let coding = |values: &[&str]| {
            let headers: Vec<_> =
                values.iter().map(|value| ("Transfer-Encoding", *value)).collect();
            scan(&headers).unwrap().transfer_coding
        };
        assert_eq!(scan(&[]).unwrap().transfer_coding, TransferCoding::Absent);
        assert_eq!(coding(&["chunked"]), TransferCoding::Chunked);
        assert_eq!(coding(&[" CHUNKED ,"]), TransferCoding::Chunked);
        assert_eq!(coding(&["gzip, chunked"]), TransferCoding::ChunkedAfterOthers);
        assert_eq!(coding(&["gzip", "chunked"]), TransferCoding::ChunkedAfterOthers);
        assert_eq!(coding(&["chunked", "chunked"]), TransferCoding::ChunkedAfterOthers);
        assert_eq!(coding(&["chunked, gzip"]), TransferCoding::NotChunked);
        assert_eq!(coding(&["chunked", "gzip"]), TransferCoding::NotChunked);
        assert_eq!(coding(&[""]), TransferCoding::NotChunked);
        assert_eq!(coding(&["chunkedx"]), TransferCoding::NotChunked);
    }

    #[test]
    fn framing_rejects_conflicting_content_lengths() {
        let headers = [("Content-Length", "1"), ("X", "y"), ("Content-Length", "2")];
        assert_eq!(scan(&headers), Err(BadContentLength(2)));
        assert_eq!(scan(&[("Content-Length", "42, 43")]), Err(BadContentLength(0)));
        assert_eq!(scan(&[("Content-Length", "42, 42")]).unwrap().content_length, Some(42));
    }

    #[test]
    fn request_bodies() {
        let body = |headers: &[(&str, &str)]| scan(headers).unwrap().request_body();
        assert_eq!(body(&[]), Ok(RequestBody::Length(0)));
        assert_eq!(body(&[("Content-Length", "5")]), Ok(RequestBody::Length(5)));
        assert_eq!(body(&[("Transfer-Encoding", "chunked")]), Ok(RequestBody::Chunked));
        assert_eq!(body(&[("Transfer-Encoding", "gzip, chunked")]), Ok(RequestBody::Chunked));
        assert_eq!(body(&[("Transfer-Encoding", "gzip")]), Err(BadRequestFraming::NotChunked));
        assert_eq!(
            body(&[("Transfer-Encoding", "chunked"), ("Content-Length", "5")]),
            Err(BadRequestFraming::LengthAndEncoding)
        );
    }
}
