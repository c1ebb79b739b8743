//! HTTP/3 for the server (RFC 9114) over quinn-proto's QUIC, without I/O:
//! the caller hands it each datagram read (with its source and the time),
//! sends the datagrams it gives out to their destinations, and calls it
//! back at its deadline. Each request read whole (HEADERS, DATA, FIN) comes
//! out as an [`Event::Request`]; the caller answers it, at once or later,
//! with [`Server::respond`]: HEADERS, then the body as one DATA frame,
//! written as the stream's flow control lets it, then the stream's end.
//!
//! Its own streams: the control stream with an empty SETTINGS (QPACK
//! without a dynamic table, no blocked streams). The client's: its control
//! and QPACK streams ([`PeerStreams`]), and its requests.
//!
//! What a hostile client can make it hold is bounded: connections
//! ([`Limits::max_connections`], more are refused), concurrent request
//! streams per connection (QUIC's stream limit; a request's stream stays
//! open until it is answered, so this also bounds unanswered requests),
//! a field section ([`Limits::max_field_section`], past it the stream is
//! reset with `H3_EXCESSIVE_LOAD`), the part of a body kept
//! ([`Limits::kept_body`]; the rest is counted and dropped), what it reads
//! and writes ahead (QUIC's flow-control windows), and an idle connection's
//! life (QUIC's idle timeout). A malformed request resets its stream with
//! `H3_MESSAGE_ERROR`; what breaks the connection's framing closes it with
//! the code RFC 9114 gives.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quinn_proto::{
    ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, IdleTimeout, ReadError,
    ServerConfig, StreamEvent, StreamId, TransportConfig, VarInt, WriteError,
};

use self::request::{Failure, RequestReader};
use super::error::{self, H3Error};
use super::frame;
use super::qpack;
use super::streams::{control_stream_preface, PeerStream, PeerStreams};

mod request;

/// What one server holds at most.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections at once; a client beyond them is refused.
    pub max_connections: usize,
    /// Request streams a client may have open at once per connection.
    pub max_streams: u32,
    /// The largest field section (HEADERS frame, and decoded) read.
    pub max_field_section: usize,
    /// A connection that hears nothing for this long is closed.
    pub idle_timeout: Duration,
    /// How much of a request's body to keep, by its `:path` (the rest is
    /// counted in [`Request::body_len`], and dropped).
    pub kept_body: fn(&[u8]) -> usize,
}

/// Header fields as (name, value), in their order.
pub type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// A request read whole.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub connection: ConnectionHandle,
    pub stream: StreamId,
    pub method: Vec<u8>,
    pub path: Vec<u8>,
    /// The regular fields, in order (names in lower case).
    pub fields: Fields,
    /// What was kept of the body (see [`Limits::kept_body`])...
    pub body: Vec<u8>,
    /// ...and its whole length.
    pub body_len: u64,
}

/// What happened, in order.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// A client's connection was accepted.
    Accepted,
    Request(Request),
    /// The client of a request not answered yet will not read the answer
    /// (it stopped the stream): there is none to give.
    Cancelled {
        connection: ConnectionHandle,
        stream: StreamId,
    },
    /// A connection is over: its requests not answered yet never will be.
    Closed {
        connection: ConnectionHandle,
    },
}

/// A response's body.
#[derive(Debug)]
pub enum Body {
    Bytes(Vec<u8>),
    /// `len` bytes of `pattern` repeated, from `offset` into it: a large
    /// body without its bytes in memory.
    Repeat {
        pattern: &'static [u8],
        offset: usize,
        len: u64,
    },
}

impl Body {
    fn len(&self) -> u64 {
        match self {
            Body::Bytes(bytes) => bytes.len() as u64,
            Body::Repeat { pattern: [], .. } => 0,
            Body::Repeat { len, .. } => *len,
        }
    }
}

/// Of a repeated body, at most this much is written at once.
const WRITE_CHUNK: usize = 16 * 1024;

pub struct Server {
    endpoint: Endpoint,
    config: Arc<ServerConfig>,
    connections: HashMap<ConnectionHandle, Connection>,
    limits: Limits,
    events: VecDeque<Event>,
    /// Datagrams the endpoint answers by itself (a refusal, a stateless
    /// reset, version negotiation), with their destination.
    endpoint_transmits: VecDeque<(SocketAddr, Vec<u8>)>,
    /// Where a repeated body's bytes are laid out for writing.
    scratch: Vec<u8>,
}

