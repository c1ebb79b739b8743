//! One HTTP/2 client connection of the built-in server: h2c by the
//! connection preface on the plain port, h2 by ALPN with `--tls` (either
//! way the connection starts as HTTP/1.1 and is handed over when its first
//! bytes are the preface). The endpoints, the added latency and the stall
//! are the HTTP/1.1 server's: each request gets its response's due time
//! when it is complete, and responses leave when due, in any order (each
//! on its stream).
//!
//! What HTTP/1.1 frames differently: `/chunked` sends its lines as plain
//! DATA (HTTP/2 has no chunked coding; no trailer), `/eof` and `/close`
//! answer and then end the connection with a GOAWAY, no `100 Continue` is
//! sent, `/echo` writes the header names in their HTTP/1.1 case (HTTP/2
//! sends them lower-cased), and an `/echo` body too large gets its 413 on
//! its stream, the connection going on.
//!
//! What a connection holds is bounded whatever the client sends or
//! withholds: of a request body only what its endpoint uses is kept (up to
//! 1 MiB for `/echo`, nothing elsewhere; the rest is counted and dropped);
//! frames are pulled from the session only while the output holds less
//! than [`OUTPUT_BATCH`], so a client that grants a huge window and does
//! not read gets no large body rendered at once, and the rest follows as
//! the socket takes it; once the client has closed its side, answers that
//! never come (`/hang`) are dropped and the connection ends; and the
//! preface's SETTINGS must come within the head timeout.

use std::io;

use super::conn::{close_gracefully, earliest, linger, Outcome, Wake};
use super::endpoint::{self, Endpoint};
use super::request::{Request, MAX_ECHO_BODY};
use super::response::{self, Body, Response, ECHO_TOO_LARGE, NEVER};
use super::{Shared, ThreadCounters, DEFAULT_BODY_TEXT};
use crate::grpc::call::first_framed;
use crate::grpc_status::{self, INVALID_ARGUMENT, RESOURCE_EXHAUSTED};
use crate::http::transport::Transport;
use crate::http2::canonical_name;
use crate::http2::session::{self, Event, Role, Session};

/// Concurrent streams a client may open on one connection (nginx's
/// default).
const MAX_CONCURRENT_STREAMS: u32 = 128;

/// The read buffer.
const READ_BUFFER: usize = 16 * 1024;

/// Frames are pulled from the session until the output holds this much,
/// and again once it is written.
const OUTPUT_BATCH: usize = 64 * 1024;

/// A response waiting for its due time.
struct Pending {
    stream_id: i32,
    slot: usize,
    response: Response,
}

pub(super) struct Http2Conn {
    transport: Transport,
    session: Session,
    pending: Vec<Pending>,
    /// Frames to write; `out[written..]` is not written yet.
    out: Vec<u8>,
    written: usize,
    buf: Vec<u8>,
    peer_eof: bool,
    /// A GOAWAY was sent (`/close`, `/eof`): end once the answers are out.
    ending: bool,
    /// When the client's SETTINGS (the end of its preface) must have come;
    /// None once they have, or with no head timeout.
    settings_deadline: Option<u64>,
    /// Closing: draining input until then (see [`close_gracefully`]).
    linger_until: Option<u64>,
    /// The session's events being handled (kept for its memory).
    events: Vec<Event>,
    /// Calls answered as their messages come (`--grpc`'s streaming
    /// methods): by stream id, how far into the request body the answers
    /// have gone.
    answering: Vec<(i32, usize)>,
    /// The wake-up the event loop has queued for this connection.
    pub(super) timer: Option<u64>,
}

impl Http2Conn {
    /// Takes over, at `now`, a connection whose input so far
    /// (`received`, the preface at least) is HTTP/2. Its SETTINGS must
    /// come by `preface_deadline` if the preface was begun before (else
    /// within the head timeout from now).
    pub(super) fn new(
        transport: Transport,
        received: &[u8],
        preface_deadline: Option<u64>,
        now: u64,
        shared: &Shared,
    ) -> io::Result<Http2Conn> {
        let role = Role::Server { max_concurrent_streams: MAX_CONCURRENT_STREAMS };
        let mut session = Session::new(role, true).map_err(io::Error::other)?;
        session.keep_bodies_up_to(kept_body);
        if shared.grpc.is_some() {
            // Its streaming methods answer each message as it comes.
            session.count_grpc_messages();
        }
        session.receive(received).map_err(io::Error::other)?;
        Ok(Http2Conn {
            transport,
            session,
            pending: Vec::new(),
            out: Vec::new(),
            written: 0,
            buf: vec![0; READ_BUFFER],
            peer_eof: false,
            ending: false,
            settings_deadline: preface_deadline.or_else(|| shared.head_deadline(now)),
            linger_until: None,
            events: Vec::new(),
            answering: Vec::new(),
            timer: None,
        })
    }

