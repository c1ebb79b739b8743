//! `pace serve --grpc`: a gRPC service with a schema of its own
//! ([`SCHEMA`]) and server reflection, so that `pace --grpc pace.Echo/Say`
//! calls it without a `.proto` file (and grpcurl, and ghz). The answers
//! to whole requests come after `--latency` and stalls like every answer
//! of the server; the streaming ones (`Chat`, reflection) as each message
//! comes.
//!
//! - `Say`: the message back.
//! - `Listen`: the message back `times` times, a server stream.
//! - `Chat`: every message of the call's stream back, each as it comes.
//! - A message with `status` set is answered with that status instead, as
//!   a call with the metadata `pace-grpc-status` is.
//! - Reflection (`grpc.reflection.v1` and `v1alpha`): the file of
//!   [`SCHEMA`] by a symbol or its name, and the list of services, each
//!   request answered as it comes (grpcurl and ghz wait for each answer
//!   on an open stream).
//! - Any other method: UNIMPLEMENTED.

use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor};

use crate::grpc::call::first_framed;
use crate::grpc::reflection;
use crate::grpc_status::{self, INVALID_ARGUMENT, OK, RESOURCE_EXHAUSTED, UNIMPLEMENTED};

/// The service's schema, as reflection gives it.
pub const SCHEMA: &str = r#"syntax = "proto3";

package pace;

// pace serve --grpc: every answer comes after --latency and stalls.
service Echo {
  // The message back.
  rpc Say (Note) returns (Note);
  // The message back `times` times.
  rpc Listen (Note) returns (stream Note);
  // Every message of the call's stream back, each as it comes.
  rpc Chat (stream Note) returns (stream Note);
}

message Note {
  string text = 1;
  // Listen: how many times the message comes back.
  int32 times = 2;
  // A gRPC status code to answer with instead of the message (0: OK).
  int32 status = 3;
}
"#;

/// The file [`SCHEMA`] is, for reflection.
const SCHEMA_FILE: &str = "pace/echo.proto";

/// The service, its schema compiled once when the server starts.
pub struct Service {
    pool: DescriptorPool,
    note: MessageDescriptor,
}

/// The schema's one file, from memory.
struct Builtin;

impl protox::file::FileResolver for Builtin {
    fn open_file(&self, name: &str) -> Result<protox::file::File, protox::Error> {
        match name {
            SCHEMA_FILE => protox::file::File::from_source(name, SCHEMA),
            _ => Err(protox::Error::file_not_found(name)),
        }
    }
}

impl Service {
    pub fn new() -> Result<Service, String> {
        let mut compiler = protox::Compiler::with_file_resolver(Builtin);
        compiler.open_file(SCHEMA_FILE).map_err(|e| format!("the built-in schema: {e}"))?;
        let pool = compiler.descriptor_pool();
        let note = pool.get_message_by_name("pace.Note").ok_or("the built-in schema: no Note")?;
        Ok(Service { pool, note })
    }

    /// The answer to a call of `path` with the request body `body` (framed
    /// messages), whose metadata asked for `asked` (OK when it asked
    /// nothing): its status, and its reply body when OK. `room` is the
    /// most a reply may hold.
    pub fn answer(&self, path: &[u8], asked: u8, body: &[u8], room: usize) -> (u8, Vec<u8>) {
        if asked != OK {
            return (asked, Vec::new());
        }
        let path = String::from_utf8_lossy(path);
        if reflection::PATHS.contains(&&*path) {
            return match reflection::answer(&self.pool, body) {
                Ok(answers) => (OK, answers),
                Err(_) => (INVALID_ARGUMENT, Vec::new()),
            };
        }
        let copies = match path.strip_prefix("/pace.Echo/") {
            Some("Say" | "Chat") => None,
            Some("Listen") => Some(()),
            _ => return (UNIMPLEMENTED, Vec::new()),
        };
        // Compressed messages: the service takes none (gRPC's answer to an
        // encoding a server does not support).
        if body.first().is_some_and(|&flag| flag != 0) {
            return (UNIMPLEMENTED, Vec::new());
        }
        let Some(note) = self.first_note(body) else { return (INVALID_ARGUMENT, Vec::new()) };
        let field = |name: &str| note.get_field_by_name(name).and_then(|v| v.as_i32());
        match field("status").unwrap_or(0) {
            0 => {}
            code => return (u8::try_from(code).unwrap_or(grpc_status::UNKNOWN), Vec::new()),
        }
        let Some(()) = copies else { return (OK, body.to_vec()) };
        let message = framed_first(body).unwrap_or_default();
        let times = usize::try_from(field("times").unwrap_or(0)).unwrap_or(0);
        match times.saturating_mul(message.len()) <= room {
            true => (OK, message.repeat(times)),
            false => (RESOURCE_EXHAUSTED, Vec::new()),
        }
    }

    /// Calls of `path` are answered message by message as they come
    /// (`Chat`, reflection), not once the request is whole.
    pub fn streams(&self, path: &[u8]) -> bool {
        path == b"/pace.Echo/Chat" || reflection::PATHS.iter().any(|p| p.as_bytes() == path)
    }

