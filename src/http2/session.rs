//! An HTTP/2 session: nghttp2's session API (the C library h2load is built
//! on, vendored and compiled by `libnghttp2-sys`), for the client and the
//! built-in server alike. This and the session's allocator ([`super::pool`])
//! are the only modules with unsafe code for HTTP/2; what they offer is
//! safe.
//!
//! nghttp2 does no I/O here. [`Session::receive`] takes the bytes of one
//! read and nghttp2 calls back, synchronously, for everything in them: the
//! callbacks only note what happened (a header field, body bytes, a stream
//! that closed, a GOAWAY) in the session's [`State`], so every message a
//! read completed is known when `receive` returns, and can be stamped with
//! that read's arrival time. [`Session::send`] hands out the frames to
//! write: HEADERS and DATA of what was submitted, and what nghttp2 answers
//! by itself (SETTINGS and PING acknowledgements, WINDOW_UPDATE).
//!
//! Each stream has a *slot*, a small index the caller chooses (a client's
//! stream slot of its connection) or the session assigns (a server's
//! request), stored as the stream's user data; the message received on it
//! is kept in that slot until taken.
//!
//! Callbacks must not unwind into C: they use no indexing that can panic
//! and allocate only into the state's vectors.

use std::ffi::{c_void, CStr};
use std::ptr;
use std::sync::Arc;

use libnghttp2_sys as ng;

use super::pool::Pool;
use crate::grpc_status;

/// Flow-control windows, for streams and for the connection, as large as
/// h2load's (`-w 30 -W 30`): a 64 KiB default window would cap the
/// throughput of large responses at 64 KiB per round trip.
const WINDOW: u32 = (1 << 30) - 1;

/// The HPACK dynamic tables, both ways: nghttp2's default, and bounded
/// whatever the peer allows (a peer offering a larger table does not grow
/// our encoder's memory).
const HEADER_TABLE: u32 = 4096;

/// The largest header list a captured message keeps, counted as RFC 7541
/// counts one (name, value and [`FIELD_OVERHEAD`] per field): HTTP/1.1's
/// bound on a head. nghttp2 leaves this bound to the application, and
/// without it a header block of 150 kB that names a 4 kB table entry again
/// and again decodes to 600 MB; a stream past it is reset.
const MAX_HEADER_LIST: usize = 64 * 1024;

/// What RFC 7541 4.1 adds to each field's name and value in a header list.
const FIELD_OVERHEAD: usize = 32;

/// Which end of the connection the session is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Client,
    /// A server that allows this many concurrent streams per connection.
    Server {
        max_concurrent_streams: u32,
    },
}

/// A message received on a stream: a response (client) or a request
/// (server).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    /// `:status` of the final response (client); 0 until it came.
    pub status: u16,
    /// Every header field, pseudo-headers (`:path`, `:status`...) first as
    /// received, then trailers; kept only when the session captures.
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
    /// The body; kept only when the session captures.
    pub body: Vec<u8>,
    /// Body bytes received (counted always).
    pub body_len: u64,
    /// The peer reset the stream (`RST_STREAM`), rather than this end.
    pub reset_by_peer: bool,
    /// The peer ended its side of the stream (END_STREAM): the message is
    /// whole. A stream that closes without it (a `RST_STREAM` with
    /// `NO_ERROR` mid-body) carried only part of one.
    pub ended: bool,
    /// The `grpc-status` of a gRPC response (in its trailers, or its only
    /// header block), noted whether or not the session captures.
    pub grpc_status: Option<u8>,
    /// Its `content-type` is gRPC's (`application/grpc`, `+proto`...).
    pub grpc_content: bool,
    /// Whole gRPC messages in the body, when the session counts them
    /// ([`Session::count_grpc_messages`]).
    pub grpc_messages: u32,
    /// Where the body's gRPC framing stands.
    framing: Framing,
    /// The size of `fields` as a header list ([`MAX_HEADER_LIST`]).
    header_list_size: usize,
}

/// Where a body's gRPC framing stands: each message is a flag byte, a
/// 4-byte big-endian length, then that many bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Framing {
    /// Bytes of the 5-byte prefix read so far.
    prefix_read: u8,
    /// The length's bytes.
    length: [u8; 4],
    /// Bytes of the message still to come.
    left: u64,
}

impl Framing {
    /// Reads `data`; returns how many messages it completed.
    fn read(&mut self, mut data: &[u8]) -> u32 {
        let mut completed = 0;
        while !data.is_empty() {
            if self.left > 0 {
                let taken = self.left.min(data.len() as u64);
                self.left -= taken;
                data = &data[taken as usize..];
                completed += u32::from(self.left == 0);
                continue;
            }
            let taken = usize::from(5 - self.prefix_read).min(data.len());
            for &byte in &data[..taken] {
                if self.prefix_read > 0 {
                    self.length[usize::from(self.prefix_read) - 1] = byte;
                }
                self.prefix_read += 1;
            }
            data = &data[taken..];
            if self.prefix_read == 5 {
                self.prefix_read = 0;
                self.left = u64::from(u32::from_be_bytes(self.length));
                completed += u32::from(self.left == 0);
            }
        }
        completed
    }
}

/// What a read (or a send) brought about, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The stream of `slot` closed: with `code` 0 after both ends finished
    /// it (its message is complete), else reset with that error code
    /// (`RST_STREAM` from the peer, a stream error, a GOAWAY that did not
    /// cover it: nghttp2 closes those with `REFUSED_STREAM`).
    Closed { slot: usize, stream_id: i32, code: u32 },
    /// Server: the request on `slot` is complete (its END_STREAM came).
    Request { slot: usize, stream_id: i32 },
    /// The peer will process no stream above `last_stream_id`.
    GoAway { last_stream_id: i32, code: u32 },
    /// The peer's SETTINGS arrived (the first one makes a client's
    /// connection ready: its stream limit is known).
    Settings,
    /// Client: the response on `slot` begins (its first HEADERS frame).
    Response { slot: usize, stream_id: i32 },
    /// A whole gRPC message of the body on `slot` arrived, the `index`th
    /// (from 0; when the session counts them).
    GrpcMessage { slot: usize, stream_id: i32, index: u32 },
}

