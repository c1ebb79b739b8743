//! The server against std::net clients on 127.0.0.1 (port 0, bounded
//! time): keep-alive, pipelining, every endpoint, timing, TLS.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::timing::stretched;

const IO_TIMEOUT: Duration = Duration::from_secs(5);

fn server(opts: ServeOptions) -> ServerHandle {
    start(ServeOptions { bind: "127.0.0.1:0".parse().unwrap(), ..opts }).unwrap()
}

fn default_server() -> ServerHandle {
    server(ServeOptions::default())
}

fn connect(server: &ServerHandle) -> BufReader<TcpStream> {
    let stream = TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    BufReader::new(stream)
}

fn send(client: &mut BufReader<TcpStream>, request: &str) {
    client.get_mut().write_all(request.as_bytes()).unwrap();
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n")
}

/// A response as the test client read it.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    trailers: Vec<String>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn text(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap()
    }
}

fn read_line(reader: &mut impl BufRead) -> String {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.ends_with("\r\n"), "line not terminated by CRLF: {line:?}");
    line.truncate(line.len() - 2);
    line
}

/// Reads one response; `head` says it answers a HEAD request.
fn read_reply(reader: &mut impl BufRead, head: bool) -> Reply {
    let status_line = read_line(reader);
    let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        let line = read_line(reader);
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(": ").unwrap();
        headers.push((name.to_string(), value.to_string()));
    }
    let mut reply = Reply { status, headers, body: Vec::new(), trailers: Vec::new() };
    if head || status == 100 || status == 204 || status == 304 {
        return reply;
    }
    if let Some(length) = reply.header("Content-Length") {
        reply.body = vec![0; length.parse().unwrap()];
        reader.read_exact(&mut reply.body).unwrap();
    } else if reply.header("Transfer-Encoding") == Some("chunked") {
        read_chunked(reader, &mut reply);
    } else {
        reader.read_to_end(&mut reply.body).unwrap();
    }
    reply
}

fn read_chunked(reader: &mut impl BufRead, reply: &mut Reply) {
    loop {
        let size = usize::from_str_radix(&read_line(reader), 16).unwrap();
        if size == 0 {
            break;
        }
        let start = reply.body.len();
        reply.body.resize(start + size, 0);
        reader.read_exact(&mut reply.body[start..]).unwrap();
        assert_eq!(read_line(reader), "");
    }
    loop {
        let line = read_line(reader);
        if line.is_empty() {
            return;
        }
        reply.trailers.push(line);
    }
}

fn request(client: &mut BufReader<TcpStream>, request: &str) -> Reply {
    send(client, request);
    read_reply(client, request.starts_with("HEAD"))
}

/// True if the server closed the connection (reads the end of stream).
fn closed(client: &mut BufReader<TcpStream>) -> bool {
    let mut rest = Vec::new();
    client.read_to_end(&mut rest).is_ok() && rest.is_empty()
}

#[test]
fn keep_alive_serves_a_sequence_on_one_connection() {
    let server = default_server();
    let mut client = connect(&server);
    for _ in 0..5 {
        let reply = request(&mut client, &get("/"));
        assert_eq!(reply.status, 200);
        assert_eq!(reply.text(), "Hello, World!");
        assert_eq!(reply.header("Content-Type"), Some("text/plain"));
        assert_eq!(reply.header("Connection"), None);
    }
    let stats = server.stats();
    assert_eq!((stats.connections, stats.requests), (1, 5));
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let server = default_server();
    let mut client = connect(&server);
    send(&mut client, &[get("/status/201"), get("/status/202"), get("/status/203")].concat());
    for status in [201, 202, 203] {
        assert_eq!(read_reply(&mut client, false).status, status);
    }
    assert!(server.stats().max_requests_per_read >= 3);
}

#[test]
fn head_gets_headers_only() {
    let server = server(ServeOptions { body_size: 30, ..ServeOptions::default() });
    let mut client = connect(&server);
    let reply = request(&mut client, "HEAD / HTTP/1.1\r\n\r\n");
    assert_eq!(reply.header("Content-Length"), Some("30"));
    // No body bytes came: the next response starts right away.
    let reply = request(&mut client, &get("/"));
    assert_eq!(reply.text(), "Hello, World!\nHello, World!\nHe");
}

