//! Server reflection: the schema of the service `--grpc` names, asked of
//! the server itself when neither `--proto` nor `--protoset` is given
//! (ghz and grpcurl do the same). One blocking HTTP/2 exchange before the
//! run, on a connection of its own: a `ServerReflectionInfo` call
//! (`grpc.reflection.v1`, else the older `v1alpha`) asking for the file
//! that defines the service; servers answer with it and every file it
//! imports.

use prost::Message;
use prost_reflect::DescriptorPool;

use super::call::frame;
use crate::blocking::Exchange;
use crate::grpc_status;
use crate::http2::session::{self, Body, Event, Role, Session};

/// The reflection services, newest first.
const PATHS: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// `ServerReflectionRequest`, with the one request pace makes
/// (`file_containing_symbol`, a member of its `message_request` oneof).
#[derive(Clone, PartialEq, Message)]
struct ReflectionRequest {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(string, optional, tag = "4")]
    file_containing_symbol: Option<String>,
}

/// `ServerReflectionResponse`, the members of its `message_response`
/// oneof pace reads.
#[derive(Clone, PartialEq, Message)]
struct ReflectionResponse {
    #[prost(message, optional, tag = "4")]
    file_descriptor_response: Option<FileDescriptorResponse>,
    #[prost(message, optional, tag = "7")]
    error_response: Option<ErrorResponse>,
}