/// One client's connection.
struct Connection {
    quic: quinn_proto::Connection,
    peer_streams: PeerStreams,
    peer_uni: HashMap<StreamId, PeerStream>,
    requests: HashMap<StreamId, RequestReader>,
    /// Requests handed out and not answered yet.
    awaiting: HashSet<StreamId>,
    responses: HashMap<StreamId, Outgoing>,
}

/// A response being written: its frames' head, then its body.
struct Outgoing {
    head: Vec<u8>,
    head_written: usize,
    body: Body,
    body_written: u64,
}

impl Server {
    /// A server presenting `tls` (TLS 1.3; its ALPN is set to `h3`).
    pub fn new(mut tls: rustls::ServerConfig, limits: Limits) -> Result<Server, String> {
        tls.alpn_protocols = vec![b"h3".to_vec()];
        // 0-RTT requests could be replayed; pace's are not worth the risk.
        tls.max_early_data_size = 0;
        let crypto = quinn_proto::crypto::rustls::QuicServerConfig::try_from(tls)
            .map_err(|e| format!("HTTP/3 needs TLS 1.3: {e}"))?;
        let mut config = ServerConfig::with_crypto(Arc::new(crypto));
        let mut transport = TransportConfig::default();
        transport
            .max_concurrent_bidi_streams(VarInt::from_u32(limits.max_streams))
            // The client's control and QPACK streams, and a few to spare.
            .max_concurrent_uni_streams(VarInt::from_u32(8))
            .max_idle_timeout(Some(
                IdleTimeout::try_from(limits.idle_timeout).map_err(|e| e.to_string())?,
            ))
            // What the client may send ahead, over all its streams...
            .receive_window(VarInt::from_u32(8 << 20))
            // ...and what the server queues ahead of the client's reading.
            .send_window(8 << 20);
        config.transport_config(Arc::new(transport));
        let config = Arc::new(config);
        let endpoint =
            Endpoint::new(Arc::new(EndpointConfig::default()), Some(config.clone()), true, None);
        Ok(Server {
            endpoint,
            config,
            connections: HashMap::new(),
            limits,
            events: VecDeque::new(),
            endpoint_transmits: VecDeque::new(),
            scratch: Vec::new(),
        })
    }

    /// A datagram from `from`, read at `now`. Anything that is not QUIC
    /// for this server is dropped.
    pub fn receive(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) {
        let mut buf = Vec::new();
        let event = self.endpoint.handle(now, from, None, None, BytesMut::from(datagram), &mut buf);
        let handle = match event {
            Some(DatagramEvent::NewConnection(incoming)) => {
                if self.connections.len() >= self.limits.max_connections {
                    let transmit = self.endpoint.refuse(incoming, &mut buf);
                    buf.truncate(transmit.size);
                    self.endpoint_transmits.push_back((transmit.destination, buf));
                    return;
                }
                match self.endpoint.accept(incoming, now, &mut buf, Some(self.config.clone())) {
                    Ok((handle, quic)) => {
                        self.connections.insert(handle, Connection::new(quic));
                        self.events.push_back(Event::Accepted);
                        handle
                    }
                    Err(refused) => {
                        if let Some(transmit) = refused.response {
                            buf.truncate(transmit.size);
                            self.endpoint_transmits.push_back((transmit.destination, buf));
                        }
                        return;
                    }
                }
            }
            Some(DatagramEvent::ConnectionEvent(handle, event)) => {
                let Some(connection) = self.connections.get_mut(&handle) else { return };
                connection.quic.handle_event(event);
                handle
            }
            Some(DatagramEvent::Response(transmit)) => {
                buf.truncate(transmit.size);
                self.endpoint_transmits.push_back((transmit.destination, buf));
                return;
            }
            None => return,
        };
        self.process(handle, now);
    }

    /// Hands every datagram there is to send now to `send` (destination,
    /// bytes), until it returns false (the socket is full: QUIC takes what
    /// was not sent as lost).
    pub fn transmit(&mut self, now: Instant, send: &mut dyn FnMut(SocketAddr, &[u8]) -> bool) {
        while let Some((to, datagram)) = self.endpoint_transmits.pop_front() {
            if !send(to, &datagram) {
                return;
            }
        }
        let mut buf = Vec::new();
        for connection in self.connections.values_mut() {
            while let Some(transmit) = connection.quic.poll_transmit(now, 1, &mut buf) {
                let sent = send(transmit.destination, &buf[..transmit.size]);
                buf.clear();
                if !sent {
                    return;
                }
            }
        }
    }

