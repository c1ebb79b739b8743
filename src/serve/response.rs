//! The response side: the response a request gets and the bytes of that
//! response on the wire.

use super::endpoint::{Endpoint, TOKEN};
use super::request::{Connection, Request};
use super::Shared;

/// The due time of a response that is never sent (`/hang`).
pub(super) const NEVER: u64 = u64::MAX;

/// The answer to an `/echo` body over [`super::request::MAX_ECHO_BODY`].
pub(super) const ECHO_TOO_LARGE: &str = "body too large for /echo\n";

/// The line `/bytes` and `/chunked` bodies repeat.
pub(super) const LINE: &[u8; 64] =
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+\n";

/// A static buffer of [`LINE`]s that large bodies are written from, so a
/// 100 MB response needs no 100 MB buffer.
static PATTERN: [u8; 64 * 1024] = repeat_line();

const fn repeat_line() -> [u8; 64 * 1024] {
    let mut buffer = [0; 64 * 1024];
    let mut i = 0;
    while i < buffer.len() {
        buffer[i] = LINE[i % LINE.len()];
        i += 1;
    }
    buffer
}

/// Bodies up to this size are copied next to their headers (one write for
/// both, and pipelined responses coalesce); the rest of a larger body is
/// written straight from its source. A multiple of [`LINE`]'s length, so
/// the pattern continues seamlessly.
const INLINE_BODY_MAX: usize = 16 * 1024;

/// A response waiting in its connection's queue.
#[derive(Debug)]
pub(super) struct Response {
    /// [`crate::sys::now_ns`] time from which it may be written.
    pub due_ns: u64,
    pub status: u16,
    pub body: Body,
    pub connection: Connection,
    pub head_only: bool,
    /// Adds `X-Token` (the `/auth` response).
    pub token: bool,
    /// A gRPC call's answer (over HTTP/2 only): its status; an OK one
    /// carries the body (`Echo`: the request's message) and the status in
    /// trailers, any other only the status.
    pub grpc: Option<u8>,
}

#[derive(Debug)]
pub(super) enum Body {
    /// The configured default body.
    Default,
    /// The default body, delimited by closing the connection.
    DefaultUntilClose,
    /// That many bytes of the pattern.
    Pattern(u64),
    Text(&'static str),
    Echo(Vec<u8>),
    /// That many chunks of [`LINE`], then a trailer.
    Chunked(u32),
    /// The counters as JSON, taken when the response is written.
    Stats,
    /// 204, 304: no body and no Content-Length.
    None,
    /// `100 Continue`: a status line only.
    Interim,
}

impl Response {
    fn new(due_ns: u64, status: u16, body: Body, connection: Connection) -> Response {
        Response { due_ns, status, body, connection, head_only: false, token: false, grpc: None }
    }

    /// The answer to a gRPC call (any method): its request `message`
    /// echoed with OK, or `status` alone, due as every answer.
    pub(super) fn grpc(status: u8, message: Vec<u8>, now: u64, shared: &Shared) -> Response {
        let body = Body::Echo(message);
        let connection = Connection::KeepAlive;
        Response {
            grpc: Some(status),
            ..Response::new(shared.due_time(now, 0), 200, body, connection)
        }
    }

    /// `100 Continue`, written as soon as the responses before it.
    pub(super) fn interim(now: u64, shared: &Shared) -> Response {
        Response::new(shared.release_time(now), 100, Body::Interim, Connection::KeepAlive)
    }

    /// An error that ends the connection (malformed request, body too
    /// large).
    pub(super) fn fatal(status: u16, message: &'static str, now: u64, shared: &Shared) -> Response {
        Response::new(shared.due_time(now, 0), status, Body::Text(message), Connection::Close)
    }

    /// An error that leaves the connection open (an HTTP/2 stream's: the
    /// other streams go on).
    pub(super) fn refusal(
        status: u16,
        message: &'static str,
        now: u64,
        shared: &Shared,
    ) -> Response {
        Response::new(shared.due_time(now, 0), status, Body::Text(message), Connection::KeepAlive)
    }

    /// The answer to a complete request read at `now`.
    pub(super) fn answer(request: Request, now: u64, shared: &Shared) -> Response {
        let Request { endpoint, head_only, connection, has_token, echo, .. } = request;
        let mut extra_delay_ns = 0;
        let (status, body, connection) = match endpoint {
            Endpoint::Default | Endpoint::Continue | Endpoint::Hang => {
                (200, Body::Default, connection)
            }
            Endpoint::Status(code @ (204 | 304)) => (code, Body::None, connection),
            Endpoint::Status(code) => (code, Body::Default, connection),
            Endpoint::Bytes(n) => (200, Body::Pattern(n), connection),
            Endpoint::Chunked(n) => (200, Body::Chunked(n), connection),
            Endpoint::Close => (200, Body::Default, Connection::Close),
            Endpoint::Eof => (200, Body::DefaultUntilClose, Connection::Close),
            Endpoint::Delay(ms) => {
                extra_delay_ns = ms * 1_000_000;
                (200, Body::Default, connection)
            }
            Endpoint::Echo => (200, Body::Echo(echo.unwrap_or_default()), connection),
            Endpoint::Auth => (200, Body::Text("auth\n"), connection),
            Endpoint::Resource if has_token => (200, Body::Text("ok\n"), connection),
            Endpoint::Resource => (401, Body::Text("unauthorized\n"), connection),
            Endpoint::Stats => (200, Body::Stats, connection),
            Endpoint::BadArgument => (400, Body::Text("bad endpoint argument\n"), connection),
        };
        let due_ns = match endpoint {
            Endpoint::Hang => NEVER,
            _ => shared.due_time(now, extra_delay_ns),
        };
        Response {
            head_only,
            token: endpoint == Endpoint::Auth,
            ..Response::new(due_ns, status, body, connection)
        }
    }