/// Bytes to send as a message's body.
#[derive(Clone, Debug)]
pub enum Body {
    /// `bytes[start..end]`.
    Bytes { bytes: Arc<[u8]>, start: usize, end: usize },
    /// `len` bytes of `pattern` repeated, from `offset` into it.
    Repeat { pattern: &'static [u8], offset: usize, len: u64 },
    /// Bytes given as the stream goes ([`Session::send_more`]):
    /// `queued[at..]` are not sent yet; `finished`: no more will come.
    /// With nothing queued and more to come, the stream waits (its DATA
    /// is deferred).
    Stream { queued: Vec<u8>, at: usize, finished: bool },
}

impl Body {
    /// Copies the next bytes into `buf`; returns how many, and whether the
    /// body is done.
    fn fill(&mut self, buf: &mut [u8]) -> (usize, bool) {
        match self {
            Body::Bytes { bytes, start, end } => {
                let part = bytes.get(*start..*end).unwrap_or_default();
                let n = part.len().min(buf.len());
                buf[..n].copy_from_slice(&part[..n]);
                *start += n;
                (n, *start >= *end)
            }
            Body::Repeat { pattern, offset, len } => {
                let want = usize::try_from(*len).unwrap_or(usize::MAX).min(buf.len());
                let mut n = 0;
                while n < want && !pattern.is_empty() {
                    let from = &pattern[*offset % pattern.len()..];
                    let take = from.len().min(want - n);
                    buf[n..n + take].copy_from_slice(&from[..take]);
                    *offset = (*offset + take) % pattern.len();
                    n += take;
                }
                *len -= n as u64;
                (n, *len == 0 || pattern.is_empty())
            }
            Body::Stream { queued, at, finished } => {
                let n = (queued.len() - *at).min(buf.len());
                buf[..n].copy_from_slice(&queued[*at..*at + n]);
                *at += n;
                if *at == queued.len() {
                    queued.clear();
                    *at = 0;
                }
                (n, *finished && queued.is_empty())
            }
        }
    }
}

/// Header fields sent after a body (a gRPC response's `grpc-status`).
pub type Trailers = &'static [(&'static [u8], &'static [u8])];

/// What the callbacks write into (the session's user data).
struct State {
    role: Role,
    capture: bool,
    messages: Vec<Message>,
    /// The body each slot is sending.
    bodies: Vec<Option<Body>>,
    /// The trailers each slot sends after its body.
    trailers: Vec<Option<Trailers>>,
    /// Server: slots free for new requests.
    free: Vec<usize>,
    events: Vec<Event>,
    /// nghttp2's latest complaint about what it received.
    complaint: Option<String>,
    /// Why this end ended the connection (it sent a GOAWAY with an error
    /// code): the connection is over.
    failure: Option<String>,
    /// How much of a captured body to keep, given its message so far
    /// ([`Session::keep_bodies_up_to`]); None: all of it.
    kept_body: Option<fn(&Message) -> usize>,
    /// Count the gRPC messages of bodies ([`Session::count_grpc_messages`]).
    count_grpc: bool,
    /// The stream looked up last, and its slot. A response's header
    /// fields, body and end come one after another for one stream, and a
    /// lookup in nghttp2's stream map costs more than handling a field.
    /// A stream keeps its slot until it closes, and its id is never used
    /// again in the session.
    recent: Option<(i32, usize)>,
}

impl State {
    /// The slot of a stream's user data (slot + 1; 0 is none).
    fn slot_of(user_data: *mut c_void) -> Option<usize> {
        (user_data as usize).checked_sub(1)
    }

    fn message(&mut self, slot: usize) -> Option<&mut Message> {
        self.messages.get_mut(slot)
    }