    /// When [`Server::on_timeout`] is due next.
    pub fn timeout(&mut self) -> Option<Instant> {
        self.connections.values_mut().filter_map(|c| c.quic.poll_timeout()).min()
    }

    /// Runs the connections' timers due at `now`.
    pub fn on_timeout(&mut self, now: Instant) {
        let due: Vec<ConnectionHandle> = self
            .connections
            .iter_mut()
            .filter_map(|(&handle, c)| {
                c.quic.poll_timeout().filter(|&at| at <= now).map(|_| handle)
            })
            .collect();
        for handle in due {
            if let Some(connection) = self.connections.get_mut(&handle) {
                connection.quic.handle_timeout(now);
            }
            self.process(handle, now);
        }
    }

    /// Closes every connection (`H3_NO_ERROR`): the server is stopping.
    pub fn close_all(&mut self, now: Instant) {
        for connection in self.connections.values_mut() {
            connection.close(now, &H3Error::new(error::NO_ERROR, "the server is stopping"));
        }
    }

    /// The next event, if any.
    pub fn poll(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Answers the request on `stream` of `connection`: `fields` (the
    /// status first, as `:status`; names in lower case) and `body`. A
    /// request whose connection or stream is gone (the client reset it)
    /// is not answered.
    pub fn respond(
        &mut self,
        connection: ConnectionHandle,
        stream: StreamId,
        fields: &[(&[u8], &[u8])],
        body: Option<Body>,
        now: Instant,
    ) {
        let Some(conn) = self.connections.get_mut(&connection) else { return };
        if !conn.awaiting.remove(&stream) {
            return;
        }
        let mut block = Vec::new();
        qpack::encode(fields.iter().copied(), &mut block);
        let mut head = Vec::with_capacity(block.len() + 16);
        frame::frame(frame::HEADERS, &block, &mut head);
        let body = body.unwrap_or(Body::Bytes(Vec::new()));
        if body.len() > 0 {
            frame::header(frame::DATA, body.len(), &mut head);
        }
        conn.responses.insert(stream, Outgoing { head, head_written: 0, body, body_written: 0 });
        conn.write(stream, &mut self.scratch);
        self.process(connection, now);
    }

    /// Everything quinn-proto has to say about a connection after a
    /// datagram, a timeout or a response.
    fn process(&mut self, handle: ConnectionHandle, now: Instant) {
        let Some(conn) = self.connections.get_mut(&handle) else { return };
        while let Some(event) = conn.quic.poll_endpoint_events() {
            if let Some(event) = self.endpoint.handle_event(handle, event) {
                conn.quic.handle_event(event);
            }
        }
        while let Some(event) = conn.quic.poll() {
            match event {
                quinn_proto::Event::Connected => conn.open_control_stream(),
                quinn_proto::Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                    while let Some(id) = conn.quic.streams().accept(Dir::Bi) {
                        conn.requests.insert(id, RequestReader::new(self.limits));
                        conn.read_request(handle, id, now, &mut self.events);
                    }
                }
                quinn_proto::Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    while let Some(id) = conn.quic.streams().accept(Dir::Uni) {
                        conn.peer_uni.insert(id, conn.peer_streams.open());
                        conn.read_uni(id, now);
                    }
                }
                quinn_proto::Event::Stream(StreamEvent::Readable { id }) => {
                    if id.dir() == Dir::Uni {
                        conn.read_uni(id, now);
                    } else {
                        conn.read_request(handle, id, now, &mut self.events);
                    }
                }
                quinn_proto::Event::Stream(StreamEvent::Writable { id }) => {
                    conn.write(id, &mut self.scratch)
                }
                // The client will not read the response: it is dropped,
                // and the stream reset with the client's code.
                quinn_proto::Event::Stream(StreamEvent::Stopped { id, error_code }) => {
                    conn.responses.remove(&id);
                    let _ = conn.quic.send_stream(id).reset(error_code);
                    if conn.awaiting.remove(&id) {
                        self.events.push_back(Event::Cancelled { connection: handle, stream: id });
                    }
                }
                _ => {}
            }
        }
        if conn.quic.is_drained() {
            self.connections.remove(&handle);
            self.events.push_back(Event::Closed { connection: handle });
        }
    }
}

impl Connection {
    fn new(quic: quinn_proto::Connection) -> Connection {
        Connection {
            quic,
            peer_streams: PeerStreams::of_client(),
            peer_uni: HashMap::new(),
            requests: HashMap::new(),
            awaiting: HashSet::new(),
            responses: HashMap::new(),
        }
    }

