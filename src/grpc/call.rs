//! A unary call as pace sends it: the method's path, the request message
//! from JSON encoded once with the schema and framed as gRPC frames a
//! message, and the header fields every call carries.

use std::sync::Arc;
use std::time::Duration;

use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor};

use super::schema::{self, Sources};

/// What every call of a run sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// `package.Service/Method`, as the request's path names it.
    pub method: String,
    /// The request messages in gRPC's framing, sent in turn (one, or
    /// each of a file's).
    pub messages: Vec<Arc<[u8]>>,
}

/// A call whose schema the server's reflection gives, asked for before
/// the run (no `--proto` or `--protoset`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FromServer {
    /// `--grpc` as typed.
    pub name: String,
    /// `--data`, read.
    pub data: Option<String>,
}

/// The call of `name` with the message `data` (JSON; `{}` when None),
/// checked against the schema `sources` give.
pub fn prepare(name: &str, sources: &Sources, data: Option<&str>) -> Result<Call, String> {
    prepare_with(&schema::load(sources)?, name, data)
}

/// [`prepare`] with the schema `pool`.
pub fn prepare_with(pool: &DescriptorPool, name: &str, data: Option<&str>) -> Result<Call, String> {
    let method = schema::method(pool, name)?;
    check_unary(&method, name)?;
    let messages = messages(&method, data.unwrap_or("{}"))?;
    let messages = messages.iter().map(|message| frame(message).into()).collect();
    let method_path = format!("{}/{}", method.parent_service().full_name(), method.name());
    Ok(Call { method: method_path, messages })
}

/// Streaming methods are refused before any load, in words.
fn check_unary(method: &MethodDescriptor, name: &str) -> Result<(), String> {
    let kind = match (method.is_client_streaming(), method.is_server_streaming()) {
        (false, false) => return Ok(()),
        (true, true) => "bidirectional streaming",
        (true, false) => "client streaming",
        (false, true) => "server streaming",
    };
    Err(format!("--grpc {name}: a {kind} method; pace calls unary methods only, for now"))
}

/// The request messages of `method` from JSON (protobuf's JSON mapping):
/// one object, or several one after another (a file of messages, one per
/// line or not), each encoded.
fn messages(method: &MethodDescriptor, json: &str) -> Result<Vec<Vec<u8>>, String> {
    let input = method.input();
    let not_a =
        |e: serde_json::Error| format!("--data is not a {} in JSON: {e}", input.full_name());
    let mut messages = Vec::new();
    for value in serde_json::Deserializer::from_str(json).into_iter::<serde_json::Value>() {
        let message = DynamicMessage::deserialize(input.clone(), value.map_err(not_a)?);
        messages.push(message.map_err(not_a)?.encode_to_vec());
    }
    match messages.is_empty() {
        true => Err(format!("--data holds no {} message", input.full_name())),
        false => Ok(messages),
    }
}

/// A message as gRPC frames it: not compressed (0), its length (4 bytes,
/// big-endian), the message.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let mut framed = Vec::with_capacity(5 + message.len());
    framed.push(0);
    framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
    framed.extend_from_slice(message);
    framed
}

/// The header fields of every call: gRPC's content type, `te: trailers`
/// (which proxies need to pass trailers on), and the deadline `timeout`
/// as `grpc-timeout`.
pub fn fields(timeout: Duration) -> Vec<(String, String)> {
    vec![
        ("content-type".into(), "application/grpc".into()),
        ("te".into(), "trailers".into()),
        ("grpc-timeout".into(), timeout_value(timeout)),
    ]
}

/// `grpc-timeout`: at most eight digits and a unit; milliseconds while
/// they fit, else seconds, then hours (rounded up: a deadline never
/// shorter than asked).
pub fn timeout_value(timeout: Duration) -> String {
    const MOST: u128 = 99_999_999;
    let millis = timeout.as_nanos().div_ceil(1_000_000);
    if millis <= MOST {
        return format!("{millis}m");
    }
    let seconds = millis.div_ceil(1000);
    match seconds <= MOST {
        true => format!("{seconds}S"),
        false => format!("{}H", seconds.div_ceil(3600).min(MOST)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ECHO: &str = r#"
        syntax = "proto3";
        package demo;
        service Echo {
            rpc Say (Note) returns (Note);
            rpc Listen (Note) returns (stream Note);
        }
        message Note { string text = 1; int32 times = 2; }
    "#;

    fn sources() -> (tempfile::TempDir, Sources) {
        let dir = tempfile::tempdir().unwrap();
        let proto = dir.path().join("echo.proto");
        std::fs::write(&proto, ECHO).unwrap();
        (dir, Sources { protos: vec![proto], ..Sources::default() })
    }

    #[test]
    fn a_call_from_json_encoded_and_framed() {
        let (_dir, sources) = sources();
        let call =
            prepare("demo.Echo/Say", &sources, Some(r#"{"text": "hi", "times": 3}"#)).unwrap();
        assert_eq!(call.method, "demo.Echo/Say");
        // text (field 1, bytes "hi"), times (field 2, varint 3).
        assert_eq!(&call.messages[0][..], &[0, 0, 0, 0, 6, 0x0a, 2, b'h', b'i', 0x10, 3][..]);
        let empty = prepare("demo.Echo.Say", &sources, None).unwrap();
        assert_eq!(empty.messages, [Arc::from(&[0, 0, 0, 0, 0][..])]);
    }

    #[test]
    fn a_file_of_messages_is_each_of_them_in_order() {
        let (_dir, sources) = sources();
        let file = "{\"text\": \"a\"}\n{\"times\": 1}\n\n  {\n  \"text\": \"b\"\n}\n";
        let call = prepare("demo.Echo/Say", &sources, Some(file)).unwrap();
        let expected: [&[u8]; 3] = [
            &[0, 0, 0, 0, 3, 0x0a, 1, b'a'],
            &[0, 0, 0, 0, 2, 0x10, 1],
            &[0, 0, 0, 0, 3, 0x0a, 1, b'b'],
        ];
        assert_eq!(call.messages.iter().map(|m| &m[..]).collect::<Vec<_>>(), expected);
        let error = prepare("demo.Echo/Say", &sources, Some(" \n")).unwrap_err();
        assert_eq!(error, "--data holds no demo.Note message");
        let error = prepare("demo.Echo/Say", &sources, Some("{} {\"x\": 1}")).unwrap_err();
        assert!(error.starts_with("--data is not a demo.Note in JSON: "), "{error}");
    }

    #[test]
    fn bad_data_and_streaming_methods_in_words() {
        let (_dir, sources) = sources();
        let error = prepare("demo.Echo/Say", &sources, Some(r#"{"txet": "hi"}"#)).unwrap_err();
        assert!(error.starts_with("--data is not a demo.Note in JSON: "), "{error}");
        let error = prepare("demo.Echo/Say", &sources, Some(r#"{"text": "hi"} x"#)).unwrap_err();
        assert!(error.starts_with("--data is not a demo.Note in JSON: "), "{error}");
        let error = prepare("demo.Echo/Listen", &sources, None).unwrap_err();
        assert_eq!(
            error,
            "--grpc demo.Echo/Listen: a server streaming method; pace calls unary methods only, \
             for now"
        );
    }

    #[test]
    fn deadlines_in_grpc_timeout_units() {
        assert_eq!(timeout_value(Duration::from_secs(2)), "2000m");
        assert_eq!(timeout_value(Duration::from_micros(1500)), "2m");
        assert_eq!(timeout_value(Duration::from_secs(100_000)), "100000S");
        assert_eq!(timeout_value(Duration::from_secs(u64::MAX)), "99999999H");
    }
}
