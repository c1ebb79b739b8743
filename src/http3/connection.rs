//! One HTTP/3 connection of the client over quinn-proto, without I/O: the
//! caller hands it each datagram read (with the time it arrived), sends
//! the datagrams it gives out, and calls it back at its deadline. Requests
//! go out on new bidirectional streams, already written as HTTP/3 frames;
//! each response ends as an [`Event`], produced while handling the datagram
//! that completed it, so the caller stamps it with that datagram's arrival.
//!
//! Its own streams: the control stream with an empty SETTINGS (QPACK
//! without a dynamic table, section 3.2 of RFC 9114 has the client open it
//! first thing). The peer's: [`PeerStreams`]. A connection error of HTTP/3
//! closes the connection with its code; a stream's error resets that
//! stream (and stops reading it) with its code.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use quinn_proto::{
    ClientConfig, ConnectionError, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig,
    ReadError, StreamEvent, StreamId,
};

use super::error::{self, H3Error};
use super::response::{Response, ResponseReader};
use super::streams::{control_stream_preface, Control, PeerStream, PeerStreams};

/// What happened on the connection, in order.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// The handshake is done: requests can go out.
    Connected,
    /// A request's final response began (its head was read).
    Head { token: u64 },
    /// A request's response ended: read whole, or the stream's error (the
    /// server's reset with its code, or what it got wrong).
    Response { token: u64, result: Result<Response, H3Error> },
    /// The server goes away: requests on streams from this id on will not
    /// be processed (their [`Event::Response`] says `H3_REQUEST_REJECTED`).
    GoAway { stream_id: u64 },
    /// More requests can be opened (the server raised its stream limit).
    StreamsAvailable,
    /// The connection is over, in words; every request still open ended
    /// before this with its error.
    Closed { reason: String },
}

/// Why a request could not go out now.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The server's limit of concurrent streams is reached: wait for
    /// [`Event::StreamsAvailable`] or a response.
    NoStream,
    /// Not connected yet, going away, or closed.
    NotOpen,
}

/// A request on its stream.
struct Request {
    token: u64,
    reader: ResponseReader,
    /// What the stream's send buffer did not take yet (a body beyond the
    /// stream's flow-control window), written as it opens up.
    unwritten: Vec<u8>,
    /// Its [`Event::Head`] was given.
    head_told: bool,
}

pub struct Connection {
    endpoint: Endpoint,
    handle: ConnectionHandle,
    quic: quinn_proto::Connection,
    peer: SocketAddr,
    connected: bool,
    closed: bool,
    /// The first stream id a GOAWAY excluded.
    goaway: Option<u64>,
    capture: bool,
    requests: HashMap<StreamId, Request>,
    peer_streams: PeerStreams,
    peer_uni: HashMap<StreamId, PeerStream>,
    events: VecDeque<Event>,
    /// Datagrams the endpoint answers by itself (a stateless reset).
    endpoint_transmits: VecDeque<Vec<u8>>,
}