    /// Grows the slot tables to hold `slot`.
    fn make_room(&mut self, slot: usize) {
        if slot >= self.messages.len() {
            self.messages.resize_with(slot + 1, Message::default);
            self.bodies.resize_with(slot + 1, || None);
            self.trailers.resize_with(slot + 1, || None);
        }
    }
}

/// An HTTP/2 session over bytes the caller reads and writes.
pub struct Session {
    raw: *mut ng::nghttp2_session,
    /// The callbacks' state, owned through this one pointer: made by
    /// `Box::into_raw` in [`Session::new`], freed in `Drop` after the
    /// session. nghttp2 holds the same pointer as its user data. No `Box`
    /// or lasting reference to the state exists, so nothing this side does
    /// invalidates nghttp2's pointer (as writing through a `Box` would,
    /// under Rust's aliasing rules); every access, here and in the
    /// callbacks, takes a reference from the pointer for its own duration
    /// ([`Session::state`], [`Session::state_mut`], [`state`]).
    state: *mut State,
    /// The memory nghttp2 allocates for this session, owned through this
    /// pointer as the state is (`Box::into_raw` in [`Session::new`], freed
    /// in `Drop` after the session); only nghttp2 uses it.
    pool: *mut Pool,
    /// Scratch for the header fields of a submit, reused.
    nva: Vec<ng::nghttp2_nv>,
}

// SAFETY: the session and its state are owned by this value alone and used
// by one thread at a time (a worker builds it, or moves it to its thread
// before use); nghttp2 keeps no thread-local state.
unsafe impl Send for Session {}

impl Session {
    /// A new session, with its connection preface (client) and SETTINGS
    /// queued for [`Session::send`]. With `capture`, every header field
    /// and body is kept (else only a response's `:status`).
    pub fn new(role: Role, capture: bool) -> Result<Session, String> {
        let state = Box::into_raw(Box::new(State {
            role,
            capture,
            messages: Vec::new(),
            bodies: Vec::new(),
            trailers: Vec::new(),
            free: Vec::new(),
            events: Vec::new(),
            complaint: None,
            failure: None,
            kept_body: None,
            count_grpc: false,
            recent: None,
        }));
        let pool = Box::into_raw(Box::new(Pool::new()));
        // From here on, Drop frees the state and the pool (and the session
        // once made).
        let mut session = Session { raw: ptr::null_mut(), state, pool, nva: Vec::new() };
        let user_data = session.state;
        // SAFETY: the callbacks, the option and the allocator are made,
        // used and freed here (the session copies them). `user_data` and
        // the pool are their own pointers, which outlive the session
        // (freed after it in Drop).
        let rv = unsafe {
            let mut mem = Pool::allocator(pool);
            let mut callbacks = ptr::null_mut();
            let mut option = ptr::null_mut();
            if ng::nghttp2_session_callbacks_new(&mut callbacks) != 0
                || ng::nghttp2_option_new(&mut option) != 0
            {
                ng::nghttp2_session_callbacks_del(callbacks);
                return Err("nghttp2: out of memory".into());
            }
            ng::nghttp2_session_callbacks_set_on_begin_headers_callback(
                callbacks,
                Some(on_begin_headers),
            );
            ng::nghttp2_session_callbacks_set_on_header_callback(callbacks, Some(on_header));
            ng::nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
                callbacks,
                Some(on_data_chunk),
            );
            ng::nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, Some(on_frame));
            ng::nghttp2_session_callbacks_set_on_stream_close_callback(
                callbacks,
                Some(on_stream_close),
            );
            ng::nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, Some(on_sent));
            ng::nghttp2_session_callbacks_set_error_callback2(callbacks, Some(on_complaint));
            ng::nghttp2_option_set_max_deflate_dynamic_table_size(option, HEADER_TABLE as usize);
            let rv = match role {
                Role::Client => ng::nghttp2_session_client_new3(
                    &mut session.raw,
                    callbacks,
                    user_data.cast(),
                    option,
                    &mut mem,
                ),
                Role::Server { .. } => ng::nghttp2_session_server_new3(
                    &mut session.raw,
                    callbacks,
                    user_data.cast(),
                    option,
                    &mut mem,
                ),
            };
            ng::nghttp2_session_callbacks_del(callbacks);
            ng::nghttp2_option_del(option);
            rv
        };
        if rv != 0 {
            // Nothing to delete: the session was not made.
            session.raw = ptr::null_mut();
            return Err(library_error(rv as isize));
        }
        let first = match role {
            Role::Client => setting(ng::NGHTTP2_SETTINGS_ENABLE_PUSH, 0),
            Role::Server { max_concurrent_streams } => {
                setting(ng::NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, max_concurrent_streams)
            }
        };
        // A server says how large a header list it takes; a client keeps
        // its SETTINGS as they were (a captured response is bounded all
        // the same).
        let header_list = match role {
            Role::Client => None,
            Role::Server { .. } => {
                Some(setting(ng::NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST as u32))
            }
        };
        let settings: Vec<ng::nghttp2_settings_entry> = [
            first,
            setting(ng::NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, WINDOW),
            setting(ng::NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, HEADER_TABLE),
        ]
        .into_iter()
        .chain(header_list)
        .collect();
        // SAFETY: a live session; nghttp2 copies the entries.
        let rv = unsafe {
            match ng::nghttp2_submit_settings(
                session.raw,
                ng::NGHTTP2_FLAG_NONE as u8,
                settings.as_ptr(),
                settings.len(),
            ) {
                0 => ng::nghttp2_session_set_local_window_size(
                    session.raw,
                    ng::NGHTTP2_FLAG_NONE as u8,
                    0,
                    WINDOW as i32,
                ),
                failed => failed,
            }
        };
        if rv != 0 {
            return Err(library_error(rv as isize));
        }
        Ok(session)
    }

    /// Takes the bytes of one read. What they brought about is in
    /// [`Session::events`]. An error is the connection's end; so is a
    /// protocol error in what was received, for which nghttp2 queues a
    /// GOAWAY: once it is sent, [`Session::failure`] says why.
    pub fn receive(&mut self, data: &[u8]) -> Result<(), String> {
        // SAFETY: a live session; the callbacks touch only the state,
        // through its pointer, and no reference to it is alive during the
        // call (this takes `&mut self`).
        let rv = unsafe { ng::nghttp2_session_mem_recv2(self.raw, data.as_ptr(), data.len()) };
        if rv < 0 {
            return Err(library_error(rv));
        }
        Ok(())
    }

    /// Why this end ended the connection, once its GOAWAY with an error
    /// code went out: what was wrong with what the peer sent.
    pub fn failure(&self) -> Option<&str> {
        self.state().failure.as_deref()
    }

    /// What happened since the last call, in order.
    pub fn events(&mut self) -> std::vec::Drain<'_, Event> {
        self.state_mut().events.drain(..)
    }

    /// The message received on `slot` so far.
    pub fn message(&self, slot: usize) -> Option<&Message> {
        self.state().messages.get(slot)
    }

    /// Takes the message of `slot`, leaving the slot empty for the next
    /// stream (its vectors keep their memory when nothing was captured).
    pub fn take_message(&mut self, slot: usize) -> Message {
        self.state_mut().message(slot).map(std::mem::take).unwrap_or_default()
    }

    /// Empties the message of `slot` for its next stream, keeping the
    /// memory of what it captured.
    pub fn clear_message(&mut self, slot: usize) {
        if let Some(message) = self.state_mut().message(slot) {
            message.status = 0;
            message.fields.clear();
            message.header_list_size = 0;
            message.body.clear();
            message.body_len = 0;
            message.reset_by_peer = false;
            message.ended = false;
            message.grpc_status = None;
            message.grpc_content = false;
            message.grpc_messages = 0;
            message.framing = Framing::default();
        }
    }

    /// Client: queues a request with these header fields (pseudo-headers
    /// first) and `body`, on stream slot `slot`; returns its stream id.
    /// Fails once the peer said GOAWAY, or when stream ids run out.
    pub fn submit_request<'f>(
        &mut self,
        fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
        body: Option<Body>,
        slot: usize,
    ) -> Result<i32, String> {
        let state = self.state_mut();
        state.make_room(slot);
        state.messages[slot] = Message::default();
        let has_body = body.is_some();
        state.bodies[slot] = body;
        self.fill_nva(fields);
        let provider = data_provider(slot);
        // SAFETY: a live session; nghttp2 copies the fields (no NO_COPY
        // flags) before returning; the data provider reads the slot's body
        // from the state through the stream's user data.
        let id = unsafe {
            ng::nghttp2_submit_request2(
                self.raw,
                ptr::null(),
                self.nva.as_ptr(),
                self.nva.len(),
                if has_body { &provider } else { ptr::null() },
                (slot + 1) as *mut c_void,
            )
        };
        if id < 0 {
            self.state_mut().bodies[slot] = None;
            return Err(library_error(id as isize));
        }
        Ok(id)
    }

    /// Server: queues the response to the request of `slot` (stream
    /// `stream_id`), with these header fields (`:status` first), body and
    /// trailers after the body.
    pub fn submit_response<'f>(
        &mut self,
        stream_id: i32,
        slot: usize,
        fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>,
        body: Option<Body>,
        trailers: Option<Trailers>,
    ) -> Result<(), String> {
        let state = self.state_mut();
        state.make_room(slot);
        let has_body = body.is_some();
        state.bodies[slot] = body;
        // Trailers follow a body: without one they would be a second
        // header block on a stream already ended.
        state.trailers[slot] = trailers.filter(|_| has_body);
        self.fill_nva(fields);
        let provider = data_provider(slot);
        // SAFETY: as in submit_request.
        let rv = unsafe {
            ng::nghttp2_submit_response2(
                self.raw,
                stream_id,
                self.nva.as_ptr(),
                self.nva.len(),
                if has_body { &provider } else { ptr::null() },
            )
        };
        if rv != 0 {
            return Err(library_error(rv as isize));
        }
        Ok(())
    }

    /// Queues `bytes` on the [`Body::Stream`] of `slot` (stream
    /// `stream_id`), the last of it when `last`, and wakes the stream if it
    /// was waiting for them.
    pub fn send_more(&mut self, slot: usize, stream_id: i32, bytes: &[u8], last: bool) {
        let state = self.state_mut();
        if let Some(Some(Body::Stream { queued, finished, .. })) = state.bodies.get_mut(slot) {
            queued.extend_from_slice(bytes);
            *finished |= last;
        }
        // SAFETY: a live session. Fails only for a stream that is not
        // waiting (its DATA is not deferred), which needs no waking.
        unsafe { ng::nghttp2_session_resume_data(self.raw, stream_id) };
    }

    /// Resets a stream with `code` (`CANCEL` when the client gives up on
    /// it); its close comes as an [`Event::Closed`] with that code.
    pub fn reset(&mut self, stream_id: i32, code: u32) {
        // SAFETY: a live session. Fails only for an unknown stream, which
        // has nothing to reset.
        unsafe {
            ng::nghttp2_submit_rst_stream(self.raw, ng::NGHTTP2_FLAG_NONE as u8, stream_id, code)
        };
    }

    /// Server: says GOAWAY after the streams received so far, with `code`;
    /// the session then wants to end once they are answered.
    pub fn go_away(&mut self, code: u32) {
        // SAFETY: a live session.
        unsafe {
            let last = ng::nghttp2_session_get_last_proc_stream_id(self.raw);
            ng::nghttp2_submit_goaway(
                self.raw,
                ng::NGHTTP2_FLAG_NONE as u8,
                last,
                code,
                ptr::null(),
                0,
            )
        };
    }

    /// How much of each captured body to keep: `limit` is asked, with the
    /// message as received so far (its header fields complete), each time
    /// body bytes arrive; what is over it is counted in
    /// [`Message::body_len`] and dropped. A server keeps what the endpoint
    /// a request names uses, so that a body that never ends takes no
    /// memory. By default a captured body is kept whole.
    pub fn keep_bodies_up_to(&mut self, limit: fn(&Message) -> usize) {
        self.state_mut().kept_body = Some(limit);
    }

    /// Counts the gRPC messages of every body received
    /// ([`Message::grpc_messages`]), and says when each is whole
    /// ([`Event::GrpcMessage`]).
    pub fn count_grpc_messages(&mut self) {
        self.state_mut().count_grpc = true;
    }

    /// Appends every frame ready to go to `out`. Streams may close during
    /// it (a request that may no longer start after a GOAWAY): see
    /// [`Session::events`].
    pub fn send(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        self.send_up_to(out, usize::MAX)
    }

    /// [`Session::send`], but only while `out` holds less than `limit`
    /// bytes (the last frame may take it past): what the peer's
    /// flow-control windows allow is pulled from the bodies bit by bit,
    /// never rendered all at once. Call again once `out` is written;
    /// whether frames are left shows as a non-empty `out`.
    pub fn send_up_to(&mut self, out: &mut Vec<u8>, limit: usize) -> Result<(), String> {
        while out.len() < limit {
            let mut data = ptr::null();
            // SAFETY: a live session; `data` stays valid until the next
            // call into the session.
            let n = unsafe { ng::nghttp2_session_mem_send2(self.raw, &mut data) };
            if n < 0 {
                return Err(library_error(n));
            }
            if n == 0 {
                return Ok(());
            }
            // SAFETY: nghttp2 returned `n` readable bytes at `data`.
            out.extend_from_slice(unsafe { std::slice::from_raw_parts(data, n as usize) });
        }
        Ok(())
    }

    /// The peer's limit of concurrent streams we may open (unlimited until
    /// its SETTINGS say otherwise).
    pub fn peer_max_concurrent_streams(&self) -> u32 {
        // SAFETY: a live session.
        unsafe {
            ng::nghttp2_session_get_remote_settings(
                self.raw,
                ng::NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS,
            )
        }
    }

    /// New requests may still be submitted (no GOAWAY came, stream ids
    /// remain).
    pub fn request_allowed(&self) -> bool {
        // SAFETY: a live session.
        unsafe { ng::nghttp2_session_check_request_allowed(self.raw) != 0 }
    }

    /// The session has nothing more to do: it wants neither to read nor to
    /// write (after a GOAWAY both ways, or a fatal error).
    pub fn is_over(&self) -> bool {
        // SAFETY: a live session.
        unsafe {
            ng::nghttp2_session_want_read(self.raw) == 0
                && ng::nghttp2_session_want_write(self.raw) == 0
        }
    }

    /// The state, for as long as `self` is borrowed: nghttp2 runs no
    /// callback meanwhile (only `&mut self` methods call into it in ways
    /// that call back).
    fn state(&self) -> &State {
        // SAFETY: the pointer is the live state's (freed only in Drop),
        // and no `&mut` to it exists while `self` is borrowed shared.
        unsafe { &*self.state }
    }

    /// The state, mutably, for as long as `self` is borrowed.
    fn state_mut(&mut self) -> &mut State {
        // SAFETY: as in `state`; `&mut self` makes this the only reference.
        unsafe { &mut *self.state }
    }

    /// Fills the scratch header array with `fields` (nghttp2 copies them).
    fn fill_nva<'f>(&mut self, fields: impl IntoIterator<Item = (&'f [u8], &'f [u8])>) {
        self.nva.clear();
        self.nva.extend(fields.into_iter().map(|(name, value)| ng::nghttp2_nv {
            name: name.as_ptr().cast_mut(),
            value: value.as_ptr().cast_mut(),
            namelen: name.len(),
            valuelen: value.len(),
            flags: ng::NGHTTP2_NV_FLAG_NONE as u8,
        }));
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.raw.is_null() {
            // SAFETY: deleted once; the state it could call back into is
            // still alive (freed after this).
            unsafe { ng::nghttp2_session_del(self.raw) };
        }
        // SAFETY: made by Box::into_raw in `new`, freed only here, and
        // nghttp2, which held them too, is gone.
        drop(unsafe { Box::from_raw(self.state) });
        drop(unsafe { Box::from_raw(self.pool) });
    }
}