#[derive(Clone, PartialEq, Message)]
struct FileDescriptorResponse {
    /// Serialized `FileDescriptorProto`s.
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct ErrorResponse {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

/// Where the call goes: the request's `:scheme` and `:authority`.
pub struct Server<'a> {
    pub scheme: &'a str,
    pub authority: &'a str,
}

/// The schema of `service` (`package.Service`) as the server's reflection
/// gives it, over `exchange` (a connection that speaks HTTP/2), or why
/// not, in words.
pub fn schema(
    exchange: &mut dyn Exchange,
    server: &Server,
    service: &str,
) -> Result<DescriptorPool, String> {
    let mut session = Session::new(Role::Client, true)?;
    let request = ReflectionRequest {
        host: String::new(),
        file_containing_symbol: Some(service.to_string()),
    };
    let body = frame(&request.encode_to_vec(), false);
    for (slot, path) in PATHS.iter().enumerate() {
        let answer = call(&mut session, exchange, server, path, &body, slot)?;
        match answer.status {
            grpc_status::OK => return pool_of(&answer.messages, service),
            // A server with only the older service.
            grpc_status::UNIMPLEMENTED if slot + 1 < PATHS.len() => continue,
            grpc_status::UNIMPLEMENTED => {
                return Err("the server has no reflection service: give the schema with \
                            --proto or --protoset"
                    .into())
            }
            code => {
                let said = answer.message.map(|m| format!(": {m}")).unwrap_or_default();
                return Err(format!(
                    "the reflection call failed with {}{said}",
                    grpc_status::name(code)
                ));
            }
        }
    }
    unreachable!("the last path returns")
}

/// A call's answer: its status, its message (`grpc-message`) and the
/// messages of its body.
struct Answer {
    status: u8,
    message: Option<String>,
    messages: Vec<Vec<u8>>,
}

/// One call on `session`, on stream slot `slot`, until its stream closes.
fn call(
    session: &mut Session,
    exchange: &mut dyn Exchange,
    server: &Server,
    path: &str,
    body: &[u8],
    slot: usize,
) -> Result<Answer, String> {
    let fields: [(&[u8], &[u8]); 6] = [
        (b":method", b"POST"),
        (b":scheme", server.scheme.as_bytes()),
        (b":authority", server.authority.as_bytes()),
        (b":path", path.as_bytes()),
        (b"content-type", b"application/grpc"),
        (b"te", b"trailers"),
    ];
    let body = Body::Bytes { bytes: body.into(), start: 0, end: body.len() };
    session.submit_request(fields, Some(body), slot)?;
    let lost = |e: std::io::Error| format!("the reflection call failed: {e}");
    let mut out = Vec::new();
    let mut buf = vec![0; 64 * 1024];
    let code = loop {
        out.clear();
        session.send(&mut out)?;
        if !out.is_empty() {
            exchange.write_all(&out).and_then(|()| exchange.flush()).map_err(lost)?;
        }
        let closed = session.events().find_map(|event| match event {
            Event::Closed { slot: closed, code, .. } if closed == slot => Some(code),
            _ => None,
        });
        if let Some(code) = closed {
            break code;
        }
        if let Some(failure) = session.failure() {
            return Err(format!("the reflection call failed: {failure}"));
        }
        match exchange.read(&mut buf).map_err(lost)? {
            0 => return Err("the server closed the connection during the reflection call".into()),
            n => session.receive(&buf[..n])?,
        }
    };
    let answer = session.take_message(slot);
    if code != session::NO_ERROR {
        let code = session::error_code_name(code);
        return Err(format!("the server reset the reflection call ({code})"));
    }
    let field = |name: &[u8]| {
        let (_, value) = answer.fields.iter().find(|(n, _)| n == name)?;
        Some(String::from_utf8_lossy(value).into_owned())
    };
    let Some(code) = answer.grpc_status else {
        return Err(format!(
            "the reflection call got no gRPC answer (HTTP status {})",
            answer.status
        ));
    };
    let messages = messages(&answer.body).ok_or("the reflection answer is cut short")?;
    Ok(Answer { status: code, message: field(b"grpc-message"), messages })
}

/// The messages of a gRPC body (each: a compression flag, a 4-byte
/// length, the message), or None when the body is cut short.
fn messages(mut body: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut messages = Vec::new();
    while !body.is_empty() {
        let length = u32::from_be_bytes(body.get(1..5)?.try_into().ok()?) as usize;
        messages.push(body.get(5..5 + length)?.to_vec());
        body = &body[5 + length..];
    }
    Some(messages)
}

/// The files of the reflection answer `messages`, as one pool.
fn pool_of(messages: &[Vec<u8>], service: &str) -> Result<DescriptorPool, String> {
    let bad = |e: prost::DecodeError| format!("the reflection answer is not understood: {e}");
    let first = messages.first().ok_or("the reflection call got no answer")?;
    let response = ReflectionResponse::decode(&first[..]).map_err(bad)?;
    if let Some(error) = response.error_response {
        return Err(match u8::try_from(error.error_code) {
            Ok(grpc_status::NOT_FOUND) => format!("the server has no service {service}"),
            _ => format!("the server's reflection answered: {}", error.error_message),
        });
    }
    let files = response
        .file_descriptor_response
        .map(|files| files.file_descriptor_proto)
        .filter(|files| !files.is_empty())
        .ok_or("the reflection answer holds no file")?;
    // A FileDescriptorSet is its files, each as field 1.
    let mut set = Vec::new();
    for file in &files {
        prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, &mut set);
        prost::encoding::encode_varint(file.len() as u64, &mut set);
        set.extend_from_slice(file);
    }
    DescriptorPool::decode(&set[..])
        .map_err(|e| format!("the files the server's reflection gave do not make a schema: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_messages_of_a_body() {
        let body = [frame(b"ab", false), frame(b"", false), frame(b"xyz", false)].concat();
        assert_eq!(messages(&body), Some(vec![b"ab".to_vec(), vec![], b"xyz".to_vec()]));
        assert_eq!(messages(&body[..body.len() - 1]), None);
        assert_eq!(messages(&[0, 0, 0]), None);
    }

    #[test]
    fn a_reflection_error_in_words() {
        let response = ReflectionResponse {
            file_descriptor_response: None,
            error_response: Some(ErrorResponse { error_code: 5, error_message: "nope".into() }),
        };
        let error = pool_of(&[response.encode_to_vec()], "a.B").unwrap_err();
        assert_eq!(error, "the server has no service a.B");
        let empty = ReflectionResponse { file_descriptor_response: None, error_response: None };
        assert!(pool_of(&[empty.encode_to_vec()], "a.B").is_err());
    }
}