    pub(super) fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Does whatever can be done at `now`: read (if the socket signalled
    /// it), answer what is due, write.
    pub(super) fn service(
        &mut self,
        now: u64,
        wake: Wake,
        shared: &Shared,
        counters: &ThreadCounters,
    ) -> Outcome {
        if let Some(deadline) = self.linger_until {
            return linger(&mut self.transport, &mut self.buf, now, wake != Wake::Quiet, deadline);
        }
        if wake != Wake::Quiet && self.read(wake == Wake::Hangup).is_err() {
            return Outcome::Close;
        }
        self.handle_events(now, shared, counters);
        if self.settings_deadline.is_some_and(|deadline| now >= deadline) {
            // The preface never ended: there is no session to end politely.
            return Outcome::Close;
        }
        if self.peer_eof {
            // The client is gone: an answer that never comes (`/hang`)
            // has nothing left to wait for.
            self.pending.retain(|p| p.response.due_ns != NEVER);
        }
        if self.answer_due(now, shared).is_err() || self.write().is_err() {
            return Outcome::Close;
        }
        // Streams closed while sending (a client's reset) drop their answers.
        self.handle_events(now, shared, counters);
        let done = self.session.is_over()
            || self.session.failure().is_some()
            || ((self.peer_eof || self.ending) && self.pending.is_empty());
        // All written: `write` stops early only when the socket is full.
        if done && self.written >= self.out.len() {
            return self.end(now);
        }
        let next = self.pending.iter().map(|p| p.response.due_ns).filter(|&due| due != NEVER).min();
        Outcome::Open { wake_at: earliest(next.filter(|&due| due > now), self.settings_deadline) }
    }

    /// Ends the connection once everything is written: at once if the
    /// client has closed its side, else after our FIN and its own.
    fn end(&mut self, now: u64) -> Outcome {
        if self.peer_eof {
            self.transport.close_write();
            return Outcome::Close;
        }
        let deadline = close_gracefully(&mut self.transport, now);
        self.linger_until = Some(deadline);
        Outcome::Open { wake_at: Some(deadline) }
    }

    /// Reads everything the socket has into the session.
    fn read(&mut self, until_end: bool) -> io::Result<()> {
        while !self.peer_eof {
            match self.transport.read(&mut self.buf) {
                Ok((0, _)) => self.peer_eof = true,
                Ok((n, _)) => {
                    self.session.receive(&self.buf[..n]).map_err(io::Error::other)?;
                    if n < self.buf.len() && !until_end && self.transport.short_read_drains() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Complete requests get their response's due time; streams the client
    /// reset lose theirs.
    fn handle_events(&mut self, now: u64, shared: &Shared, counters: &ThreadCounters) {
        let mut events = std::mem::take(&mut self.events);
        events.extend(self.session.events());
        let mut requests = 0;
        for event in events.drain(..) {
            match event {
                Event::GrpcMessage { slot, stream_id, .. } => {
                    self.answer_message(slot, stream_id, shared);
                }
                Event::Request { slot, stream_id } if self.answered_as_it_came(stream_id) => {
                    requests += 1;
                    // The last answers went; the trailers end the stream.
                    self.session.clear_message(slot);
                    self.session.send_more(slot, stream_id, &[], true);
                }
                Event::Request { slot, stream_id } => {
                    let message = self.session.take_message(slot);
                    let response = match grpc_call(&message) {
                        Some(status) => {
                            requests += 1;
                            // A message larger than an echo keeps is not
                            // echoed cut short, nor are more copies sent
                            // than that would be.
                            let kept = message.body_len == message.body.len() as u64;
                            let (status, reply) = match (&shared.grpc, asked_copies(&message)) {
                                _ if !kept => (RESOURCE_EXHAUSTED, Vec::new()),
                                (Some(service), _) => {
                                    let path = field(&message, b":path").unwrap_or_default();
                                    service.answer(path, status, &message.body, MAX_ECHO_BODY)
                                }
                                (None, _) if asks_reflection(&message) => {
                                    (grpc_status::UNIMPLEMENTED, Vec::new())
                                }
                                (None, None) => (INVALID_ARGUMENT, Vec::new()),
                                (None, Some(n))
                                    if n.saturating_mul(message.body.len()) > MAX_ECHO_BODY =>
                                {
                                    (RESOURCE_EXHAUSTED, Vec::new())
                                }
                                (None, Some(1)) => (status, message.body),
                                (None, Some(n)) => (status, message.body.repeat(n)),
                            };
                            Response::grpc(status, reply, now, shared)
                        }
                        None => {
                            let request = request(&message);
                            requests += u64::from(request.endpoint != Endpoint::Stats);
                            answer(request, message.body_len, now, shared)
                        }
                    };
                    self.pending.push(Pending { stream_id, slot, response });
                }
                Event::Closed { stream_id, .. } => {
                    self.pending.retain(|p| p.stream_id != stream_id);
                    self.answering.retain(|&(id, _)| id != stream_id);
                }
                Event::Settings => self.settings_deadline = None,
                Event::GoAway { .. } | Event::Response { .. } => {}
            }
        }
        self.events = events;
        counters.requests_read(requests);
    }

    /// A whole message of the request on `slot` arrived: a call of a
    /// method `--grpc`'s service answers as it comes gets its answer to it
    /// now (the response begins with the first). The answers come at
    /// once: `--latency` and stalls hold answers to whole requests only.
    fn answer_message(&mut self, slot: usize, stream_id: i32, shared: &Shared) {
        let Some(service) = &shared.grpc else { return };
        let Some(message) = self.session.message(slot) else { return };
        let path = field(message, b":path").unwrap_or_default();
        if grpc_call(message) != Some(grpc_status::OK) || !service.streams(path) {
            return;
        }
        let at = match self.answering.iter().position(|&(id, _)| id == stream_id) {
            Some(at) => at,
            None => {
                self.answering.push((stream_id, 0));
                self.answering.len() - 1
            }
        };
        let from = self.answering[at].1;
        // Past what the body keeps, nothing more is answered.
        let Some(framed) = first_framed(&message.body[from.min(message.body.len())..]) else {
            return;
        };
        self.answering[at].1 = from + framed.len();
        let answer = service.answer_one(path, framed);
        if from == 0 {
            let fields: [(&[u8], &[u8]); 3] = [
                (b":status", b"200"),
                (b"server", b"pace"),
                (b"content-type", b"application/grpc"),
            ];
            let body = session::Body::Stream { queued: answer, at: 0, finished: false };
            let submitted =
                self.session.submit_response(stream_id, slot, fields, Some(body), Some(GRPC_OK));
            if submitted.is_err() {
                self.answering.swap_remove(at);
            }
        } else {
            self.session.send_more(slot, stream_id, &answer, false);
        }
    }

    /// The call on `stream_id` was answered as its messages came.
    fn answered_as_it_came(&self, stream_id: i32) -> bool {
        self.answering.iter().any(|&(id, _)| id == stream_id)
    }

    /// Submits the responses due at `now`.
    fn answer_due(&mut self, now: u64, shared: &Shared) -> io::Result<()> {
        let mut k = 0;
        while k < self.pending.len() {
            if self.pending[k].response.due_ns > now {
                k += 1;
                continue;
            }
            let Pending { stream_id, slot, response } = self.pending.swap_remove(k);
            self.submit(stream_id, slot, &response, shared)?;
            if matches!(response.body, Body::DefaultUntilClose)
                || response.connection == super::request::Connection::Close
            {
                self.session.go_away(session::NO_ERROR);
                self.ending = true;
            }
        }
        Ok(())
    }

    fn submit(
        &mut self,
        stream_id: i32,
        slot: usize,
        response: &Response,
        shared: &Shared,
    ) -> io::Result<()> {
        let stats = match response.body {
            Body::Stats => response::stats_json(shared),
            _ => Vec::new(),
        };
        let (length, body) = body(response, shared, stats);
        let status = response.status.to_string();
        if let Some(code) = response.grpc {
            let fields = vec![(&b":status"[..], status.as_bytes()), (b"server", b"pace")];
            return self.submit_grpc(stream_id, slot, fields, code, body);
        }
        let length = length.map(|n| n.to_string());
        let fields = response_fields(response, &status, length.as_deref());
        let body = body.filter(|_| !response.head_only);
        self.session.submit_response(stream_id, slot, fields, body, None).map_err(io::Error::other)
    }

    /// A gRPC call's answer: OK with the reply message and the status in
    /// trailers; any other status in the headers alone (gRPC's
    /// trailers-only response).
    fn submit_grpc(
        &mut self,
        stream_id: i32,
        slot: usize,
        fields: Vec<(&[u8], &[u8])>,
        code: u8,
        body: Option<session::Body>,
    ) -> io::Result<()> {
        let fields = fields.into_iter().chain([(&b"content-type"[..], &b"application/grpc"[..])]);
        let submitted = match code {
            grpc_status::OK => {
                self.session.submit_response(stream_id, slot, fields, body, Some(GRPC_OK))
            }
            _ => {
                let code = code.to_string();
                let fields = fields.chain([(&b"grpc-status"[..], code.as_bytes())]);
                self.session.submit_response(stream_id, slot, fields, None, None)
            }
        };
        submitted.map_err(io::Error::other)
    }

    /// Writes the frames the session has, until done or the socket is full.
    fn write(&mut self) -> io::Result<()> {
        if !self.transport.flush()? {
            return Ok(());
        }
        loop {
            if self.written >= self.out.len() {
                self.out.clear();
                self.written = 0;
                self.session.send_up_to(&mut self.out, OUTPUT_BATCH).map_err(io::Error::other)?;
                if self.out.is_empty() {
                    return Ok(());
                }
            }
            match self.transport.write(&self.out[self.written..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// The trailers of an OK gRPC answer.
const GRPC_OK: session::Trailers = &[(b"grpc-status", b"0")];

/// The metadata a call sends to be answered with that status instead of
/// its message (`-H 'pace-grpc-status: 14'`: UNAVAILABLE).
const ASKED_STATUS: &[u8] = b"pace-grpc-status";

/// The metadata a call sends to be answered with its message that many
/// times (a server stream: `-H 'pace-grpc-messages: 10'`).
const ASKED_COPIES: &[u8] = b"pace-grpc-messages";

/// How many times a call asks its message to be echoed (1 unless it
/// says); None: not a count.
fn asked_copies(message: &session::Message) -> Option<usize> {
    match field(message, ASKED_COPIES) {
        None => Some(1),
        Some(value) => std::str::from_utf8(value).ok()?.trim().parse().ok(),
    }
}

/// A gRPC call (its content-type is gRPC's): the status to answer it
/// with, OK unless the call asked for another. None: not a gRPC call.
fn grpc_call(message: &session::Message) -> Option<u8> {
    let content_type = field(message, b"content-type")?;
    if !content_type.starts_with(b"application/grpc") {
        return None;
    }
    Some(field(message, ASKED_STATUS).map_or(grpc_status::OK, grpc_status::parse))
}

/// Without `--grpc` the server has no reflection service (every method
/// echoes, whatever its schema): a call of one is UNIMPLEMENTED, so that a
/// client says to give the schema instead.
fn asks_reflection(message: &session::Message) -> bool {
    field(message, b":path").is_some_and(|path| path.starts_with(b"/grpc.reflection."))
}

/// The value of the header field `name` (the first, if repeated).
fn field<'m>(message: &'m session::Message, name: &[u8]) -> Option<&'m [u8]> {
    find_field(&message.fields, name)
}

/// The value of the field `name` among `fields` (the first, if repeated).
fn find_field<'f>(fields: &'f [(Vec<u8>, Vec<u8>)], name: &[u8]) -> Option<&'f [u8]> {
    fields.iter().find(|(n, _)| n == name).map(|(_, v)| &v[..])
}

/// The endpoint the request's `:path` names.
fn endpoint(message: &session::Message) -> Endpoint {
    Endpoint::route(&String::from_utf8_lossy(field(message, b":path").unwrap_or(b"/")))
}

/// How much of a request's body to keep: what its endpoint uses. Only
/// `/echo` uses one, up to HTTP/1.1's bound (one byte more would be a
/// 413 anyway); of the rest of the body only its length is counted.
fn kept_body(message: &session::Message) -> usize {
    if endpoint(message) == Endpoint::Echo || grpc_call(message).is_some() {
        MAX_ECHO_BODY
    } else {
        0
    }
}

/// The response to a complete request, as over HTTP/1.1; but an `/echo`
/// body over the bound is refused on its stream alone (over HTTP/2 and
/// HTTP/3).
pub(super) fn answer(request: Request, body_len: u64, now: u64, shared: &Shared) -> Response {
    if request.endpoint == Endpoint::Echo && body_len > MAX_ECHO_BODY as u64 {
        return Response::refusal(413, ECHO_TOO_LARGE, now, shared);
    }
    Response::answer(request, now, shared)
}

/// What the response to an HTTP/2 request depends on, as for HTTP/1.1.
fn request(message: &session::Message) -> Request {
    let method = field(message, b":method").unwrap_or(b"GET");
    let path = field(message, b":path").unwrap_or(b"/");
    request_of(method, path, &message.fields, &message.body)
}

/// What the response to a request of HTTP/2 or HTTP/3 depends on, as for
/// HTTP/1.1: its method, path, fields (pseudo-headers among them are
/// skipped) and the body kept of it.
pub(super) fn request_of(
    method: &[u8],
    path: &[u8],
    fields: &[(Vec<u8>, Vec<u8>)],
    body: &[u8],
) -> Request {
    let method = String::from_utf8_lossy(method);
    let path = String::from_utf8_lossy(path);
    let endpoint = Endpoint::route(&path);
    let has_token = find_field(fields, b"x-token")
        .is_some_and(|v| v.trim_ascii() == endpoint::TOKEN.as_bytes());
    let echo = (endpoint == Endpoint::Echo).then(|| {
        let mut text = format!("{method} {path}\n").into_bytes();
        // Names as HTTP/1.1 writes them, so that an echo reads the same
        // whichever protocol carried the request.
        for (name, value) in fields.iter().filter(|(n, _)| !n.starts_with(b":")) {
            text.extend_from_slice(canonical_name(name).as_bytes());
            text.extend_from_slice(b": ");
            text.extend_from_slice(value);
            text.push(b'\n');
        }
        text.push(b'\n');
        text.extend_from_slice(body);
        text
    });
    Request {
        endpoint,
        head_only: method == "HEAD",
        connection: super::request::Connection::KeepAlive,
        has_token,
        expect_continue: false,
        echo,
    }
}

/// The header fields of a response (not a gRPC call's) over HTTP/2 or
/// HTTP/3, with its status and length in decimal.
pub(super) fn response_fields<'a>(
    response: &Response,
    status: &'a str,
    length: Option<&'a str>,
) -> Vec<(&'a [u8], &'a [u8])> {
    let mut fields: Vec<(&[u8], &[u8])> =
        vec![(b":status", status.as_bytes()), (b"server", b"pace")];
    match response.body {
        Body::None | Body::Interim => {}
        Body::Stats => fields.push((b"content-type", b"application/json")),
        _ => fields.push((b"content-type", b"text/plain")),
    }
    if let Some(length) = length {
        fields.push((b"content-length", length.as_bytes()));
    }
    if response.token {
        fields.push((b"x-token", endpoint::TOKEN.as_bytes()));
    }
    fields
}

/// The body of `response` for the session (HTTP/3's is made of it too),
/// and its length when the response has one.
pub(super) fn body(
    response: &Response,
    shared: &Shared,
    stats: Vec<u8>,
) -> (Option<u64>, Option<session::Body>) {
    let text = |text: &'static [u8]| session::Body::Repeat {
        pattern: text,
        offset: 0,
        len: text.len() as u64,
    };
    let owned = |bytes: Vec<u8>| {
        let end = bytes.len();
        session::Body::Bytes { bytes: bytes.into(), start: 0, end }
    };
    match &response.body {
        Body::Default | Body::DefaultUntilClose => {
            let len = shared.default_body.len() as u64;
            (Some(len), Some(session::Body::Repeat { pattern: DEFAULT_BODY_TEXT, offset: 0, len }))
        }
        Body::Pattern(n) => {
            (Some(*n), Some(session::Body::Repeat { pattern: response::LINE, offset: 0, len: *n }))
        }
        Body::Chunked(n) => {
            let len = u64::from(*n) * response::LINE.len() as u64;
            (None, Some(session::Body::Repeat { pattern: response::LINE, offset: 0, len }))
        }
        Body::Text(t) => (Some(t.len() as u64), Some(text(t.as_bytes()))),
        Body::Echo(bytes) => (Some(bytes.len() as u64), Some(owned(bytes.clone()))),
        Body::Stats => (Some(stats.len() as u64), Some(owned(stats))),
        Body::None | Body::Interim => (None, None),
    }
}