impl Connection {
    /// Starts the handshake with `peer` as `server_name` (SNI, and the name
    /// the certificate is checked against). `config`: TLS 1.3 with ALPN h3.
    pub fn connect(
        config: ClientConfig,
        peer: SocketAddr,
        server_name: &str,
        capture: bool,
        now: Instant,
    ) -> Result<Connection, String> {
        let mut endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), None, true, None);
        let (handle, quic) =
            endpoint.connect(now, config, peer, server_name).map_err(|e| format!("QUIC: {e}"))?;
        Ok(Connection {
            endpoint,
            handle,
            quic,
            peer,
            connected: false,
            closed: false,
            goaway: None,
            capture,
            requests: HashMap::new(),
            peer_streams: PeerStreams::default(),
            peer_uni: HashMap::new(),
            events: VecDeque::new(),
            endpoint_transmits: VecDeque::new(),
        })
    }

    /// A datagram from the peer, read at `now`.
    pub fn receive(&mut self, now: Instant, datagram: &[u8]) {
        let mut answer = Vec::new();
        match self.endpoint.handle(
            now,
            self.peer,
            None,
            None,
            BytesMut::from(datagram),
            &mut answer,
        ) {
            Some(DatagramEvent::ConnectionEvent(_, event)) => self.quic.handle_event(event),
            Some(DatagramEvent::Response(transmit)) => {
                answer.truncate(transmit.size);
                self.endpoint_transmits.push_back(answer);
            }
            // A new connection (this endpoint serves none) or nothing.
            Some(DatagramEvent::NewConnection(_)) | None => {}
        }
        self.process(now);
    }

    /// The next datagram to send into `out` (cleared first): its length, or
    /// None when there is nothing to send now.
    pub fn transmit(&mut self, now: Instant, out: &mut Vec<u8>) -> Option<usize> {
        out.clear();
        if let Some(datagram) = self.endpoint_transmits.pop_front() {
            out.extend_from_slice(&datagram);
            return Some(out.len());
        }
        self.quic.poll_transmit(now, 1, out).map(|transmit| transmit.size)
    }

    /// When [`Connection::on_timeout`] is due (loss detection, delayed
    /// acknowledgements, the idle timeout).
    pub fn timeout(&mut self) -> Option<Instant> {
        self.quic.poll_timeout()
    }

    pub fn on_timeout(&mut self, now: Instant) {
        self.quic.handle_timeout(now);
        self.process(now);
    }

    /// The next event, if any.
    pub fn poll(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Requests whose responses have not ended.
    pub fn in_flight(&self) -> usize {
        self.requests.len()
    }

    /// Sends a request already written as HTTP/3 frames (HEADERS, then DATA
    /// for a body) on a new stream, ended there; `token` comes back with its
    /// response.
    pub fn send(&mut self, frames: &[u8], token: u64) -> Result<(), Refused> {
        if !self.connected || self.closed || self.goaway.is_some() {
            return Err(Refused::NotOpen);
        }
        let id = self.quic.streams().open(Dir::Bi).ok_or(Refused::NoStream)?;
        // Usually the stream takes it all at once: only a rest is copied.
        let mut stream = self.quic.send_stream(id);
        let written = stream.write(frames).unwrap_or(0);
        if written == frames.len() {
            let _ = stream.finish();
        }
        let unwritten = frames[written..].to_vec();
        self.requests.insert(
            id,
            Request {
                token,
                reader: ResponseReader::new(self.capture),
                unwritten,
                head_told: false,
            },
        );
        Ok(())
    }

    /// Gives up the request `token` (it timed out): its stream is reset and
    /// no longer read (H3_REQUEST_CANCELLED); no event comes for it.
    pub fn cancel(&mut self, token: u64) {
        let found = self.requests.iter().find(|(_, request)| request.token == token);
        let Some(id) = found.map(|(id, _)| *id) else { return };
        self.requests.remove(&id);
        let _ = self.quic.send_stream(id).reset(error::on_the_wire(error::REQUEST_CANCELLED));
        let _ = self.quic.recv_stream(id).stop(error::on_the_wire(error::REQUEST_CANCELLED));
    }

    /// What QUIC measured on the connection: its path's smoothed RTT,
    /// packets lost, datagrams sent and received.
    pub fn stats(&self) -> quinn_proto::ConnectionStats {
        self.quic.stats()
    }

    /// Closes the connection (H3_NO_ERROR): requests in flight end with it.
    pub fn close(&mut self, now: Instant) {
        if !self.closed {
            self.quic.close(now, error::on_the_wire(error::NO_ERROR), "".into());
            self.end_all(describe(&ConnectionError::LocallyClosed));
            self.process(now);
        }
    }

    /// Writes what the stream takes of the rest of a request, and ends the
    /// stream once all of it is written.
    fn write_rest(&mut self, id: StreamId) {
        let Some(request) = self.requests.get_mut(&id) else { return };
        if request.unwritten.is_empty() {
            return;
        }
        let mut stream = self.quic.send_stream(id);
        if let Ok(n) = stream.write(&request.unwritten) {
            request.unwritten.drain(..n);
        }
        if request.unwritten.is_empty() {
            let _ = stream.finish();
        }
    }

    /// Everything quinn-proto has to say after a datagram or a timeout.
    fn process(&mut self, now: Instant) {
        while let Some(event) = self.quic.poll_endpoint_events() {
            if let Some(event) = self.endpoint.handle_event(self.handle, event) {
                self.quic.handle_event(event);
            }
        }
        while let Some(event) = self.quic.poll() {
            match event {
                quinn_proto::Event::Connected => self.on_connected(),
                quinn_proto::Event::ConnectionLost { reason } => self.on_lost(&reason),
                quinn_proto::Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    while let Some(id) = self.quic.streams().accept(Dir::Uni) {
                        self.peer_uni.insert(id, self.peer_streams.open());
                        self.read_uni(now, id);
                    }
                }
                quinn_proto::Event::Stream(StreamEvent::Readable { id }) => {
                    if id.dir() == Dir::Uni {
                        self.read_uni(now, id);
                    } else {
                        self.read_response(id);
                    }
                }
                quinn_proto::Event::Stream(StreamEvent::Writable { id }) => self.write_rest(id),
                // The server will not read the request: with H3_NO_ERROR
                // it answered without the rest of the body (RFC 9114,
                // section 4.1.1), and its answer ends the stream; with
                // another code (H3_REQUEST_REJECTED, ...) it gave up.
                quinn_proto::Event::Stream(StreamEvent::Stopped { id, error_code })
                    if u64::from(error_code) != error::NO_ERROR =>
                {
                    self.end_request(id, Err(reset_error(u64::from(error_code))));
                }
                quinn_proto::Event::Stream(StreamEvent::Available { dir: Dir::Bi }) => {
                    self.events.push_back(Event::StreamsAvailable)
                }
                _ => {}
            }
        }
    }

    fn on_connected(&mut self) {
        self.connected = true;
        if let Some(id) = self.quic.streams().open(Dir::Uni) {
            let _ = self.quic.send_stream(id).write(&control_stream_preface());
        }
        self.events.push_back(Event::Connected);
    }

    fn on_lost(&mut self, reason: &ConnectionError) {
        self.end_all(describe(reason));
    }

    /// The connection is over: every request still open ends with `words`
    /// (once: quinn-proto may report a loss after pace closed).
    fn end_all(&mut self, words: String) {
        if std::mem::replace(&mut self.closed, true) {
            return;
        }
        let ids: Vec<StreamId> = self.requests.keys().copied().collect();
        for id in ids {
            self.end_request(id, Err(H3Error::new(error::REQUEST_INCOMPLETE, words.clone())));
        }
        self.events.push_back(Event::Closed { reason: words });
    }

    /// Reads what arrived on a request stream; a response that ended (its
    /// FIN, a reset, an error) becomes an event.
    fn read_response(&mut self, id: StreamId) {
        let Some(request) = self.requests.get_mut(&id) else { return };
        let mut stream = self.quic.recv_stream(id);
        let Ok(mut chunks) = stream.read(true) else { return };
        // None: the stream goes on; Some(Ok(())): it ended (FIN).
        let mut end = None;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    if let Err(e) = request.reader.feed(&chunk.bytes) {
                        end = Some(Err(e));
                        break;
                    }
                }
                Ok(None) => {
                    end = Some(Ok(()));
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(code)) => {
                    end = Some(Err(reset_error(u64::from(code))));
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        if !request.head_told && request.reader.has_head() {
            request.head_told = true;
            self.events.push_back(Event::Head { token: request.token });
        }
        let Some(end) = end else { return };
        let Some(request) = self.requests.remove(&id) else { return };
        let result = end.and_then(|()| request.reader.finish());
        if let Err(e) = &result {
            // The server's error on this stream: nothing more is read.
            let _ = self.quic.recv_stream(id).stop(error::on_the_wire(e.code));
        }
        self.events.push_back(Event::Response { token: request.token, result });
    }

    fn end_request(&mut self, id: StreamId, result: Result<Response, H3Error>) {
        if let Some(request) = self.requests.remove(&id) {
            self.events.push_back(Event::Response { token: request.token, result });
        }
    }

    /// Reads what arrived on one of the peer's unidirectional streams; an
    /// error there is the connection's.
    fn read_uni(&mut self, now: Instant, id: StreamId) {
        let Some(stream) = self.peer_uni.get_mut(&id) else { return };
        let mut said = Vec::new();
        let recv = self.quic.recv_stream(id);
        let failure = self.peer_streams.read(stream, recv, &mut |c| said.push(c)).err();
        for control in said {
            if let Control::GoAway(stream_id) = control {
                self.on_goaway(stream_id);
            }
        }
        if let Some(e) = failure {
            self.quic.close(now, error::on_the_wire(e.code), e.reason.clone().into_bytes().into());
            self.process_close(now, &e);
        }
    }

    /// Requests at or above the GOAWAY's id will not be processed: they end
    /// as rejected (the caller sends them again elsewhere).
    fn on_goaway(&mut self, stream_id: u64) {
        self.goaway = Some(stream_id);
        let rejected: Vec<StreamId> =
            self.requests.keys().copied().filter(|id| u64::from(*id) >= stream_id).collect();
        for id in rejected {
            // Nothing more of them is sent or read.
            let _ = self.quic.send_stream(id).reset(error::on_the_wire(error::REQUEST_CANCELLED));
            let _ = self.quic.recv_stream(id).stop(error::on_the_wire(error::REQUEST_CANCELLED));
            self.end_request(
                id,
                Err(H3Error::new(error::REQUEST_REJECTED, "above the server's GOAWAY")),
            );
        }
        self.events.push_back(Event::GoAway { stream_id });
    }

    /// The connection closed by pace for the server's error `e`.
    fn process_close(&mut self, now: Instant, e: &H3Error) {
        self.end_all(format!("pace closed the connection: the server's error: {e}"));
        self.process(now);
    }
}