    /// Appends the response to `out`. Returns the part of the body too
    /// large to copy, which the connection writes from its source next.
    pub(super) fn render(&self, out: &mut Vec<u8>, shared: &Shared) -> Option<Stream> {
        if let Body::Interim = self.body {
            out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
            return None;
        }
        // Counters move while other threads work: take them once, so that
        // Content-Length and body agree.
        let stats = match self.body {
            Body::Stats => stats_json(shared),
            _ => Vec::new(),
        };
        self.render_head(out, shared, stats.len());
        if self.head_only {
            return None;
        }
        match &self.body {
            Body::Default | Body::DefaultUntilClose => {
                let body = &shared.default_body[..];
                let inline = body.len().min(INLINE_BODY_MAX);
                out.extend_from_slice(&body[..inline]);
                (inline < body.len()).then_some(Stream::Default { offset: inline })
            }
            Body::Pattern(n) => {
                let inline = usize::try_from(*n).unwrap_or(usize::MAX).min(INLINE_BODY_MAX);
                out.extend_from_slice(&PATTERN[..inline]);
                let remaining = *n - inline as u64;
                (remaining > 0).then_some(Stream::Pattern { remaining })
            }
            Body::Text(text) => {
                out.extend_from_slice(text.as_bytes());
                None
            }
            Body::Echo(text) => {
                out.extend_from_slice(text);
                None
            }
            Body::Chunked(n) => {
                render_chunks(*n, out);
                None
            }
            Body::Stats => {
                out.extend_from_slice(&stats);
                None
            }
            Body::None | Body::Interim => None,
        }
    }

    fn render_head(&self, out: &mut Vec<u8>, shared: &Shared, stats_len: usize) {
        out.extend_from_slice(b"HTTP/1.1 ");
        push_decimal(out, u64::from(self.status));
        out.push(b' ');
        out.extend_from_slice(reason(self.status).as_bytes());
        out.extend_from_slice(b"\r\nServer: pace\r\n");
        match self.body {
            Body::None | Body::Interim => {}
            Body::Stats => out.extend_from_slice(b"Content-Type: application/json\r\n"),
            _ => out.extend_from_slice(b"Content-Type: text/plain\r\n"),
        }
        match self.content_length(shared, stats_len) {
            Some(length) => {
                out.extend_from_slice(b"Content-Length: ");
                push_decimal(out, length);
                out.extend_from_slice(b"\r\n");
            }
            None if matches!(self.body, Body::Chunked(_)) => {
                out.extend_from_slice(b"Transfer-Encoding: chunked\r\nTrailer: X-Trailer\r\n")
            }
            None => {}
        }
        match self.connection {
            Connection::KeepAlive => {}
            Connection::KeepAlive10 => out.extend_from_slice(b"Connection: keep-alive\r\n"),
            Connection::Close => out.extend_from_slice(b"Connection: close\r\n"),
        }
        if self.token {
            out.extend_from_slice(b"X-Token: ");
            out.extend_from_slice(TOKEN.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }

    /// None for bodies delimited otherwise (chunked, by close) or absent.
    fn content_length(&self, shared: &Shared, stats_len: usize) -> Option<u64> {
        match &self.body {
            Body::Default => Some(shared.default_body.len() as u64),
            Body::Pattern(n) => Some(*n),
            Body::Text(text) => Some(text.len() as u64),
            Body::Echo(text) => Some(text.len() as u64),
            Body::Stats => Some(stats_len as u64),
            Body::DefaultUntilClose | Body::Chunked(_) | Body::None | Body::Interim => None,
        }
    }
}

/// The remainder of a large body, written from a static source.
#[derive(Debug)]
pub(super) enum Stream {
    /// The default body from this offset on.
    Default { offset: usize },
    /// This many more bytes of [`PATTERN`].
    Pattern { remaining: u64 },
}

impl Stream {
    /// The next bytes to write.
    pub(super) fn chunk<'a>(&self, default_body: &'a [u8]) -> &'a [u8] {
        match *self {
            Stream::Default { offset } => &default_body[offset..],
            Stream::Pattern { remaining } => {
                &PATTERN[..usize::try_from(remaining).unwrap_or(usize::MAX).min(PATTERN.len())]
            }
        }
    }

    /// Records that `written` bytes of [`Stream::chunk`] went out; true
    /// when the body is complete.
    pub(super) fn advance(&mut self, written: usize, default_body: &[u8]) -> bool {
        match self {
            Stream::Default { offset } => {
                *offset += written;
                *offset >= default_body.len()
            }
            Stream::Pattern { remaining } => {
                *remaining -= written as u64;
                *remaining == 0
            }
        }
    }
}

fn render_chunks(count: u32, out: &mut Vec<u8>) {
    for _ in 0..count {
        out.extend_from_slice(b"40\r\n");
        out.extend_from_slice(LINE);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\nX-Trailer: end\r\n\r\n");
}

pub(super) fn stats_json(shared: &Shared) -> Vec<u8> {
    let stats = shared.stats();
    let mut json = Vec::with_capacity(96);
    json.extend_from_slice(b"{\"connections\":");
    push_decimal(&mut json, stats.connections);
    json.extend_from_slice(b",\"requests\":");
    push_decimal(&mut json, stats.requests);
    json.extend_from_slice(b",\"max_requests_per_read\":");
    push_decimal(&mut json, stats.max_requests_per_read);
    json.push(b'}');
    json
}

/// Appends `n` in decimal without going through `fmt`.
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}
