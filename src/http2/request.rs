//! Requests written as HTTP/1.1 text (what `wrk.format`, `-H`, `--body`
//! and `--targets` make, and what a script's `request()` returns) as
//! HTTP/2 sends them: a header block and a body per request, several
//! requests in one string being several streams.
//!
//! RFC 9113 section 8.2 and 8.3: the request line becomes the
//! pseudo-headers `:method`, `:scheme`, `:authority` (the `Host` header, or
//! the URL's authority) and `:path`; names are lower-cased; the
//! connection-specific fields (`Connection` and those it names,
//! `Keep-Alive`, `Proxy-Connection`, `Transfer-Encoding`, `Upgrade`, and
//! `TE` other than `trailers`) are dropped, a chunked body is sent decoded.

use std::sync::Arc;

use crate::http::chunked::{ChunkedDecoder, Decoded};
use crate::http::framing::{Framing, RequestBody};
#[cfg(test)]
use crate::http::request::{parse_requests, RequestError};
use crate::request::Request;

/// One request as HTTP/2 sends it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request2 {
    /// Header fields, pseudo-headers first, names lower-cased.
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
    /// The body (None: the HEADERS frame ends the stream).
    pub body: Option<Arc<[u8]>>,
}

impl Request2 {
    /// The fields as slices, for [`super::session::Session::submit_request`].
    pub fn field_slices(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields.iter().map(|(name, value)| (&name[..], &value[..]))
    }
}

/// Headers that belong to one HTTP/1.1 connection and are not sent in
/// HTTP/2 (RFC 9113 8.2.2).
const CONNECTION_SPECIFIC: [&str; 5] =
    ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"];

/// The requests of `batch` (HTTP/1.1 text, one or more requests) for a
/// target of `scheme` (`http` or `https`) whose authority is `authority`
/// (used when a request has no `Host`). A batch that is not valid HTTP/1.1
/// gets the error `count_requests` gives.
#[cfg(test)]
pub fn convert(batch: &[u8], scheme: &str, authority: &str) -> Result<Vec<Request2>, RequestError> {
    let requests = parse_requests(batch)?;
    Ok(requests.iter().map(|request| of(request, scheme, authority)).collect())
}

/// `request` as HTTP/2 sends it, to a target of `scheme` whose authority
/// is `authority` when the request names none (no `Host`, not an absolute
/// target).
pub fn of(request: &Request, scheme: &str, authority: &str) -> Request2 {
    // An absolute-form target names its own authority.
    let (target_authority, path) = split_absolute(&request.target);
    let authority = match (target_authority, request.field("host")) {
        (Some(from_target), _) => from_target.as_bytes(),
        (None, Some(host)) => host,
        (None, None) => authority.as_bytes(),
    };
    let mut fields: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (b":method".to_vec(), request.method.as_bytes().to_vec()),
        (b":scheme".to_vec(), scheme.as_bytes().to_vec()),
        (b":authority".to_vec(), authority.to_vec()),
        (b":path".to_vec(), path.as_bytes().to_vec()),
    ];
    let headers: Vec<httparse::Header<'_>> =
        (request.fields.iter()).map(|(name, value)| httparse::Header { name, value }).collect();
    let named_by_connection = connection_tokens(&headers);
    for header in &headers {
        let name = header.name.to_ascii_lowercase();
        let dropped = name == "host"
            || CONNECTION_SPECIFIC.contains(&name.as_str())
            || named_by_connection.contains(&name)
            || (name == "te" && !header.value.eq_ignore_ascii_case(b"trailers"));
        if !dropped {
            fields.push((name.into_bytes(), header.value.to_vec()));
        }
    }
    let raw = request.body.as_deref().unwrap_or_default();
    let body = if request.body.is_some() && !framed(&headers) {
        // No framing of the user's: HTTP/1.1 sends the body with its
        // Content-Length, and so does HTTP/2.
        fields.push((b"content-length".to_vec(), raw.len().to_string().into_bytes()));
        (!raw.is_empty()).then(|| Arc::from(raw))
    } else {
        let framing = Framing::scan(&headers).ok().and_then(|f| f.request_body().ok());
        body(raw, framing).0
    };
    Request2 { fields, body }
}

/// The fields frame the body themselves (a `Content-Length` or a
/// `Transfer-Encoding`).
fn framed(headers: &[httparse::Header<'_>]) -> bool {
    headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("content-length")
            || h.name.eq_ignore_ascii_case("transfer-encoding")
    })
}