/// The name of an HTTP/2 error code (`REFUSED_STREAM`), or its number.
pub fn error_code_name(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    match NAMES.get(code as usize) {
        Some(name) => (*name).to_string(),
        None => format!("error code 0x{code:x}"),
    }
}

/// The error codes pace uses by name.
pub const NO_ERROR: u32 = ng::NGHTTP2_NO_ERROR;
pub const REFUSED_STREAM: u32 = ng::NGHTTP2_REFUSED_STREAM;
pub const CANCEL: u32 = ng::NGHTTP2_CANCEL;

fn setting(id: ng::nghttp2_settings_id, value: u32) -> ng::nghttp2_settings_entry {
    ng::nghttp2_settings_entry { settings_id: id as i32, value }
}

/// A data provider reading the body of `slot` (through the stream's user
/// data, so the source pointer carries nothing).
fn data_provider(slot: usize) -> ng::nghttp2_data_provider2 {
    ng::nghttp2_data_provider2 {
        source: ng::nghttp2_data_source { ptr: (slot + 1) as *mut c_void },
        read_callback: Some(read_body),
    }
}

fn library_error(code: isize) -> String {
    // SAFETY: nghttp2_strerror returns a static, NUL-terminated string for
    // any code.
    let text = unsafe { CStr::from_ptr(ng::nghttp2_strerror(code as i32)) };
    format!("HTTP/2: {}", text.to_string_lossy())
}