    /// The answer to one message `framed` (with its prefix) of a call of
    /// `path` that [`Service::streams`]: `Chat` echoes it, reflection
    /// answers it (nothing for a message that is no reflection request).
    pub fn answer_one(&self, path: &[u8], framed: &[u8]) -> Vec<u8> {
        match path == b"/pace.Echo/Chat" {
            true => framed.to_vec(),
            false => reflection::answer(&self.pool, framed).unwrap_or_default(),
        }
    }

    /// The first message of `body` as a `Note` (an empty body is an empty
    /// Note, as protobuf reads zero bytes); None when it is no Note.
    fn first_note(&self, body: &[u8]) -> Option<DynamicMessage> {
        let framed = framed_first(body)?;
        let message = framed.get(5..).unwrap_or_default();
        DynamicMessage::decode(self.note.clone(), message).ok()
    }
}

/// The first message of a gRPC body with its 5-byte prefix; an empty body
/// is an empty message; None when it is cut short.
fn framed_first(body: &[u8]) -> Option<&[u8]> {
    const EMPTY: &[u8] = &[0, 0, 0, 0, 0];
    match body.is_empty() {
        true => Some(EMPTY),
        false => first_framed(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc::call::frame;
    use prost::Message as _;

    fn note(text: &str, times: i32, status: i32) -> Vec<u8> {
        let service = Service::new().unwrap();
        let mut note = DynamicMessage::new(service.note.clone());
        note.set_field_by_name("text", prost_reflect::Value::String(text.into()));
        note.set_field_by_name("times", prost_reflect::Value::I32(times));
        note.set_field_by_name("status", prost_reflect::Value::I32(status));
        frame(&note.encode_to_vec(), false)
    }

    #[test]
    fn say_listen_chat_and_a_status_on_request() {
        let service = Service::new().unwrap();
        let hi = note("hi", 3, 0);
        assert_eq!(service.answer(b"/pace.Echo/Say", OK, &hi, 1 << 20), (OK, hi.clone()));
        assert_eq!(service.answer(b"/pace.Echo/Listen", OK, &hi, 1 << 20), (OK, hi.repeat(3)));
        let two = [hi.clone(), note("again", 0, 0)].concat();
        assert_eq!(service.answer(b"/pace.Echo/Chat", OK, &two, 1 << 20), (OK, two.clone()));
        let failing = note("x", 0, 14);
        assert_eq!(service.answer(b"/pace.Echo/Say", OK, &failing, 1 << 20), (14, vec![]));
        assert_eq!(service.answer(b"/pace.Echo/Say", 5, &hi, 1 << 20), (5, vec![]));
        assert_eq!(service.answer(b"/pace.Echo/Listen", OK, &hi, 10).0, RESOURCE_EXHAUSTED);
        assert_eq!(service.answer(b"/pace.Echo/Nope", OK, &hi, 1 << 20).0, UNIMPLEMENTED);
        assert_eq!(service.answer(b"/other.Svc/Say", OK, &hi, 1 << 20).0, UNIMPLEMENTED);
        assert_eq!(service.answer(b"/pace.Echo/Say", OK, &[0, 0, 0, 0, 9, 1], 99).0, 3);
        // An empty body is an empty Note.
        assert_eq!(service.answer(b"/pace.Echo/Listen", OK, b"", 99), (OK, vec![]));
    }

    #[test]
    fn chat_and_reflection_answer_each_message_as_it_comes() {
        let service = Service::new().unwrap();
        assert!(service.streams(b"/pace.Echo/Chat"));
        assert!(service.streams(reflection::PATHS[1].as_bytes()));
        assert!(!service.streams(b"/pace.Echo/Say") && !service.streams(b"/pace.Echo/Listen"));
        let hi = note("hi", 0, 0);
        assert_eq!(service.answer_one(b"/pace.Echo/Chat", &hi), hi);
        let request = [0x3a, 0].to_vec(); // list_services: ""
        let answer = service.answer_one(reflection::PATHS[0].as_bytes(), &frame(&request, false));
        assert!(answer.windows(9).any(|w| w == b"pace.Echo"), "{answer:?}");
        assert_eq!(service.answer_one(reflection::PATHS[0].as_bytes(), &[0, 0]), Vec::<u8>::new());
    }

    #[test]
    fn reflection_gives_the_schema_that_pace_reads_back() {
        let service = Service::new().unwrap();
        let path = reflection::PATHS[0].as_bytes();
        // What pace's own --grpc asks: the file of the service.
        let request = [0x22, 9].iter().copied().chain(*b"pace.Echo").collect::<Vec<u8>>();
        let (status, answer) = service.answer(path, OK, &frame(&request, false), 1 << 20);
        assert_eq!(status, OK);
        let pool = reflection::pool_from_answer(&answer, "pace.Echo").unwrap();
        let service = pool.get_service_by_name("pace.Echo").unwrap();
        let names: Vec<String> = service.methods().map(|m| m.name().to_string()).collect();
        assert_eq!(names, ["Say", "Listen", "Chat"]);
    }
}