#[test]
fn echo_reflects_the_request() {
    let server = default_server();
    let mut client = connect(&server);
    let reply = request(
        &mut client,
        "POST /echo?x=1 HTTP/1.1\r\nHost: h\r\nX-Custom:  v 1\r\nContent-Length: 5\r\n\r\nhello",
    );
    assert_eq!(reply.text(), "POST /echo?x=1\nHost: h\nX-Custom: v 1\nContent-Length: 5\n\nhello");
    let chunked = "PUT /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
                   3\r\nabc\r\n2;ext\r\nde\r\n0\r\nT: t\r\n\r\n";
    let reply = request(&mut client, chunked);
    assert_eq!(reply.text(), "PUT /echo\nTransfer-Encoding: chunked\n\nabcde");
}

#[test]
fn chunked_response_is_well_framed() {
    let server = default_server();
    let mut client = connect(&server);
    let reply = request(&mut client, &get("/chunked?n=5"));
    assert_eq!(reply.header("Content-Length"), None);
    assert_eq!(reply.body.len(), 5 * 64);
    assert!(reply.body.starts_with(b"abcdefghijklmnopqrstuvwxyz"));
    assert_eq!(reply.trailers, ["X-Trailer: end"]);
    // The connection is still in step after the trailer.
    assert_eq!(request(&mut client, &get("/chunked")).body.len(), 3 * 64);
}

#[test]
fn close_and_eof_end_the_connection() {
    let server = default_server();
    let mut client = connect(&server);
    let reply = request(&mut client, &get("/close"));
    assert_eq!(reply.header("Connection"), Some("close"));
    assert_eq!(reply.text(), "Hello, World!");
    assert!(closed(&mut client));

    let mut client = connect(&server);
    let reply = request(&mut client, &get("/eof"));
    assert_eq!(reply.header("Content-Length"), None);
    assert_eq!(reply.text(), "Hello, World!", "body delimited by the close");
}