// ----- callbacks (run inside receive and send) --------------------------------

/// The state behind a callback's user data, for the callback's duration.
///
/// SAFETY (callers): `user_data` is the `State` pointer the session was
/// made with (alive until the session is dropped), and no other reference
/// to it is alive while nghttp2 runs (the safe side calls into nghttp2
/// only from `&mut self` methods that hold none).
unsafe fn state<'a>(user_data: *mut c_void) -> &'a mut State {
    &mut *user_data.cast::<State>()
}

/// The slot of `stream_id` (its user data).
///
/// SAFETY (callers): a live session.
unsafe fn slot_of(
    session: *mut ng::nghttp2_session,
    state: &mut State,
    stream_id: i32,
) -> Option<usize> {
    if let Some((recent, slot)) = state.recent {
        if recent == stream_id {
            return Some(slot);
        }
    }
    let slot = State::slot_of(ng::nghttp2_session_get_stream_user_data(session, stream_id))?;
    state.recent = Some((stream_id, slot));
    Some(slot)
}

/// A header block begins: a server's new request gets a slot; a client's
/// final response after a 1xx starts its fields afresh.
unsafe extern "C" fn on_begin_headers(
    session: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    user_data: *mut c_void,
) -> i32 {
    let state = state(user_data);
    let headers = (*frame).headers;
    if headers.hd.type_ as u32 != ng::NGHTTP2_HEADERS {
        return 0;
    }
    match state.role {
        Role::Server { .. } if headers.cat == ng::NGHTTP2_HCAT_REQUEST => {
            let slot = state.free.pop().unwrap_or(state.messages.len());
            state.make_room(slot);
            if let Some(message) = state.message(slot) {
                *message = Message::default();
            }
            let user = (slot + 1) as *mut c_void;
            if ng::nghttp2_session_set_stream_user_data(session, headers.hd.stream_id, user) != 0 {
                state.free.push(slot);
                return ng::NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
            }
            state.recent = Some((headers.hd.stream_id, slot));
        }
        Role::Client => {
            let slot = slot_of(session, state, headers.hd.stream_id);
            if let (Some(slot), ng::NGHTTP2_HCAT_RESPONSE) = (slot, headers.cat) {
                state.events.push(Event::Response { slot, stream_id: headers.hd.stream_id });
            }
            if let Some(message) = slot.and_then(|slot| state.message(slot)) {
                // The final response after an informational (1xx) one.
                if (100..200).contains(&message.status) {
                    message.status = 0;
                    message.fields.clear();
                    message.header_list_size = 0;
                }
            }
        }
        Role::Server { .. } => {}
    }
    0
}

