//! The HTTP side of `--metrics`: a listener thread answering `GET
//! /metrics` with the figures, one request per connection.
//!
//! Small and defensive rather than general, since anything that reaches
//! the port can connect: each connection gets its own short-lived thread,
//! its request head is bounded in size ([`MAX_HEAD`]) and in time, one
//! deadline for the whole head ([`HEAD_WITHIN`], not a timeout per read,
//! which a client sending a byte now and then would restart forever), and
//! so is the answer ([`ANSWER_WITHIN`]); the answer says `Connection:
//! close`. At most [`MAX_CONNECTIONS`] are served at once, and when all
//! are taken a new one closes the oldest: a scrape is over in
//! milliseconds, so the oldest connection is the one least likely to be a
//! scrape, and clients that hold connections open (slowly, or saying
//! nothing) cannot lock the scraper out. The engine never waits for any of
//! it: the figures are behind a mutex the collector holds only to add a
//! period, and a scrape only to write them out.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use super::exposition::{self, Format};
use super::figures::Figures;
use crate::blocking::{self, Deadline, HeadError};
use crate::http::stream::Stream;
use crate::signals::Stop;

/// Connections served at once; a new one beyond closes the oldest.
const MAX_CONNECTIONS: usize = 16;
/// The longest request head read.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client gets to send its whole request head (a scraper sends
/// it in one write, at once).
const HEAD_WITHIN: Duration = Duration::from_secs(5);
/// How long a client gets to take the whole answer (some tens of KB).
const ANSWER_WITHIN: Duration = Duration::from_secs(10);
/// After a refusal sent before the request was read whole, how long what
/// the client still sends is read (see [`drain`]).
const DRAIN_WITHIN: Duration = Duration::from_secs(1);

/// The connections being served, oldest first: the number each was
/// accepted as (its thread removes it by it) and a handle on its socket,
/// to close it from the listener's thread.
type Serving = Mutex<VecDeque<(u64, TcpStream)>>;

/// Serves `figures` on `listener` until the process ends.
pub fn spawn(listener: TcpListener, figures: Arc<Mutex<Figures>>) -> io::Result<()> {
    let serving: Arc<Serving> = Arc::new(Mutex::new(VecDeque::new()));
    thread::Builder::new().name("pace-metrics".into()).spawn(move || {
        for (number, stream) in (0u64..).zip(listener.incoming()) {
            // A failed accept (a reset before it, no file descriptors
            // left) only loses that connection.
            let Ok(stream) = stream else {
                thread::sleep(Duration::from_millis(10));
                continue;
            };
            let Ok(handle) = stream.try_clone() else { continue };
            make_room(&serving);
            lock(&serving).push_back((number, handle));
            let (figures, still_serving) = (figures.clone(), serving.clone());
            let spawned =
                thread::Builder::new().name("pace-metrics-conn".into()).spawn(move || {
                    let _ = serve(stream, &figures);
                    lock(&still_serving).retain(|(n, _)| *n != number);
                });
            if spawned.is_err() {
                lock(&serving).retain(|(n, _)| *n != number);
            }
        }
    })?;
    Ok(())
}

/// With every connection taken, closes the oldest: its thread's read or
/// write fails at once, and it ends.
fn make_room(serving: &Serving) {
    let mut serving = lock(serving);
    while serving.len() >= MAX_CONNECTIONS {
        if let Some((_, oldest)) = serving.pop_front() {
            let _ = oldest.shutdown(Shutdown::Both);
        }
    }
}

fn lock(serving: &Serving) -> MutexGuard<'_, VecDeque<(u64, TcpStream)>> {
    // The list is whole after every change, even if a thread panicked.
    serving.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Answers one request on `stream`.
fn serve(stream: TcpStream, figures: &Mutex<Figures>) -> io::Result<()> {
    let stream = Stream::from(stream);
    // Nothing stops these exchanges but their deadlines (and pace's exit).
    let head_deadline = Deadline::after(HEAD_WITHIN, &Stop::never());
    let answer_deadline = || Deadline::after(ANSWER_WITHIN, &Stop::never());
    let head = match blocking::read_head(&mut head_deadline.on(&stream), MAX_HEAD) {
        Ok(head) => head,
        Err(HeadError::TooLong) => {
            let deadline = answer_deadline();
            respond(
                &mut deadline.on(&stream),
                431,
                "text/plain",
                b"request head too large\n",
                true,
            )?;
            return drain(&stream);
        }
        // Closed, too slow or failed: nobody to answer.
        Err(HeadError::Closed(_)) => return Ok(()),
        Err(HeadError::Io(e)) => return Err(e),
    };
    let answer = answer(&head, |format| {
        // A panic elsewhere must not stop the scrapes: the figures are
        // whole after every update.
        let figures = figures.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        exposition::render(&figures, format)
    });
    let deadline = answer_deadline();
    let mut out = deadline.on(&stream);
    respond(&mut out, answer.status, answer.content_type, answer.body.as_bytes(), answer.full)
}