/// QUIC's configuration of a client that runs `tls` (TLS 1.3 with ALPN
/// h3, its server certificate checks and client certificate).
pub fn client_config(tls: Arc<rustls::ClientConfig>) -> Result<ClientConfig, String> {
    let quic = quinn_proto::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| format!("TLS for QUIC: {e}"))?;
    Ok(ClientConfig::new(Arc::new(quic)))
}

/// TLS's alert for "no protocol of the client's ALPN list" (RFC 7301).
const NO_APPLICATION_PROTOCOL: u8 = 120;

/// A stream reset by the server, with its code.
fn reset_error(code: u64) -> H3Error {
    H3Error::new(code, "the server reset the stream")
}

/// A QUIC connection's end, in words.
fn describe(reason: &ConnectionError) -> String {
    match reason {
        ConnectionError::ApplicationClosed(close) => format!(
            "the server closed the connection: {}{}",
            error::name(u64::from(close.error_code)),
            reason_text(&close.reason)
        ),
        ConnectionError::ConnectionClosed(close)
            if close.error_code
                == quinn_proto::TransportErrorCode::crypto(NO_APPLICATION_PROTOCOL) =>
        {
            "the server does not speak HTTP/3: it offered no h3 in the TLS handshake (ALPN), \
             and refused the connection (TLS alert no_application_protocol)"
                .to_string()
        }
        ConnectionError::ConnectionClosed(close) => format!(
            "the server closed the connection: QUIC {}{}",
            close.error_code,
            reason_text(&close.reason)
        ),
        ConnectionError::TransportError(e) => format!("QUIC: {e}"),
        ConnectionError::VersionMismatch => {
            "the server speaks no QUIC version pace does (version negotiation)".to_string()
        }
        ConnectionError::TimedOut => {
            "the connection timed out (nothing heard from the server)".to_string()
        }
        ConnectionError::Reset => "the server reset the connection (a stateless reset)".to_string(),
        ConnectionError::LocallyClosed => "pace closed the connection".to_string(),
        ConnectionError::CidsExhausted => "QUIC: connection ids exhausted".to_string(),
    }
}