unsafe extern "C" fn on_header(
    session: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    name: *const u8,
    namelen: usize,
    value: *const u8,
    valuelen: usize,
    _flags: u8,
    user_data: *mut c_void,
) -> i32 {
    let state = state(user_data);
    let hd = (*frame).hd;
    if hd.type_ as u32 != ng::NGHTTP2_HEADERS {
        return 0;
    }
    let (name, value) =
        (std::slice::from_raw_parts(name, namelen), std::slice::from_raw_parts(value, valuelen));
    let capture = state.capture || matches!(state.role, Role::Server { .. });
    let Some(message) = slot_of(session, state, hd.stream_id).and_then(|slot| state.message(slot))
    else {
        return 0;
    };
    match name {
        b":status" => {
            message.status =
                std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        }
        b"grpc-status" => message.grpc_status = Some(grpc_status::parse(value)),
        b"content-type" => message.grpc_content = value.starts_with(b"application/grpc"),
        _ => {}
    }
    if capture {
        message.header_list_size += name.len() + value.len() + FIELD_OVERHEAD;
        if message.header_list_size > MAX_HEADER_LIST {
            // nghttp2 resets the stream (INTERNAL_ERROR) and calls back
            // no more for this header block.
            return ng::NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }
        message.fields.push((name.to_vec(), value.to_vec()));
    }
    0
}

unsafe extern "C" fn on_data_chunk(
    session: *mut ng::nghttp2_session,
    _flags: u8,
    stream_id: i32,
    data: *const u8,
    len: usize,
    user_data: *mut c_void,
) -> i32 {
    let state = state(user_data);
    let capture = state.capture || matches!(state.role, Role::Server { .. });
    let (kept_body, count_grpc) = (state.kept_body, state.count_grpc);
    let Some(slot) = slot_of(session, state, stream_id) else { return 0 };
    let Some(message) = state.messages.get_mut(slot) else { return 0 };
    let data = std::slice::from_raw_parts(data, len);
    message.body_len += len as u64;
    if capture {
        let limit = kept_body.map_or(usize::MAX, |limit| limit(message));
        let room = limit.saturating_sub(message.body.len());
        message.body.extend_from_slice(&data[..len.min(room)]);
    }
    if count_grpc {
        let before = message.grpc_messages;
        message.grpc_messages += message.framing.read(data);
        for index in before..message.grpc_messages {
            state.events.push(Event::GrpcMessage { slot, stream_id, index });
        }
    }
    0
}

unsafe extern "C" fn on_frame(
    session: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    user_data: *mut c_void,
) -> i32 {
    let state = state(user_data);
    let hd = (*frame).hd;
    let end_stream = hd.flags & ng::NGHTTP2_FLAG_END_STREAM as u8 != 0;
    match hd.type_ as u32 {
        ng::NGHTTP2_GOAWAY => {
            let goaway = (*frame).goaway;
            state.events.push(Event::GoAway {
                last_stream_id: goaway.last_stream_id,
                code: goaway.error_code,
            });
        }
        ng::NGHTTP2_SETTINGS if hd.flags & ng::NGHTTP2_FLAG_ACK as u8 == 0 => {
            state.events.push(Event::Settings);
        }
        ng::NGHTTP2_RST_STREAM => {
            if let Some(message) =
                slot_of(session, state, hd.stream_id).and_then(|s| state.message(s))
            {
                message.reset_by_peer = true;
            }
        }
        ng::NGHTTP2_HEADERS | ng::NGHTTP2_DATA if end_stream => {
            if let Some(slot) = slot_of(session, state, hd.stream_id) {
                if let Some(message) = state.message(slot) {
                    message.ended = true;
                }
                if matches!(state.role, Role::Server { .. }) {
                    state.events.push(Event::Request { slot, stream_id: hd.stream_id });
                }
            }
        }
        _ => {}
    }
    0
}

/// A frame went out: a GOAWAY with an error code is this end giving up on
/// the connection.
unsafe extern "C" fn on_sent(
    _session: *mut ng::nghttp2_session,
    frame: *const ng::nghttp2_frame,
    user_data: *mut c_void,
) -> i32 {
    let state = state(user_data);
    if (*frame).hd.type_ as u32 == ng::NGHTTP2_GOAWAY && state.failure.is_none() {
        let code = (*frame).goaway.error_code;
        if code != ng::NGHTTP2_NO_ERROR {
            let why =
                state.complaint.take().unwrap_or_else(|| "the peer broke the protocol".into());
            state.failure = Some(format!("{why} ({})", error_code_name(code)));
        }
    }
    0
}

/// nghttp2 found something wrong in what it received.
unsafe extern "C" fn on_complaint(
    _session: *mut ng::nghttp2_session,
    _code: i32,
    message: *const std::ffi::c_char,
    len: usize,
    user_data: *mut c_void,
) -> i32 {
    let text = std::slice::from_raw_parts(message.cast::<u8>(), len);
    state(user_data).complaint = Some(String::from_utf8_lossy(text).into_owned());
    0
}

unsafe extern "C" fn on_stream_close(
    session: *mut ng::nghttp2_session,
    stream_id: i32,
    error_code: u32,
    user_data: *mut c_void,
) -> i32 {
    let state = state(user_data);
    if let Some(slot) = slot_of(session, state, stream_id) {
        state.recent = None;
        if let Some(body) = state.bodies.get_mut(slot) {
            *body = None;
        }
        if let Some(trailers) = state.trailers.get_mut(slot) {
            *trailers = None;
        }
        state.events.push(Event::Closed { slot, stream_id, code: error_code });
        if matches!(state.role, Role::Server { .. }) {
            state.free.push(slot);
        }
    }
    0
}

