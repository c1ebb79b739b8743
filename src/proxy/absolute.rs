//! Plain-HTTP requests through a forward proxy: the request target in
//! absolute form (`GET http://host:port/path HTTP/1.1`, RFC 9112 3.2.2),
//! and the proxy's credentials in a `Proxy-Authorization` header right
//! after the request line (unless the request has one of its own). Every
//! request of a pipelined batch is rewritten. A target already in absolute
//! form (or `*`) stays as it is.
//!
//! Done once per distinct request, never per send: once per run for the
//! requests of the command line and the targets file, once per request a
//! script's `request()` returns ([`AbsoluteForm::of`] keeps the last one).

use std::sync::Arc;

use crate::http::request::{request_spans, RequestError};
use crate::request::Request;
use crate::target::Target;

/// The rewriting of the requests to one origin (and, for a script
/// thread, its last request).
#[derive(Clone, Debug)]
pub struct AbsoluteForm {
    /// `http://host[:port]`, as the target's `Host` header names it.
    origin: String,
    /// `Basic ...`, when the proxy URL has credentials.
    authorization: Option<String>,
    last: Option<Rewritten>,
}

/// The last request rewritten, and what it became.
#[derive(Clone, Debug)]
struct Rewritten {
    original: Arc<[u8]>,
    rewritten: Arc<[u8]>,
}

impl AbsoluteForm {
    /// For requests to `target`'s origin.
    pub fn new(target: &Target, authorization: Option<String>) -> AbsoluteForm {
        let origin = format!("http://{}", target.host_header());
        AbsoluteForm { origin, authorization, last: None }
    }

    /// `request` as the proxy gets it: its target in absolute form (unless
    /// it is already, or `*`), and the proxy's credentials first among its
    /// fields (unless it has its own), as [`AbsoluteForm::rewrite`] writes
    /// the bytes.
    pub fn apply(&self, request: &mut Request) {
        if request.target.starts_with('/') {
            request.target.insert_str(0, &self.origin);
        }
        if let Some(authorization) =
            self.authorization.as_ref().filter(|_| !request.has_field("proxy-authorization"))
        {
            let field = ("Proxy-Authorization".to_string(), authorization.clone().into_bytes());
            request.fields.insert(0, field);
        }
    }

    /// `bytes` as the proxy gets them.
    pub fn rewrite(&self, bytes: &[u8]) -> Result<Vec<u8>, RequestError> {
        rewrite(bytes, &self.origin, self.authorization.as_deref())
    }

    /// [`AbsoluteForm::rewrite`] for a script's request: the same request
    /// as the last one (a script returning a request it made once) is not
    /// rewritten again.
    pub fn of(&mut self, bytes: Arc<[u8]>) -> Result<Arc<[u8]>, RequestError> {
        if let Some(last) = &self.last {
            if Arc::ptr_eq(&last.original, &bytes) || *last.original == *bytes {
                return Ok(last.rewritten.clone());
            }
        }
        let rewritten: Arc<[u8]> = self.rewrite(&bytes)?.into();
        self.last = Some(Rewritten { original: bytes, rewritten: rewritten.clone() });
        Ok(rewritten)
    }
}

fn rewrite(
    bytes: &[u8],
    origin: &str,
    authorization: Option<&str>,
) -> Result<Vec<u8>, RequestError> {
    let extra = origin.len() + authorization.map_or(0, |a| a.len() + 24);
    let spans = request_spans(bytes)?;
    let mut out = Vec::with_capacity(bytes.len() + spans.len() * extra);
    let mut copied = 0;
    for span in spans {
        out.extend_from_slice(&bytes[copied..span.start]);
        rewrite_one(&bytes[span.clone()], origin, authorization, &mut out);
        copied = span.end;
    }
    out.extend_from_slice(&bytes[copied..]);
    Ok(out)
}