/// `http://host:port/path` as (`host:port`, `/path`); an origin-form
/// target as (None, itself).
fn split_absolute(target: &str) -> (Option<&str>, &str) {
    let Some(rest) = target.strip_prefix("http://").or_else(|| target.strip_prefix("https://"))
    else {
        return (None, target);
    };
    match rest.find(['/', '?']) {
        Some(at) if rest.as_bytes()[at] == b'/' => (Some(&rest[..at]), &rest[at..]),
        Some(at) => (Some(&rest[..at]), "/"),
        None => (Some(rest), "/"),
    }
}

/// The lower-cased field names a `Connection` header lists.
fn connection_tokens(headers: &[httparse::Header<'_>]) -> Vec<String> {
    headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("connection"))
        .flat_map(|h| {
            String::from_utf8_lossy(h.value)
                .split(',')
                .map(str::trim)
                .map(str::to_ascii_lowercase)
                .collect::<Vec<_>>()
        })
        .filter(|token| !token.is_empty())
        .collect()
}

/// The body at the start of `rest` as its framing says (decoded when
/// chunked), and how many bytes of `rest` it took.
fn body(rest: &[u8], framing: Option<RequestBody>) -> (Option<Arc<[u8]>>, usize) {
    match framing {
        Some(RequestBody::Length(0)) | None => (None, 0),
        Some(RequestBody::Length(length)) => {
            let length = usize::try_from(length).unwrap_or(usize::MAX).min(rest.len());
            (Some(Arc::from(&rest[..length])), length)
        }
        Some(RequestBody::Chunked) => {
            let mut decoded = Vec::new();
            match ChunkedDecoder::new().decode(rest, &mut decoded) {
                Ok(Decoded { consumed, .. }) => {
                    let body = (!decoded.is_empty()).then(|| Arc::from(decoded));
                    (body, consumed)
                }
                Err(_) => (None, rest.len()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(request: &Request2) -> Vec<(String, String)> {
        request
            .fields
            .iter()
            .map(|(n, v)| (String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into()))
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_request_line_and_host_become_pseudo_headers() {
        let text = b"POST /api?x=1 HTTP/1.1\r\nHost: example.com:8080\r\nContent-Type: a/b\r\n\
                     Content-Length: 5\r\n\r\nhello";
        let requests = convert(text, "https", "ignored").unwrap();
        assert_eq!(requests.len(), 1);
        assert_eq!(
            fields(&requests[0]),
            pairs(&[
                (":method", "POST"),
                (":scheme", "https"),
                (":authority", "example.com:8080"),
                (":path", "/api?x=1"),
                ("content-type", "a/b"),
                ("content-length", "5"),
            ])
        );
        assert_eq!(requests[0].body.as_deref(), Some(&b"hello"[..]));
    }

    #[test]
    fn connection_specific_fields_are_dropped() {
        let text = b"GET / HTTP/1.1\r\nConnection: keep-alive, X-Hop\r\nKeep-Alive: 5\r\n\
                     X-Hop: 1\r\nUpgrade: h2c\r\nTE: gzip\r\nProxy-Connection: x\r\nX-Kept: 2\r\n\r\n";
        let requests = convert(text, "http", "h:1").unwrap();
        assert_eq!(
            fields(&requests[0]),
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":authority", "h:1"),
                (":path", "/"),
                ("x-kept", "2"),
            ])
        );
        assert_eq!(requests[0].body, None);
        let te = convert(b"GET / HTTP/1.1\r\nTE: trailers\r\n\r\n", "http", "h").unwrap();
        assert_eq!(fields(&te[0])[4], ("te".into(), "trailers".into()));
    }

    #[test]
    fn several_requests_are_several_streams() {
        let text = b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n\r\nHEAD /b HTTP/1.1\r\nHost: h\r\n\r\n\
                     POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        let requests = convert(text, "http", "h").unwrap();
        let paths: Vec<String> = requests.iter().map(|r| fields(r)[3].1.clone()).collect();
        assert_eq!(paths, ["/a", "/b", "/c"]);
        assert_eq!(fields(&requests[1])[0].1, "HEAD");
        // Chunked: the body is sent decoded, without Transfer-Encoding.
        assert_eq!(requests[2].body.as_deref(), Some(&b"abc"[..]));
        assert!(!fields(&requests[2]).iter().any(|(n, _)| n == "transfer-encoding"));
    }

    #[test]
    fn an_absolute_target_gives_the_authority() {
        let requests =
            convert(b"GET http://other:81/x HTTP/1.1\r\nHost: h\r\n\r\n", "http", "h").unwrap();
        assert_eq!(
            fields(&requests[0])[2..4],
            pairs(&[(":authority", "other:81"), (":path", "/x")])
        );
    }

    #[test]
    fn invalid_text_is_the_http1_error() {
        let error = convert(b"GET / HTTP/1.1\r\nHost", "http", "h").unwrap_err();
        assert_eq!(error.to_string(), "incomplete request at 2:5");
    }
}