fn reason_text(reason: &[u8]) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(" ({})", String::from_utf8_lossy(reason))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use quinn_proto::{ServerConfig, TransportConfig, VarInt};

    use super::*;
    use crate::http3::{frame, qpack};

    const CLIENT: &str = "127.0.0.1:40000";
    const SERVER: &str = "127.0.0.1:4433";

    fn provider() -> Arc<rustls::crypto::CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    /// A server and a client that trusts it, both TLS 1.3 with ALPN `alpn`.
    fn configs(alpn: &[u8], max_streams: u32) -> (ServerConfig, ClientConfig) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let cert_der = cert.der().clone();
        let key_der = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
        let mut server = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert_der.clone()], key_der)
            .unwrap();
        server.alpn_protocols = vec![alpn.to_vec()];
        let mut server = ServerConfig::with_crypto(Arc::new(
            quinn_proto::crypto::rustls::QuicServerConfig::try_from(server).unwrap(),
        ));
        let mut transport = TransportConfig::default();
        transport.max_concurrent_bidi_streams(VarInt::from_u32(max_streams));
        server.transport_config(Arc::new(transport));
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert_der).unwrap();
        let mut client = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        client.alpn_protocols = vec![b"h3".to_vec()];
        let client = ClientConfig::new(Arc::new(
            quinn_proto::crypto::rustls::QuicClientConfig::try_from(client).unwrap(),
        ));
        (server, client)
    }

    /// What the test server does with each request it read whole.
    #[derive(Clone, Copy)]
    enum Answer {
        /// 200 with a body of `n` bytes (and its content-length).
        Ok(usize),
        /// Resets the stream with this code.
        Reset(u64),
        /// Closes the connection with this application error code.
        Close(u64),
    }

    /// A QUIC server in memory that answers HTTP/3 requests as told.
    struct Server {
        endpoint: Endpoint,
        conn: Option<(ConnectionHandle, quinn_proto::Connection)>,
        requests: HashMap<StreamId, Vec<u8>>,
        answer: Answer,
        /// Its control stream's frames after the stream type (SETTINGS
        /// first, unless a test says otherwise).
        control: Vec<u8>,
        control_stream: Option<StreamId>,
        served: usize,
        /// Datagrams its endpoint answered with by itself.
        answers: Vec<Vec<u8>>,
        /// Why its connection ended, once it did.
        lost: Option<ConnectionError>,
    }

    impl Server {
        fn new(config: ServerConfig, answer: Answer) -> Server {
            let mut control = Vec::new();
            frame::frame(frame::SETTINGS, &[], &mut control);
            Server {
                endpoint: Endpoint::new(
                    Arc::new(EndpointConfig::default()),
                    Some(Arc::new(config)),
                    true,
                    None,
                ),
                conn: None,
                requests: HashMap::new(),
                answer,
                control,
                control_stream: None,
                served: 0,
                answers: Vec::new(),
                lost: None,
            }
        }

        fn receive(&mut self, now: Instant, datagram: &[u8]) {
            let mut buf = Vec::new();
            let client = CLIENT.parse().unwrap();
            match self.endpoint.handle(now, client, None, None, BytesMut::from(datagram), &mut buf)
            {
                Some(DatagramEvent::NewConnection(incoming)) => {
                    match self.endpoint.accept(incoming, now, &mut buf, None) {
                        Ok(accepted) => self.conn = Some(accepted),
                        // Refused in the handshake (no common ALPN): the
                        // endpoint's answer says so.
                        Err(e) => self.answers.extend(e.response.map(|t| buf[..t.size].to_vec())),
                    }
                }
                Some(DatagramEvent::Response(t)) => self.answers.push(buf[..t.size].to_vec()),
                Some(DatagramEvent::ConnectionEvent(_, event)) => {
                    self.conn.as_mut().unwrap().1.handle_event(event)
                }
                _ => {}
            }
            self.process(now);
        }

        fn process(&mut self, now: Instant) {
            let Some((handle, conn)) = self.conn.as_mut() else { return };
            while let Some(event) = conn.poll_endpoint_events() {
                if let Some(event) = self.endpoint.handle_event(*handle, event) {
                    conn.handle_event(event);
                }
            }
            let mut ready = Vec::new();
            while let Some(event) = conn.poll() {
                match event {
                    quinn_proto::Event::Connected => {
                        let id = conn.streams().open(Dir::Uni).unwrap();
                        let mut preface = vec![frame::CONTROL_STREAM as u8];
                        preface.extend_from_slice(&self.control);
                        conn.send_stream(id).write(&preface).unwrap();
                        self.control_stream = Some(id);
                    }
                    quinn_proto::Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                        while let Some(id) = conn.streams().accept(Dir::Bi) {
                            self.requests.insert(id, Vec::new());
                            ready.push(id);
                        }
                    }
                    quinn_proto::Event::Stream(StreamEvent::Readable { id })
                        if id.dir() == Dir::Bi =>
                    {
                        ready.push(id)
                    }
                    quinn_proto::Event::ConnectionLost { reason } => self.lost = Some(reason),
                    _ => {}
                }
            }
            for id in ready {
                {
                    let mut fin = false;
                    let mut stream = conn.recv_stream(id);
                    let mut chunks = stream.read(true).unwrap();
                    while let Ok(Some(chunk)) = chunks.next(usize::MAX) {
                        self.requests.get_mut(&id).unwrap().extend_from_slice(&chunk.bytes);
                    }
                    if let Ok(None) = chunks.next(usize::MAX) {
                        fin = true;
                    }
                    let _ = chunks.finalize();
                    if fin {
                        self.served += 1;
                        match self.answer {
                            Answer::Ok(n) => {
                                let mut block = Vec::new();
                                let length = n.to_string();
                                qpack::encode(
                                    [
                                        (&b":status"[..], &b"200"[..]),
                                        (b"content-length", length.as_bytes()),
                                    ],
                                    &mut block,
                                );
                                let mut out = Vec::new();
                                frame::frame(frame::HEADERS, &block, &mut out);
                                frame::frame(frame::DATA, &vec![b'x'; n], &mut out);
                                let mut send = conn.send_stream(id);
                                assert_eq!(send.write(&out).unwrap(), out.len());
                                send.finish().unwrap();
                            }
                            Answer::Reset(code) => {
                                conn.send_stream(id).reset(VarInt::from_u64(code).unwrap()).unwrap()
                            }
                            Answer::Close(code) => {
                                conn.close(now, VarInt::from_u64(code).unwrap(), "going".into())
                            }
                        }
                    }
                }
            }
        }

        /// Sends frames on its control stream.
        fn control(&mut self, frames: &[u8]) {
            let (_, conn) = self.conn.as_mut().unwrap();
            conn.send_stream(self.control_stream.unwrap()).write(frames).unwrap();
        }

        fn transmit(&mut self, now: Instant, out: &mut Vec<u8>) -> Option<usize> {
            out.clear();
            if let Some(answer) = self.answers.pop() {
                out.extend_from_slice(&answer);
                return Some(out.len());
            }
            let (_, conn) = self.conn.as_mut()?;
            conn.poll_transmit(now, 1, out).map(|t| t.size)
        }
    }

    /// Passes datagrams both ways until neither side has any, the clock
    /// moving 1 ms a round; the client's events.
    fn exchange(client: &mut Connection, server: &mut Server, now: &mut Instant) -> Vec<Event> {
        let mut buf = Vec::new();
        let mut events = Vec::new();
        for _ in 0..1000 {
            let mut quiet = true;
            while let Some(n) = client.transmit(*now, &mut buf) {
                server.receive(*now, &buf[..n]);
                quiet = false;
            }
            while let Some(n) = server.transmit(*now, &mut buf) {
                client.receive(*now, &buf[..n]);
                quiet = false;
            }
            events.extend(std::iter::from_fn(|| client.poll()));
            if quiet {
                // Timers due soon (delayed acknowledgements, loss
                // detection) go off; the idle timeout does not.
                let server_timer = server.conn.as_mut().and_then(|(_, conn)| conn.poll_timeout());
                let next = client.timeout().into_iter().chain(server_timer).min();
                match next {
                    Some(at) if at <= *now + Duration::from_millis(200) => {
                        *now = (*now).max(at);
                        client.on_timeout(*now);
                        if let Some((_, conn)) = server.conn.as_mut() {
                            conn.handle_timeout(*now);
                        }
                        server.process(*now);
                        events.extend(std::iter::from_fn(|| client.poll()));
                        continue;
                    }
                    _ => return events,
                }
            }
            *now += Duration::from_millis(1);
        }
        panic!("the exchange never went quiet");
    }

    fn request() -> Vec<u8> {
        let mut block = Vec::new();
        qpack::encode(
            [
                (&b":method"[..], &b"GET"[..]),
                (b":scheme", b"https"),
                (b":authority", b"localhost"),
                (b":path", b"/"),
            ],
            &mut block,
        );
        let mut out = Vec::new();
        frame::frame(frame::HEADERS, &block, &mut out);
        out
    }

    /// A client (capturing) starting its handshake with `server`, whose
    /// ALPN is `alpn`; the client's events until the exchange went quiet.
    fn handshake(
        alpn: &[u8],
        max_streams: u32,
        answer: Answer,
        control: Option<&[u8]>,
    ) -> (Connection, Server, Instant, Vec<Event>) {
        let (server_config, client_config) = configs(alpn, max_streams);
        let mut server = Server::new(server_config, answer);
        if let Some(control) = control {
            server.control = control.to_vec();
        }
        let mut now = Instant::now();
        let mut client =
            Connection::connect(client_config, SERVER.parse().unwrap(), "localhost", true, now)
                .unwrap();
        assert_eq!(client.send(&request(), 0), Err(Refused::NotOpen), "before the handshake");
        let events = exchange(&mut client, &mut server, &mut now);
        (client, server, now, events)
    }

    fn connected(answer: Answer, max_streams: u32) -> (Connection, Server, Instant) {
        let (client, server, now, events) = handshake(b"h3", max_streams, answer, None);
        assert_eq!(events, [Event::Connected]);
        (client, server, now)
    }

    /// The code the server's connection was closed with by the client.
    fn closed_with(server: &Server) -> u64 {
        let Some(ConnectionError::ApplicationClosed(close)) = &server.lost else {
            panic!("{:?}", server.lost)
        };
        u64::from(close.error_code)
    }

    fn results(events: &[Event]) -> Vec<(u64, Result<u16, u64>)> {
        let mut out: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                Event::Response { token, result } => {
                    Some((*token, result.as_ref().map(|r| r.status).map_err(|e| e.code)))
                }
                _ => None,
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn requests_get_their_responses() {
        let (mut client, mut server, mut now) = connected(Answer::Ok(5000), 100);
        for token in 0..3 {
            client.send(&request(), token).unwrap();
        }
        assert_eq!(client.in_flight(), 3);
        let events = exchange(&mut client, &mut server, &mut now);
        assert_eq!(results(&events), [(0, Ok(200)), (1, Ok(200)), (2, Ok(200))]);
        // Each response's head is told before its end.
        let heads = events.iter().filter(|e| matches!(e, Event::Head { .. })).count();
        assert_eq!(heads, 3, "{events:?}");
        let first_end = events.iter().find(|e| matches!(e, Event::Response { .. }));
        let Some(Event::Response { result: Ok(response), .. }) = first_end else {
            panic!("{events:?}")
        };
        assert_eq!(response.body_bytes, 5000);
        assert_eq!(
            response.captured.as_ref().unwrap().headers,
            [("content-length".into(), "5000".into())]
        );
        assert_eq!((client.in_flight(), server.served), (0, 3));
    }

    #[test]
    fn a_body_beyond_the_streams_window_goes_out_as_it_opens() {
        let (mut client, mut server, mut now) = connected(Answer::Ok(2), 100);
        let mut frames = request();
        frame::frame(frame::DATA, &vec![b'b'; 3 << 20], &mut frames);
        client.send(&frames, 0).unwrap();
        let events = exchange(&mut client, &mut server, &mut now);
        assert_eq!(results(&events), [(0, Ok(200))]);
        let received = server.requests.values().map(Vec::len).sum::<usize>();
        assert_eq!(received, frames.len(), "the whole request reached the server");
    }

    #[test]
    fn the_servers_stream_limit_holds_requests_back() {
        let (mut client, mut server, mut now) = connected(Answer::Ok(10), 2);
        client.send(&request(), 0).unwrap();
        client.send(&request(), 1).unwrap();
        assert_eq!(client.send(&request(), 2), Err(Refused::NoStream));
        let events = exchange(&mut client, &mut server, &mut now);
        assert_eq!(results(&events), [(0, Ok(200)), (1, Ok(200))]);
        assert!(events.contains(&Event::StreamsAvailable), "{events:?}");
        client.send(&request(), 2).unwrap();
        let events = exchange(&mut client, &mut server, &mut now);
        assert_eq!(results(&events), [(2, Ok(200))]);
    }

    #[test]
    fn a_reset_stream_ends_its_request_with_the_code() {
        let (mut client, mut server, mut now) =
            connected(Answer::Reset(error::REQUEST_REJECTED), 100);
        client.send(&request(), 7).unwrap();
        let events = exchange(&mut client, &mut server, &mut now);
        assert_eq!(results(&events), [(7, Err(error::REQUEST_REJECTED))]);
    }

    #[test]
    fn a_goaway_rejects_the_requests_above_it_and_refuses_new_ones() {
        let (mut client, mut server, mut now) = connected(Answer::Ok(10), 100);
        // Streams 0 and 4; the server will process 0 only.
        client.send(&request(), 0).unwrap();
        client.send(&request(), 1).unwrap();
        let mut goaway = Vec::new();
        frame::frame(frame::GOAWAY, &[0x04], &mut goaway);
        server.control(&goaway);
        let events = exchange(&mut client, &mut server, &mut now);
        assert!(events.contains(&Event::GoAway { stream_id: 4 }), "{events:?}");
        assert_eq!(results(&events), [(0, Ok(200)), (1, Err(error::REQUEST_REJECTED))]);
        assert_eq!(client.send(&request(), 2), Err(Refused::NotOpen));
    }

    #[test]
    fn a_connection_closed_by_the_server_ends_every_request_and_says_why() {
        let (mut client, mut server, mut now) =
            connected(Answer::Close(error::INTERNAL_ERROR), 100);
        client.send(&request(), 0).unwrap();
        client.send(&request(), 1).unwrap();
        let events = exchange(&mut client, &mut server, &mut now);
        assert_eq!(
            results(&events),
            [(0, Err(error::REQUEST_INCOMPLETE)), (1, Err(error::REQUEST_INCOMPLETE))]
        );
        let Some(Event::Closed { reason }) = events.last() else { panic!("{events:?}") };
        assert_eq!(reason, "the server closed the connection: H3_INTERNAL_ERROR (going)");
        assert_eq!(client.send(&request(), 2), Err(Refused::NotOpen));
    }

    #[test]
    fn closing_ends_the_requests_in_flight_once() {
        let (mut client, mut server, mut now) = connected(Answer::Ok(10), 100);
        client.send(&request(), 0).unwrap();
        client.close(now);
        let events = exchange(&mut client, &mut server, &mut now);
        assert_eq!(results(&events), [(0, Err(error::REQUEST_INCOMPLETE))]);
        let closed: Vec<_> = events.iter().filter(|e| matches!(e, Event::Closed { .. })).collect();
        assert_eq!(closed, [&Event::Closed { reason: "pace closed the connection".into() }]);
        assert_eq!(closed_with(&server), error::NO_ERROR);
    }

    #[test]
    fn a_control_stream_without_settings_first_closes_the_connection() {
        let mut goaway_first = Vec::new();
        frame::frame(frame::GOAWAY, &[0x00], &mut goaway_first);
        let (_, server, _, events) = handshake(b"h3", 100, Answer::Ok(1), Some(&goaway_first));
        let Some(Event::Closed { reason }) = events.last() else { panic!("{events:?}") };
        assert!(reason.contains("H3_MISSING_SETTINGS"), "{reason}");
        // The server was told the code.
        assert_eq!(closed_with(&server), error::MISSING_SETTINGS);
    }

    #[test]
    fn a_server_without_h3_fails_the_handshake_in_words() {
        let (_, _, _, events) = handshake(b"h2", 100, Answer::Ok(1), None);
        let Some(Event::Closed { reason }) = events.last() else { panic!("{events:?}") };
        assert!(
            reason.starts_with("the server does not speak HTTP/3: it offered no h3"),
            "{reason}"
        );
    }
}