/// One complete, valid request (its request line is `METHOD SP target SP
/// version`, ended by LF or CRLF).
fn rewrite_one(request: &[u8], origin: &str, authorization: Option<&str>, out: &mut Vec<u8>) {
    let line_end = request.iter().position(|&b| b == b'\n').unwrap_or(request.len());
    let line = &request[..line_end];
    let target_start = line.iter().position(|&b| b == b' ').map_or(0, |space| space + 1);
    out.extend_from_slice(&request[..target_start]);
    if request.get(target_start) == Some(&b'/') {
        out.extend_from_slice(origin.as_bytes());
    }
    let after_line = (line_end + 1).min(request.len());
    out.extend_from_slice(&request[target_start..after_line]);
    if let Some(authorization) = authorization.filter(|_| !has_proxy_authorization(request)) {
        for part in ["Proxy-Authorization: ", authorization, "\r\n"] {
            out.extend_from_slice(part.as_bytes());
        }
    }
    out.extend_from_slice(&request[after_line..]);
}

fn has_proxy_authorization(request: &[u8]) -> bool {
    let mut headers = [httparse::EMPTY_HEADER; crate::http::MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    // Valid already: request_spans parsed it.
    let _ = parsed.parse(request);
    parsed.headers.iter().any(|h| h.name.eq_ignore_ascii_case("proxy-authorization"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::request::count_requests;

    fn text(bytes: &[u8]) -> String {
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    fn target(url: &str) -> Target {
        Target::parse(url).unwrap()
    }

    #[test]
    fn the_request_target_becomes_absolute() {
        let form = AbsoluteForm::new(&target("http://127.0.0.1:8080/"), None);
        let request = b"GET /x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";
        let rewritten = form.rewrite(request).unwrap();
        assert_eq!(
            text(&rewritten),
            "GET http://127.0.0.1:8080/x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
        );
        let form = AbsoluteForm::new(&target("http://[::1]/"), None);
        let v6 = form.rewrite(b"HEAD / HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(text(&v6), "HEAD http://[::1]/ HTTP/1.1\r\n\r\n");
    }

    #[test]
    fn credentials_follow_the_request_line_of_every_pipelined_request() {
        let form = AbsoluteForm::new(&target("http://h:81/"), Some("Basic dTpw".into()));
        let batch = b"POST /a HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi\r\nGET /b HTTP/1.1\r\n\r\n";
        let rewritten = form.rewrite(batch).unwrap();
        assert_eq!(
            text(&rewritten),
            "POST http://h:81/a HTTP/1.1\r\nProxy-Authorization: Basic dTpw\r\nContent-Length: \
             2\r\n\r\nhi\r\nGET http://h:81/b HTTP/1.1\r\nProxy-Authorization: Basic dTpw\r\n\r\n"
        );
        assert_eq!(count_requests(&rewritten).unwrap().is_head, [false, false]);
    }

    #[test]
    fn what_is_absolute_or_authorized_already_stays() {
        let form = AbsoluteForm::new(&target("http://h/"), Some("Basic dTpw".into()));
        let request = b"GET http://other/x HTTP/1.1\r\nproxy-authorization: Basic bWU=\r\n\r\n";
        assert_eq!(form.rewrite(request).unwrap(), request);
        let star = b"OPTIONS * HTTP/1.1\nHost: h\n\n";
        assert_eq!(
            text(&form.rewrite(star).unwrap()),
            "OPTIONS * HTTP/1.1\nProxy-Authorization: Basic dTpw\r\nHost: h\n\n"
        );
    }

    #[test]
    fn a_script_request_is_rewritten_once() {
        let mut form = AbsoluteForm::new(&target("http://h/"), None);
        let request: Arc<[u8]> = Arc::from(&b"GET / HTTP/1.1\r\n\r\n"[..]);
        let first = form.of(request.clone()).unwrap();
        assert_eq!(text(&first), "GET http://h/ HTTP/1.1\r\n\r\n");
        assert!(Arc::ptr_eq(&first, &form.of(request).unwrap()));
        let copy: Arc<[u8]> = Arc::from(&b"GET / HTTP/1.1\r\n\r\n"[..]);
        assert!(Arc::ptr_eq(&first, &form.of(copy).unwrap()));
        let other = form.of(Arc::from(&b"GET /2 HTTP/1.1\r\n\r\n"[..])).unwrap();
        assert_eq!(text(&other), "GET http://h/2 HTTP/1.1\r\n\r\n");
        assert!(form.of(Arc::from(&b"GET /"[..])).is_err());
    }
}