/// Reads the next part of a stream's body into nghttp2's frame buffer.
unsafe extern "C" fn read_body(
    session: *mut ng::nghttp2_session,
    stream_id: i32,
    buf: *mut u8,
    length: usize,
    data_flags: *mut u32,
    _source: *mut ng::nghttp2_data_source,
    user_data: *mut c_void,
) -> ng::nghttp2_ssize {
    let state = state(user_data);
    let body = slot_of(session, state, stream_id).and_then(|slot| state.bodies.get_mut(slot));
    let Some(Some(body)) = body else {
        *data_flags |= ng::NGHTTP2_DATA_FLAG_EOF;
        return 0;
    };
    let (n, done) = body.fill(std::slice::from_raw_parts_mut(buf, length));
    if n == 0 && !done {
        // A stream's body with nothing queued: it waits for send_more.
        return ng::NGHTTP2_ERR_DEFERRED as ng::nghttp2_ssize;
    }
    if done {
        *data_flags |= ng::NGHTTP2_DATA_FLAG_EOF;
        let trailers = slot_of(session, state, stream_id).and_then(|slot| state.trailers.get(slot));
        if let Some(Some(trailers)) = trailers {
            // The trailers end the stream, not the last DATA frame.
            let nva: Vec<ng::nghttp2_nv> = trailers
                .iter()
                .map(|(name, value)| ng::nghttp2_nv {
                    name: name.as_ptr().cast_mut(),
                    value: value.as_ptr().cast_mut(),
                    namelen: name.len(),
                    valuelen: value.len(),
                    flags: ng::NGHTTP2_NV_FLAG_NONE as u8,
                })
                .collect();
            if ng::nghttp2_submit_trailer(session, stream_id, nva.as_ptr(), nva.len()) == 0 {
                *data_flags |= ng::NGHTTP2_DATA_FLAG_NO_END_STREAM;
            }
        }
    }
    n as ng::nghttp2_ssize
}

#[cfg(test)]
mod tests {
    #[test]
    fn grpc_framing_counts_messages_across_any_split() {
        // Three messages: 2 bytes, empty, 300 bytes.
        let mut body = vec![0, 0, 0, 0, 2, 7, 7, 0, 0, 0, 0, 0, 1, 0, 0, 1, 44];
        body.extend(std::iter::repeat_n(9, 300));
        for split in [1, 2, 3, 5, 7, 64, body.len()] {
            let mut framing = Framing::default();
            let counts: Vec<u32> = body.chunks(split).map(|chunk| framing.read(chunk)).collect();
            assert_eq!(counts.iter().sum::<u32>(), 3, "chunks of {split}");
            // The first completes within the first 7 bytes, whatever the split.
            let first = counts.iter().position(|&n| n > 0).unwrap();
            assert!((first + 1) * split >= 7 && first * split < 7, "chunks of {split}");
            assert_eq!((framing.prefix_read, framing.left), (0, 0), "ends between messages");
        }
    }

    use super::*;

    /// Carries every frame each side has to send to the other, the server
    /// answering each request as it completes, until both are quiet.
    fn exchange(client: &mut Session, server: &mut Session) {
        loop {
            let (mut to_server, mut to_client) = (Vec::new(), Vec::new());
            client.send(&mut to_server).unwrap();
            server.receive(&to_server).unwrap();
            answer(server);
            server.send(&mut to_client).unwrap();
            client.receive(&to_client).unwrap();
            if to_server.is_empty() && to_client.is_empty() {
                return;
            }
        }
    }

    /// The server answers each complete request: 200 with the request's
    /// path as its body, in a response header too.
    fn answer(server: &mut Session) {
        let requests: Vec<(usize, i32)> = server
            .events()
            .filter_map(|e| match e {
                Event::Request { slot, stream_id } => Some((slot, stream_id)),
                _ => None,
            })
            .collect();
        for (slot, stream_id) in requests {
            let request = server.take_message(slot);
            let path = request.fields.iter().find(|(n, _)| n == b":path").unwrap().1.clone();
            let echo: Arc<[u8]> = Arc::from([&path[..], b" ", &request.body[..]].concat());
            let len = echo.len();
            let fields: [(&[u8], &[u8]); 2] = [(b":status", b"200"), (b"x-path", &path)];
            let body = Body::Bytes { bytes: echo, start: 0, end: len };
            server.submit_response(stream_id, slot, fields, Some(body), None).unwrap();
        }
    }

    fn request(path: &[u8]) -> [(&[u8], &[u8]); 4] {
        [(b":method", b"POST"), (b":scheme", b"http"), (b":authority", b"h"), (b":path", path)]
    }

    fn pair(capture: bool) -> (Session, Session) {
        let client = Session::new(Role::Client, capture).unwrap();
        let server = Session::new(Role::Server { max_concurrent_streams: 8 }, true).unwrap();
        (client, server)
    }

    #[test]
    fn requests_and_responses_cross_on_their_slots() {
        let (mut client, mut server) = pair(true);
        exchange(&mut client, &mut server);
        assert!(client.events().any(|e| e == Event::Settings));
        assert_eq!(client.peer_max_concurrent_streams(), 8);
        let body: Arc<[u8]> = Arc::from(&b"hello"[..]);
        for (slot, path) in [(3, &b"/a"[..]), (0, b"/b")] {
            let body = Body::Bytes { bytes: body.clone(), start: 1, end: 5 };
            client.submit_request(request(path), Some(body), slot).unwrap();
        }
        exchange(&mut client, &mut server);
        let mut closed: Vec<(usize, u32)> = client
            .events()
            .filter_map(|e| match e {
                Event::Closed { slot, code, .. } => Some((slot, code)),
                _ => None,
            })
            .collect();
        closed.sort_unstable();
        assert_eq!(closed, vec![(0, NO_ERROR), (3, NO_ERROR)]);
        let a = client.take_message(3);
        assert_eq!((a.status, &a.body[..], a.body_len), (200, &b"/a ello"[..], 7));
        assert!(a.fields.contains(&(b"x-path".to_vec(), b"/a".to_vec())));
        assert_eq!(client.message(0).unwrap().body, b"/b ello");
    }

    #[test]
    fn without_capture_only_the_status_and_length_are_kept() {
        let (mut client, mut server) = pair(false);
        exchange(&mut client, &mut server);
        client.submit_request(request(b"/x"), None, 0).unwrap();
        exchange(&mut client, &mut server);
        let message = client.take_message(0);
        assert_eq!((message.status, message.body_len), (200, 3));
        assert!(message.fields.is_empty() && message.body.is_empty());
    }

