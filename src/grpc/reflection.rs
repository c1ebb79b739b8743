//! Server reflection: the schema of the service `--grpc` names, asked of
//! the server itself when neither `--proto` nor `--protoset` is given
//! (ghz and grpcurl do the same). One blocking HTTP/2 exchange before the
//! run, on a connection of its own: a `ServerReflectionInfo` call
//! (`grpc.reflection.v1`, else the older `v1alpha`) asking for the file
//! that defines the service; servers answer with it and every file it
//! imports. [`answer`] is the other side, for `pace serve --grpc`.

use prost::Message;
use prost_reflect::DescriptorPool;

use super::call::{first_framed, frame};
use crate::blocking::Exchange;
use crate::grpc_status;
use crate::http2::session::{self, Body, Event, Role, Session};

/// The reflection services, newest first.
pub const PATHS: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// `ServerReflectionRequest`, with the requests pace makes
/// (`file_containing_symbol`) and answers (also `file_by_filename` and
/// `list_services`): members of its `message_request` oneof.
#[derive(Clone, PartialEq, Message)]
struct ReflectionRequest {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(string, optional, tag = "3")]
    file_by_filename: Option<String>,
    #[prost(string, optional, tag = "4")]
    file_containing_symbol: Option<String>,
    #[prost(string, optional, tag = "7")]
    list_services: Option<String>,
}

/// `ServerReflectionResponse`, the members of its `message_response`
/// oneof pace reads and writes.
#[derive(Clone, PartialEq, Message)]
struct ReflectionResponse {
    #[prost(string, tag = "1")]
    valid_host: String,
    #[prost(message, optional, tag = "2")]
    original_request: Option<ReflectionRequest>,
    #[prost(message, optional, tag = "4")]
    file_descriptor_response: Option<FileDescriptorResponse>,
    #[prost(message, optional, tag = "6")]
    list_services_response: Option<ListServiceResponse>,
    #[prost(message, optional, tag = "7")]
    error_response: Option<ErrorResponse>,
}

#[derive(Clone, PartialEq, Message)]
struct ListServiceResponse {
    #[prost(message, repeated, tag = "1")]
    service: Vec<ServiceResponse>,
}