#[test]
fn http10_closes_unless_keep_alive() {
    let server = default_server();
    let mut client = connect(&server);
    let reply = request(&mut client, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(reply.header("Connection"), Some("keep-alive"));
    let reply = request(&mut client, "GET / HTTP/1.0\r\n\r\n");
    assert_eq!(reply.header("Connection"), Some("close"));
    assert!(closed(&mut client));
}

#[test]
fn malformed_request_gets_400_and_close() {
    let server = default_server();
    for garbage in ["NOT HTTP\r\n\r\n", "GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n"] {
        let mut client = connect(&server);
        let reply = request(&mut client, garbage);
        assert_eq!(reply.status, 400);
        assert_eq!(reply.header("Connection"), Some("close"));
        assert!(closed(&mut client));
    }
    let mut client = connect(&server);
    let reply = request(&mut client, &get("/status/abc"));
    assert_eq!(reply.status, 400, "bad argument: 400, connection kept");
    assert_eq!(request(&mut client, &get("/")).status, 200);
}

#[test]
fn endpoint_statuses_and_bodies() {
    let server = default_server();
    let mut client = connect(&server);
    let reply = request(&mut client, &get("/status/204"));
    assert_eq!((reply.status, reply.header("Content-Length")), (204, None));
    assert_eq!(request(&mut client, &get("/status/503")).status, 503);
    let reply = request(&mut client, &get("/auth"));
    assert_eq!((reply.status, reply.header("X-Token")), (200, Some("tok123")));
    assert_eq!(request(&mut client, &get("/resource")).status, 401);
    let reply = request(&mut client, "GET /resource HTTP/1.1\r\nX-Token: tok123\r\n\r\n");
    assert_eq!((reply.status, reply.text()), (200, "ok\n"));
    send(&mut client, &get("/continue"));
    assert_eq!(read_reply(&mut client, false).status, 100);
    assert_eq!(read_reply(&mut client, false).status, 200);
}

#[test]
fn large_bytes_body_is_streamed_intact() {
    let server = default_server();
    let mut client = connect(&server);
    let n = 3 * 1024 * 1024 + 7;
    let reply = request(&mut client, &get(&format!("/bytes/{n}")));
    assert_eq!(reply.body.len(), n);
    let line = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+\n";
    assert!(reply.body.iter().enumerate().all(|(i, &b)| b == line[i % 64]));
    assert_eq!(request(&mut client, &get("/bytes/0")).body.len(), 0);
}

#[test]
fn expect_continue_before_the_body() {
    let server = default_server();
    let mut client = connect(&server);
    send(&mut client, "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
    assert_eq!(read_reply(&mut client, false).status, 100);
    send(&mut client, "abc");
    assert_eq!(read_reply(&mut client, false).status, 200);
}

#[test]
fn added_latency_is_respected() {
    let _timing = crate::timing::lock();
    let server = server(ServeOptions { latency: Duration::from_millis(20), ..Default::default() });
    let mut client = connect(&server);
    for _ in 0..3 {
        let sent = Instant::now();
        assert_eq!(request(&mut client, &get("/")).status, 200);
        let elapsed = sent.elapsed();
        assert!(elapsed >= Duration::from_millis(20), "{elapsed:?}");
        assert!(elapsed < stretched(Duration::from_millis(500)), "{elapsed:?}");
    }
    let sent = Instant::now();
    request(&mut client, &get("/delay/30"));
    assert!(sent.elapsed() >= Duration::from_millis(50), "/delay adds to the latency");
}

#[test]
fn stall_holds_responses_until_it_ends() {
    let _timing = crate::timing::lock();
    let stall = Stall { at: Duration::from_millis(200), length: Duration::from_millis(300) };
    let started = Instant::now();
    let server = server(ServeOptions { stall: Some(stall), ..Default::default() });
    let mut early = connect(&server);
    assert_eq!(request(&mut early, &get("/")).status, 200);
    // Answered before the stall; a machine too slow to tell proves nothing.
    if started.elapsed() >= Duration::from_millis(200) {
        return;
    }
    std::thread::sleep(Duration::from_millis(250).saturating_sub(started.elapsed()));
    // Two connections during the stall: both wait for its end, in order.
    let mut late = connect(&server);
    send(&mut early, &get("/status/201"));
    send(&mut late, &[get("/status/202"), get("/status/203")].concat());
    assert_eq!(read_reply(&mut early, false).status, 201);
    assert!(started.elapsed() >= Duration::from_millis(500), "{:?}", started.elapsed());
    assert_eq!(read_reply(&mut late, false).status, 202);
    assert_eq!(read_reply(&mut late, false).status, 203);
    assert!(started.elapsed() < stretched(Duration::from_secs(2)));
}

#[test]
fn hang_is_never_answered() {
    let server = default_server();
    let mut client = connect(&server);
    client.get_ref().set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    send(&mut client, &get("/hang"));
    let mut byte = [0];
    let error = client.read(&mut byte).unwrap_err();
    assert!(matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut));
}

#[test]
fn stats_endpoint_counts_everything_but_itself() {
    let server = default_server();
    let mut client = connect(&server);
    send(&mut client, &[get("/"), get("/a"), get("/b")].concat());
    for _ in 0..3 {
        read_reply(&mut client, false);
    }
    let mut second = connect(&server);
    let reply = request(&mut second, &get("/stats"));
    assert_eq!(reply.header("Content-Type"), Some("application/json"));
    assert_eq!(reply.text(), r#"{"connections":2,"requests":3,"max_requests_per_read":3}"#);
}

#[test]
fn several_threads_share_the_port_and_stop_promptly() {
    let server = server(ServeOptions { threads: 3, ..Default::default() });
    let mut clients: Vec<_> = (0..12).map(|_| connect(&server)).collect();
    for client in &mut clients {
        assert_eq!(request(client, &get("/")).status, 200);
    }
    assert_eq!(server.stats().requests, 12);
    let stopping = Instant::now();
    server.stop();
    assert!(stopping.elapsed() < Duration::from_secs(1));
    assert!(closed(&mut clients[0]), "connections are closed on stop");
}

#[test]
fn tls_handshake_and_get() {
    let server = server(ServeOptions { tls: true, ..Default::default() });
    let mut roots = rustls::RootCertStore::empty();
    roots.add(server.certificate_der().unwrap().to_vec().into()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    for name in ["localhost", "127.0.0.1"] {
        let name = rustls::pki_types::ServerName::try_from(name).unwrap();
        let session = rustls::ClientConnection::new(Arc::new(config.clone()), name).unwrap();
        let socket = TcpStream::connect(server.addr()).unwrap();
        socket.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        let mut tls = BufReader::new(rustls::StreamOwned::new(session, socket));
        for _ in 0..2 {
            tls.get_mut().write_all(get("/").as_bytes()).unwrap();
            let reply = read_reply(&mut tls, false);
            assert_eq!((reply.status, reply.text()), (200, "Hello, World!"));
        }
        tls.get_mut().write_all(get("/eof").as_bytes()).unwrap();
        let reply = read_reply(&mut tls, false);
        assert_eq!(reply.text(), "Hello, World!", "close_notify ends the body cleanly");
    }
}

#[test]
fn requests_split_into_single_bytes_still_parse() {
    let server = default_server();
    let mut client = connect(&server);
    client.get_ref().set_nodelay(true).unwrap();
    let pipelined = [
        get("/status/201"),
        "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n".into(),
    ]
    .concat();
    for byte in pipelined.as_bytes() {
        client.get_mut().write_all(&[*byte]).unwrap();
    }
    assert_eq!(read_reply(&mut client, false).status, 201);
    assert!(read_reply(&mut client, false).text().ends_with("\n\nhi"));
}

#[test]
fn oversized_head_gets_400() {
    let server = default_server();
    let mut client = connect(&server);
    let huge = format!("GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n", "x".repeat(70_000));
    // The server may stop reading (and close) before all of it is sent.
    let _ = client.get_mut().write_all(huge.as_bytes());
    let reply = read_reply(&mut client, false);
    assert_eq!(reply.status, 400);
}

#[test]
fn garbage_never_takes_the_server_down() {
    let server = default_server();
    // A fixed pseudo-random byte stream (xorshift), with CRLFs sprinkled in
    // so that some of it reaches the header and chunk parsers.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for round in 0..50 {
        let mut bytes = if round % 2 == 0 {
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec()
        } else {
            Vec::new()
        };
        for _ in 0..2000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            bytes.push(if state.is_multiple_of(7) { b'\n' } else { state as u8 });
        }
        let mut client = connect(&server);
        let _ = client.get_mut().write_all(&bytes);
        let _ = client.get_mut().shutdown(std::net::Shutdown::Write);
        let mut answer = Vec::new();
        let _ = client.read_to_end(&mut answer);
    }
    let mut client = connect(&server);
    assert_eq!(request(&mut client, &get("/")).status, 200);
}

#[test]
fn half_closed_client_still_gets_its_answers() {
    let server = server(ServeOptions { latency: Duration::from_millis(10), ..Default::default() });
    let mut client = connect(&server);
    send(&mut client, &[get("/status/201"), get("/status/202")].concat());
    client.get_ref().shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(read_reply(&mut client, false).status, 201);
    assert_eq!(read_reply(&mut client, false).status, 202);
    assert!(closed(&mut client));
}

#[test]
fn client_gone_before_a_delayed_answer_is_harmless() {
    let server = default_server();
    for _ in 0..5 {
        let mut client = connect(&server);
        send(&mut client, &get("/delay/20"));
        drop(client);
    }
    std::thread::sleep(Duration::from_millis(60));
    let mut client = connect(&server);
    assert_eq!(request(&mut client, &get("/")).status, 200);
}

/// Caught by the serve_conn fuzz check: after the client's FIN, a `/hang`
/// at the head of the queue closed the connection at once, cutting short
/// the large response still being written before it.
#[test]
fn half_closed_client_gets_the_whole_answer_before_a_hang() {
    let server = default_server();
    let mut client = connect(&server);
    let n = 64 * 1024 * 1024;
    send(&mut client, &[get(&format!("/bytes/{n}")), get("/hang")].concat());
    client.get_ref().shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(read_reply(&mut client, false).body.len(), n);
    assert!(closed(&mut client));
}