    #[test]
    fn a_reset_stream_closes_with_its_code() {
        let (mut client, mut server) = pair(false);
        exchange(&mut client, &mut server);
        client.events().for_each(drop);
        let id = client.submit_request(request(b"/x"), None, 2).unwrap();
        client.reset(id, CANCEL);
        let mut out = Vec::new();
        client.send(&mut out).unwrap();
        let closed: Vec<Event> = client.events().collect();
        assert_eq!(closed, vec![Event::Closed { slot: 2, stream_id: id, code: CANCEL }]);
    }

    #[test]
    fn goaway_names_the_last_stream_processed() {
        let (mut client, mut server) = pair(false);
        exchange(&mut client, &mut server);
        client.submit_request(request(b"/1"), None, 0).unwrap();
        exchange(&mut client, &mut server);
        client.events().for_each(drop);
        server.go_away(NO_ERROR);
        // A request the server will never see: refused by the client's
        // session itself once the GOAWAY is read.
        let late = client.submit_request(request(b"/2"), None, 1).unwrap();
        let mut to_client = Vec::new();
        server.send(&mut to_client).unwrap();
        client.receive(&to_client).unwrap();
        let mut to_server = Vec::new();
        client.send(&mut to_server).unwrap();
        let events: Vec<Event> = client.events().collect();
        assert!(events.contains(&Event::GoAway { last_stream_id: 1, code: NO_ERROR }));
        assert!(events.contains(&Event::Closed { slot: 1, stream_id: late, code: REFUSED_STREAM }));
        assert!(!client.request_allowed());
    }

    #[test]
    fn bodies_are_kept_up_to_the_limit_asked_for() {
        let (mut client, mut server) = pair(true);
        /// Keeps 10 bytes of a body to `/keep`, nothing of others.
        fn ten_for_keep(message: &Message) -> usize {
            let keep = message.fields.iter().any(|(n, v)| n == b":path" && v == b"/keep");
            if keep {
                10
            } else {
                0
            }
        }
        server.keep_bodies_up_to(ten_for_keep);
        exchange(&mut client, &mut server);
        let body: Arc<[u8]> = Arc::from(&[b'x'; 100_000][..]);
        for (slot, path) in [(0, &b"/keep"[..]), (1, b"/drop")] {
            let body = Body::Bytes { bytes: body.clone(), start: 0, end: body.len() };
            client.submit_request(request(path), Some(body), slot).unwrap();
        }
        exchange(&mut client, &mut server);
        // The server saw both bodies (and answered each with its path and
        // what it kept).
        assert_eq!(client.message(0).unwrap().body, b"/keep xxxxxxxxxx");
        assert_eq!(client.message(1).unwrap().body, b"/drop ");
    }

    #[test]
    fn a_header_list_past_the_bound_resets_the_stream() {
        let (mut client, mut server) = pair(true);
        // 1500 small fields: 67.5 kB as a header list (32 bytes of
        // overhead each), which nghttp2's client still sends (it bounds
        // names and values only, at 64 KiB). Sent before the server's
        // SETTINGS come: past them, it would refuse a list over the
        // server's bound itself.
        let mut fields = request(b"/").to_vec();
        fields.extend((0..1500).map(|_| (&b"x-a"[..], &b"0123456789"[..])));
        let id = client.submit_request(fields, None, 0).unwrap();
        exchange(&mut client, &mut server);
        let closed: Vec<Event> =
            client.events().filter(|e| matches!(e, Event::Closed { .. })).collect();
        let code = ng::NGHTTP2_INTERNAL_ERROR;
        assert_eq!(closed, vec![Event::Closed { slot: 0, stream_id: id, code }]);
        assert!(server.events().all(|e| !matches!(e, Event::Request { .. })));
    }

    #[test]
    fn sending_up_to_a_limit_leaves_the_rest_for_later() {
        let (mut client, mut server) = pair(true);
        exchange(&mut client, &mut server);
        let body = Body::Repeat { pattern: b"abc", offset: 0, len: 1_000_000 };
        client.submit_request(request(b"/big"), Some(body), 0).unwrap();
        let mut out = Vec::new();
        client.send_up_to(&mut out, 20_000).unwrap();
        // Frames of 16 KiB at most: the limit is passed by less than one.
        assert!((20_000..20_000 + 16_384 + 9).contains(&out.len()), "{}", out.len());
        server.receive(&out).unwrap();
        let mut rest = Vec::new();
        client.send(&mut rest).unwrap();
        server.receive(&rest).unwrap();
        let request = server.events().find(|e| matches!(e, Event::Request { .. }));
        let Some(Event::Request { slot, .. }) = request else { panic!("no request") };
        assert_eq!(server.message(slot).unwrap().body_len, 1_000_000);
    }

    #[test]
    fn repeated_bodies_continue_the_pattern() {
        let mut body = Body::Repeat { pattern: b"abc", offset: 1, len: 7 };
        let mut buf = [0; 4];
        assert_eq!(body.fill(&mut buf), (4, false));
        assert_eq!(&buf, b"bcab");
        assert_eq!(body.fill(&mut buf), (3, true));
        assert_eq!(&buf[..3], b"cab");
    }

    #[test]
    fn garbage_is_an_error_not_a_crash() {
        let mut client = Session::new(Role::Client, false).unwrap();
        let mut out = Vec::new();
        client.send(&mut out).unwrap();
        assert_eq!(client.failure(), None);
        // Received, then answered with a GOAWAY that ends the connection.
        client.receive(b"HTTP/1.1 400 Bad Request\r\n\r\n").unwrap();
        client.send(&mut out).unwrap();
        let failure = client.failure().unwrap();
        assert!(failure.contains("expected SETTINGS frame"), "{failure}");
        assert!(failure.ends_with("(PROTOCOL_ERROR)"), "{failure}");
        assert!(client.is_over());
    }

    #[test]
    fn error_codes_by_name() {
        assert_eq!(error_code_name(REFUSED_STREAM), "REFUSED_STREAM");
        assert_eq!(error_code_name(0x1a), "error code 0x1a");
    }
}