#[derive(Clone, PartialEq, Message)]
struct ServiceResponse {
    #[prost(string, tag = "1")]
    name: String,
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
        file_containing_symbol: Some(service.to_string()),
        ..ReflectionRequest::default()
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
        let framed = first_framed(body)?;
        messages.push(framed[5..].to_vec());
        body = &body[framed.len()..];
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

/// The reflection service's answers to the requests of `body` (framed
/// `ServerReflectionRequest`s) about the schema `pool`, each framed: the
/// file that defines a symbol or has a name (the files it imports first),
/// the services (reflection's own among them), or NOT_FOUND.
pub fn answer(pool: &DescriptorPool, body: &[u8]) -> Result<Vec<u8>, String> {
    let requests = messages(body).ok_or("a reflection request cut short")?;
    let mut answers = Vec::new();
    for request in requests {
        let request = ReflectionRequest::decode(&request[..])
            .map_err(|e| format!("not a reflection request: {e}"))?;
        let mut response = ReflectionResponse {
            valid_host: request.host.clone(),
            original_request: Some(request.clone()),
            ..ReflectionResponse::default()
        };
        let file = match (&request.file_containing_symbol, &request.file_by_filename) {
            (Some(symbol), _) => file_of_symbol(pool, symbol),
            (None, Some(name)) => pool.get_file_by_name(name),
            (None, None) => None,
        };
        let asked_a_file =
            request.file_containing_symbol.is_some() || request.file_by_filename.is_some();
        if let Some(file) = file {
            let mut files = Vec::new();
            for import in file.dependencies() {
                files.push(import.file_descriptor_proto().encode_to_vec());
            }
            files.push(file.file_descriptor_proto().encode_to_vec());
            response.file_descriptor_response =
                Some(FileDescriptorResponse { file_descriptor_proto: files });
        } else if request.list_services.is_some() {
            let services = pool.services().map(|s| s.full_name().to_string());
            let reflection = ["grpc.reflection.v1.ServerReflection".to_string()];
            let service = services.chain(reflection).map(|name| ServiceResponse { name }).collect();
            response.list_services_response = Some(ListServiceResponse { service });
        } else {
            let (code, message) = match asked_a_file {
                true => (grpc_status::NOT_FOUND, "not found"),
                false => (grpc_status::UNIMPLEMENTED, "pace answers files and services only"),
            };
            let error_response =
                ErrorResponse { error_code: i32::from(code), error_message: message.into() };
            response.error_response = Some(error_response);
        }
        answers.extend(frame(&response.encode_to_vec(), false));
    }
    Ok(answers)
}

/// The file that defines `symbol` (a service, a method, a message or an
/// enum, by its full name).
fn file_of_symbol(pool: &DescriptorPool, symbol: &str) -> Option<prost_reflect::FileDescriptor> {
    if let Some(service) = pool.get_service_by_name(symbol) {
        return Some(service.parent_file());
    }
    if let Some((service, method)) = symbol.rsplit_once('.') {
        let service = pool.get_service_by_name(service);
        if let Some(method) = service.and_then(|s| s.methods().find(|m| m.name() == method)) {
            return Some(method.parent_file());
        }
    }
    if let Some(message) = pool.get_message_by_name(symbol) {
        return Some(message.parent_file());
    }
    pool.get_enum_by_name(symbol).map(|e| e.parent_file())
}

/// The schema a reflection answer `body` (framed) gives of `service`.
#[cfg(test)]
pub fn pool_from_answer(body: &[u8], service: &str) -> Result<DescriptorPool, String> {
    pool_of(&messages(body).ok_or("cut short")?, service)
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
    fn answers_list_the_services_and_say_what_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let proto = dir.path().join("a.proto");
        std::fs::write(
            &proto,
            "syntax = \"proto3\"; package a; service B { rpc C (D) returns (D); } message D {}",
        )
        .unwrap();
        let sources = super::super::schema::Sources { protos: vec![proto], ..Default::default() };
        let pool = super::super::schema::load(&sources).unwrap();
        let ask = |request: ReflectionRequest| {
            let answer = answer(&pool, &frame(&request.encode_to_vec(), false)).unwrap();
            ReflectionResponse::decode(&messages(&answer).unwrap()[0][..]).unwrap()
        };
        let list =
            ask(ReflectionRequest { list_services: Some(String::new()), ..Default::default() });
        let names: Vec<String> =
            list.list_services_response.unwrap().service.into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["a.B", "grpc.reflection.v1.ServerReflection"]);
        let by_method = ask(ReflectionRequest {
            file_containing_symbol: Some("a.B.C".into()),
            ..Default::default()
        });
        assert_eq!(by_method.file_descriptor_response.unwrap().file_descriptor_proto.len(), 1);
        let by_name = ask(ReflectionRequest {
            file_by_filename: Some("a.proto".into()),
            ..Default::default()
        });
        assert!(by_name.file_descriptor_response.is_some());
        let missing = ask(ReflectionRequest {
            file_containing_symbol: Some("x.Y".into()),
            ..Default::default()
        });
        assert_eq!(missing.error_response.unwrap().error_code, 5);
        assert_eq!(
            missing.original_request.unwrap().file_containing_symbol.as_deref(),
            Some("x.Y")
        );
        assert!(answer(&pool, &[0, 0, 0]).is_err());
    }

    #[test]
    fn a_reflection_error_in_words() {
        let response = ReflectionResponse {
            error_response: Some(ErrorResponse { error_code: 5, error_message: "nope".into() }),
            ..ReflectionResponse::default()
        };
        let error = pool_of(&[response.encode_to_vec()], "a.B").unwrap_err();
        assert_eq!(error, "the server has no service a.B");
        let empty = ReflectionResponse::default();
        assert!(pool_of(&[empty.encode_to_vec()], "a.B").is_err());
    }
}