/// What to send back for a request head.
#[derive(Debug, PartialEq)]
struct Answer {
    status: u16,
    content_type: &'static str,
    body: String,
    /// Send the body (not for `HEAD`).
    full: bool,
}

/// The answer to the request `head` (all of it up to the blank line);
/// `render` writes the figures in a format.
fn answer(head: &[u8], render: impl FnOnce(Format) -> String) -> Answer {
    let plain = |status, body: &str| Answer {
        status,
        content_type: "text/plain; charset=utf-8",
        body: body.to_string(),
        full: true,
    };
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return plain(400, "bad request\n"),
    }
    let (Some(method), Some(target)) = (request.method, request.path) else {
        return plain(400, "bad request\n");
    };
    let path = target.split(['?', '#']).next().unwrap_or("");
    if path != "/metrics" {
        return plain(404, "not found: the figures are at /metrics\n");
    }
    if method != "GET" && method != "HEAD" {
        return plain(405, "only GET and HEAD\n");
    }
    let accept = request
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("accept"))
        .filter_map(|h| std::str::from_utf8(h.value).ok())
        .collect::<Vec<_>>()
        .join(",");
    let format = Format::accepted(Some(&accept));
    Answer {
        status: 200,
        content_type: format.content_type(),
        body: render(format),
        full: method == "GET",
    }
}

/// After an answer sent before the whole request was read: closes our
/// side and reads what the client still sends, for a while (at most
/// [`DRAIN_WITHIN`] and 1 MiB), so that the kernel does not reset the
/// connection (and lose the answer) on close.
fn drain(stream: &Stream) -> io::Result<()> {
    stream.shutdown(Shutdown::Write)?;
    let deadline = Deadline::after(DRAIN_WITHIN, &Stop::never());
    let _ = io::copy(&mut deadline.on(stream).take(1 << 20), &mut io::sink());
    Ok(())
}

fn respond(
    stream: &mut impl Write,
    status: u16,
    content_type: &str,
    body: &[u8],
    full: bool,
) -> io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Request Header Fields Too Large",
    };
    let allow = if status == 405 { "Allow: GET, HEAD\r\n" } else { "" };
    let mut response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         {allow}Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if full {
        response.extend_from_slice(body);
    }
    stream.write_all(&response)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer_to(head: &str) -> Answer {
        answer(head.as_bytes(), |format| format!("figures as {format:?}"))
    }

    #[test]
    fn metrics_in_the_format_asked_for() {
        let text = answer_to("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!((text.status, text.body.as_str(), text.full), (200, "figures as Text", true));
        assert_eq!(text.content_type, "text/plain; version=0.0.4; charset=utf-8");
        let openmetrics = answer_to(
            "GET /metrics?x=1 HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0\r\n\r\n",
        );
        assert_eq!(openmetrics.body, "figures as OpenMetrics");
        assert!(openmetrics.content_type.starts_with("application/openmetrics-text"));
        let head = answer_to("HEAD /metrics HTTP/1.0\r\n\r\n");
        assert_eq!((head.status, head.full), (200, false));
    }

    #[test]
    fn anything_else_is_refused() {
        assert_eq!(answer_to("GET / HTTP/1.1\r\n\r\n").status, 404);
        assert_eq!(answer_to("GET /metrics/x HTTP/1.1\r\n\r\n").status, 404);
        assert_eq!(answer_to("POST /metrics HTTP/1.1\r\n\r\n").status, 405);
        assert_eq!(answer_to("GET\r\n\r\n").status, 400);
        assert_eq!(answer_to("\x00\x01 junk\r\n\r\n").status, 400);
    }

    #[test]
    fn a_real_connection_gets_an_answer_and_a_close() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let figures = Arc::new(Mutex::new(Figures::new("0/1".into(), None)));
        spawn(listener, figures).unwrap();
        let get = |request: &[u8]| {
            let mut stream = TcpStream::connect(addr).unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            stream.write_all(request).unwrap();
            let mut response = String::new();
            stream.read_to_string(&mut response).unwrap();
            response
        };
        let response = get(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        assert!(response.contains("\r\nConnection: close\r\n"));
        let body = response.split("\r\n\r\n").nth(1).unwrap();
        let length: usize = response
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(body.len(), length);
        assert!(body.contains("pace_requests_total{shard=\"0/1\"} 0\n"));
        // A head that never ends is cut off.
        let mut huge = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
        huge.resize(MAX_HEAD + 8192, b'a');
        assert!(get(&huge).starts_with("HTTP/1.1 431 "));
    }
}