    fn open_control_stream(&mut self) {
        if let Some(id) = self.quic.streams().open(Dir::Uni) {
            // A new stream takes a few bytes whatever the window.
            let _ = self.quic.send_stream(id).write(&control_stream_preface());
        }
    }

    /// Reads what arrived on a request stream; a request read whole
    /// becomes an event, a malformed one resets its stream.
    fn read_request(
        &mut self,
        handle: ConnectionHandle,
        id: StreamId,
        now: Instant,
        events: &mut VecDeque<Event>,
    ) {
        let Some(reader) = self.requests.get_mut(&id) else { return };
        let mut stream = self.quic.recv_stream(id);
        let Ok(mut chunks) = stream.read(true) else { return };
        // None: the stream goes on; Some(Ok(())): it ended (FIN).
        let mut end = None;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    if let Err(failure) = reader.feed(&chunk.bytes) {
                        end = Some(Err(failure));
                        break;
                    }
                }
                Ok(None) => {
                    end = Some(Ok(()));
                    break;
                }
                Err(ReadError::Blocked) => break,
                // The client gave up on its request: nothing to answer.
                Err(ReadError::Reset(_)) => {
                    end = Some(Err(Failure::Stream(H3Error::new(
                        error::REQUEST_CANCELLED,
                        "the client reset the stream",
                    ))));
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        let Some(end) = end else { return };
        let Some(reader) = self.requests.remove(&id) else { return };
        match end.and_then(|()| reader.finish(handle, id)) {
            Ok(request) => {
                self.awaiting.insert(id);
                events.push_back(Event::Request(request));
            }
            Err(Failure::Stream(e)) => {
                let code = error::on_the_wire(e.code);
                let _ = self.quic.recv_stream(id).stop(code);
                let _ = self.quic.send_stream(id).reset(code);
            }
            Err(Failure::Connection(e)) => self.close(now, &e),
        }
    }

    /// Reads what arrived on one of the client's unidirectional streams;
    /// an error there is the connection's.
    fn read_uni(&mut self, id: StreamId, now: Instant) {
        let Some(stream) = self.peer_uni.get_mut(&id) else { return };
        let recv = self.quic.recv_stream(id);
        // What the client's control stream says (its SETTINGS, a GOAWAY)
        // changes nothing for a server without push.
        if let Err(e) = self.peer_streams.read(stream, recv, &mut |_| {}) {
            self.close(now, &e);
        }
    }

    fn close(&mut self, now: Instant, e: &H3Error) {
        self.quic.close(now, error::on_the_wire(e.code), e.reason.clone().into_bytes().into());
        self.requests.clear();
        self.responses.clear();
    }

    /// Writes what the stream takes of its response; ends the stream once
    /// all of it is written.
    fn write(&mut self, id: StreamId, scratch: &mut Vec<u8>) {
        let Some(out) = self.responses.get_mut(&id) else { return };
        let mut stream = self.quic.send_stream(id);
        loop {
            let written = if out.head_written < out.head.len() {
                stream.write(&out.head[out.head_written..]).map(|n| out.head_written += n)
            } else if out.body_written < out.body.len() {
                let chunk = body_chunk(&out.body, out.body_written, scratch);
                stream.write(chunk).map(|n| out.body_written += n as u64)
            } else {
                let _ = stream.finish();
                self.responses.remove(&id);
                return;
            };
            match written {
                Ok(()) => {}
                // The rest goes once the client's window opens (Writable).
                Err(WriteError::Blocked) => return,
                // Stopped or reset: nobody reads it any more.
                Err(_) => {
                    self.responses.remove(&id);
                    return;
                }
            }
        }
    }
}

/// The next bytes of `body` from `offset` on.
fn body_chunk<'a>(body: &'a Body, offset: u64, scratch: &'a mut Vec<u8>) -> &'a [u8] {
    match body {
        Body::Bytes(bytes) => &bytes[offset as usize..],
        Body::Repeat { pattern, offset: first, len } => {
            let size = (len - offset).min(WRITE_CHUNK as u64) as usize;
            let start = ((*first as u64 + offset) % pattern.len().max(1) as u64) as usize;
            // One period from `start`, then doubled: each copy starts at a
            // multiple of the period, so the pattern runs on unbroken.
            scratch.clear();
            scratch.extend_from_slice(&pattern[start..]);
            scratch.extend_from_slice(&pattern[..start]);
            while scratch.len() < size {
                scratch.extend_from_within(..scratch.len().min(size - scratch.len()));
            }
            scratch.truncate(size);
            scratch
        }
    }
}
