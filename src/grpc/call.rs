//! A call as pace sends it: the method's path, the request messages from
//! JSON (encoded once with the schema and framed as gRPC frames a message,
//! or made for each call from a template), the stream a client-streaming
//! or bidirectional call sends, the metadata made per call, and the
//! header fields every call carries.

use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor};

use super::schema::{self, Sources};
use super::template::{self, CallData, Parsed, Template};
use crate::plan::random::Draws;

/// What every call of a run sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// `package.Service/Method`, as the request's path names it.
    pub method: String,
    /// The request messages, sent in turn (one, or each of a file's).
    pub messages: Vec<Message>,
    /// The messages are compressed with gzip (`--grpc-gzip`).
    pub gzip: bool,
    /// The method's schema (for the messages a script makes and reads).
    pub schema: MethodDescriptor,
    /// Of a client-streaming or bidirectional method: the messages each
    /// call sends in its stream.
    pub stream: Option<StreamPlan>,
    /// The `-H` metadata whose values hold template actions: by name, the
    /// value for every call (its constant actions written in), or the
    /// template each call's value is made from.
    pub metadata: Vec<(String, Parsed)>,
}

/// What a call is made of besides its method.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallOptions {
    /// `--data`, read (None: `{}`).
    pub data: Option<String>,
    /// `--grpc-gzip`.
    pub gzip: bool,
    /// `--grpc-stream-count`.
    pub stream_count: Option<u32>,
    /// `--grpc-stream-interval`.
    pub stream_interval: Option<Duration>,
    /// `-H`, as typed: values may hold template actions.
    pub metadata: Vec<(String, String)>,
}

/// The messages a call of a client-streaming or bidirectional method sends
/// in its stream: `count` of them, the messages of `--data` in turn, the
/// i-th intended `interval` x i after the call (`--grpc-stream-count` and
/// `--grpc-stream-interval`, ghz's `--stream-call-count` and
/// `--stream-interval`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamPlan {
    pub count: u32,
    pub interval: Duration,
}

impl Call {
    /// `headers` with the values of the metadata whose actions are the same
    /// for every call written in (those made per call stay templates,
    /// replaced as each call is made).
    pub fn write_fixed_metadata(&self, headers: &mut [(String, String)]) {
        for (field, parsed) in &self.metadata {
            let Parsed::Fixed(value) = parsed else { continue };
            for (_, typed) in headers.iter_mut().filter(|(name, _)| name == field) {
                *typed = value.clone();
            }
        }
    }

    /// The metadata made anew for every call: by name, its template.
    pub fn varying_metadata(&self) -> impl Iterator<Item = (&str, &Template)> {
        self.metadata.iter().filter_map(|(field, parsed)| match parsed {
            Parsed::Varying(template) => Some((field.as_str(), template)),
            Parsed::Fixed(_) => None,
        })
    }

    /// Some message or metadata is made anew for every call.
    pub fn made_per_call(&self) -> bool {
        self.messages.iter().any(|m| matches!(m, Message::Template(_)))
            || self.varying_metadata().next().is_some()
    }

    /// The method answers each call with a stream of messages.
    pub fn server_streaming(&self) -> bool {
        self.schema.is_server_streaming()
    }

    /// The message a script's calls send unless it makes its own
    /// (`wrk.body`). Err: `--data` asks for what only pace's own calls do
    /// (messages in turn, made per call), in words.
    pub fn script_body(&self) -> Result<Arc<[u8]>, String> {
        if self.stream.is_some() {
            return Err("-s with a client-streaming or bidirectional method: a script makes \
                 unary and server-streaming calls"
                .into());
        }
        if self.varying_metadata().next().is_some() {
            return Err("-H with template actions and -s: the script makes each call's \
                 metadata (wrk.headers)"
                .into());
        }
        match &self.messages[..] {
            [Message::Framed(framed)] => Ok(framed.clone()),
            [Message::Template(_)] => Err("--data with template actions and -s: the script \
                 makes each call's message (wrk.grpc.encode)"
                .into()),
            _ => Err("--data with several messages and -s: the script chooses each call's \
                 message (wrk.grpc.encode)"
                .into()),
        }
    }
}

/// One request message of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// The same for every call: encoded and framed once.
    Framed(Arc<[u8]>),
    /// Made for every call from its template.
    Template(Arc<MessageTemplate>),
}

/// A message made anew for each call: its template, and the type it is
/// encoded as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageTemplate {
    template: Template,
    input: MessageDescriptor,
    gzip: bool,
}

impl MessageTemplate {
    /// The message for `call`, encoded and framed; `text` is the
    /// rendering's buffer (kept between calls). Err: the rendered text is
    /// not a message of the method's input type, in words.
    pub fn make(&self, call: &mut CallData, text: &mut String) -> Result<Vec<u8>, String> {
        self.template.render(call, text);
        Ok(frame(&encode(&self.input, text)?, self.gzip))
    }
}

/// A call whose schema the server's reflection gives, asked for before
/// the run (no `--proto` or `--protoset`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FromServer {
    /// `--grpc` as typed.
    pub name: String,
    pub options: CallOptions,
}

/// The call of `name` made of `options`, checked against the schema
/// `sources` give.
pub fn prepare(name: &str, sources: &Sources, options: &CallOptions) -> Result<Call, String> {
    prepare_with(&schema::load(sources)?, name, options)
}

/// [`prepare`] with the schema `pool`.
pub fn prepare_with(
    pool: &DescriptorPool,
    name: &str,
    options: &CallOptions,
) -> Result<Call, String> {
    let method = schema::method(pool, name)?;
    let messages = messages(&method, options.data.as_deref().unwrap_or("{}"), options.gzip)?;
    let stream = stream_plan(&method, name, options, &messages)?;
    let metadata = (options.metadata.iter())
        .filter(|(_, value)| value.contains("{{"))
        .map(|(field, value)| {
            let parsed = Template::parse(value, &method, &format!("-H {field}"))?;
            Ok((field.clone(), parsed))
        })
        .collect::<Result<_, String>>()?;
    let method_path = format!("{}/{}", method.parent_service().full_name(), method.name());
    let gzip = options.gzip;
    Ok(Call { method: method_path, messages, gzip, schema: method, stream, metadata })
}

/// The stream of a client-streaming or bidirectional call: its messages
/// are fixed (a template is made per call, not per message), and by
/// default each of `--data`'s once. The options of a stream are refused
/// for a method that takes no stream.
fn stream_plan(
    method: &MethodDescriptor,
    name: &str,
    options: &CallOptions,
    messages: &[Message],
) -> Result<Option<StreamPlan>, String> {
    if !method.is_client_streaming() {
        let given = [
            ("--grpc-stream-count", options.stream_count.is_some()),
            ("--grpc-stream-interval", options.stream_interval.is_some()),
        ];
        return match given.iter().find(|(_, given)| *given) {
            Some((option, _)) => Err(format!(
                "{option}: --grpc {name} takes one request message (not a client-streaming or \
                 bidirectional method)"
            )),
            None => Ok(None),
        };
    }
    if messages.iter().any(|m| matches!(m, Message::Template(_))) {
        return Err(format!(
            "--grpc {name}: a stream's messages are made once for the run; --data's template \
             actions apply to unary and server-streaming calls"
        ));
    }
    let count = options.stream_count.unwrap_or(messages.len() as u32);
    if count == 0 {
        return Err("--grpc-stream-count must be at least 1".into());
    }
    let interval = options.stream_interval.unwrap_or_default();
    Ok(Some(StreamPlan { count, interval }))
}

/// The request messages of `method` from JSON (protobuf's JSON mapping):
/// one object, or several one after another (a file of messages, one per
/// line or not), each encoded once, or checked once (rendered for a first
/// call) if it is a template.
fn messages(method: &MethodDescriptor, json: &str, gzip: bool) -> Result<Vec<Message>, String> {
    let input = method.input();
    let mut messages = Vec::new();
    for text in template::split(json)? {
        let message = match Template::parse(text, method, "--data")? {
            Parsed::Fixed(text) => Message::Framed(frame(&encode(&input, &text)?, gzip).into()),
            Parsed::Varying(template) => {
                let made = MessageTemplate { template, input: input.clone(), gzip };
                let mut draws = Draws::at(0, 0, 0);
                let mut first = CallData {
                    number: 1,
                    thread: 0,
                    connection: 0,
                    now: SystemTime::now(),
                    draws: &mut draws,
                };
                made.make(&mut first, &mut String::new())
                    .map_err(|e| format!("{e} (rendered for a first call)"))?;
                Message::Template(Arc::new(made))
            }
        };
        messages.push(message);
    }
    match messages.is_empty() {
        true => Err(format!("--data holds no {} message", input.full_name())),
        false => Ok(messages),
    }
}

/// The message of type `input` that `json` gives, encoded.
fn encode(input: &MessageDescriptor, json: &str) -> Result<Vec<u8>, String> {
    let not_a =
        |e: serde_json::Error| format!("--data is not a {} in JSON: {e}", input.full_name());
    let mut reader = serde_json::Deserializer::from_str(json);
    let message = DynamicMessage::deserialize(input.clone(), &mut reader).map_err(not_a)?;
    reader.end().map_err(not_a)?;
    Ok(message.encode_to_vec())
}

/// A message as gRPC frames it: compressed or not (1 or 0), its length (4
/// bytes, big-endian), the message (compressed with gzip when `gzip`).
pub fn frame(message: &[u8], gzip: bool) -> Vec<u8> {
    let compressed;
    let message = match gzip {
        true => {
            compressed = gzipped(message);
            &compressed[..]
        }
        false => message,
    };
    let mut framed = Vec::with_capacity(5 + message.len());
    framed.push(u8::from(gzip));
    framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
    framed.extend_from_slice(message);
    framed
}

/// The first whole message at the start of a gRPC body, with its 5-byte
/// prefix; None when it has not all come (or the body is empty).
pub fn first_framed(body: &[u8]) -> Option<&[u8]> {
    let length = u32::from_be_bytes(body.get(1..5)?.try_into().ok()?) as usize;
    body.get(..length.saturating_add(5))
}

fn gzipped(message: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    // Writing into a Vec does not fail.
    let _ = encoder.write_all(message);
    encoder.finish().unwrap_or_default()
}

/// The header fields of every call: gRPC's content type, `te: trailers`
/// (which proxies need to pass trailers on), the deadline `timeout` as
/// `grpc-timeout`, and with `gzip` the message's encoding.
pub fn fields(timeout: Duration, gzip: bool) -> Vec<(String, String)> {
    let mut fields = vec![
        ("content-type".into(), "application/grpc".into()),
        ("te".into(), "trailers".into()),
        ("grpc-timeout".into(), timeout_value(timeout)),
    ];
    if gzip {
        fields.push(("grpc-encoding".into(), "gzip".into()));
        fields.push(("grpc-accept-encoding".into(), "gzip".into()));
    }
    fields
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
            rpc Chat (stream Note) returns (stream Note);
        }
        message Note { string text = 1; int32 times = 2; }
    "#;

    fn sources() -> (tempfile::TempDir, Sources) {
        let dir = tempfile::tempdir().unwrap();
        let proto = dir.path().join("echo.proto");
        std::fs::write(&proto, ECHO).unwrap();
        (dir, Sources { protos: vec![proto], ..Sources::default() })
    }

    fn options(data: Option<&str>, gzip: bool) -> CallOptions {
        CallOptions { data: data.map(String::from), gzip, ..CallOptions::default() }
    }

    /// The messages of `call`, each framed once.
    fn framed(call: &Call) -> Vec<&[u8]> {
        (call.messages.iter())
            .map(|message| match message {
                Message::Framed(framed) => &framed[..],
                Message::Template(_) => panic!("a template"),
            })
            .collect()
    }

    #[test]
    fn a_call_from_json_encoded_and_framed() {
        let (_dir, sources) = sources();
        let call = prepare(
            "demo.Echo/Say",
            &sources,
            &options(Some(r#"{"text": "hi", "times": 3}"#), false),
        )
        .unwrap();
        assert_eq!(call.method, "demo.Echo/Say");
        // text (field 1, bytes "hi"), times (field 2, varint 3).
        assert_eq!(framed(&call), [&[0, 0, 0, 0, 6, 0x0a, 2, b'h', b'i', 0x10, 3][..]]);
        let empty = prepare("demo.Echo.Say", &sources, &options(None, false)).unwrap();
        assert_eq!(framed(&empty), [&[0, 0, 0, 0, 0][..]]);
    }

    #[test]
    fn a_file_of_messages_is_each_of_them_in_order() {
        let (_dir, sources) = sources();
        let file = "{\"text\": \"a\"}\n{\"times\": 1}\n\n  {\n  \"text\": \"b\"\n}\n";
        let call = prepare("demo.Echo/Say", &sources, &options(Some(file), false)).unwrap();
        let expected: [&[u8]; 3] = [
            &[0, 0, 0, 0, 3, 0x0a, 1, b'a'],
            &[0, 0, 0, 0, 2, 0x10, 1],
            &[0, 0, 0, 0, 3, 0x0a, 1, b'b'],
        ];
        assert_eq!(framed(&call), expected);
        let error = prepare("demo.Echo/Say", &sources, &options(Some(" \n"), false)).unwrap_err();
        assert_eq!(error, "--data holds no demo.Note message");
        let error =
            prepare("demo.Echo/Say", &sources, &options(Some("{} {\"x\": 1}"), false)).unwrap_err();
        assert!(error.starts_with("--data is not a demo.Note in JSON: "), "{error}");
    }

    #[test]
    fn bad_data_and_streaming_methods_in_words() {
        let (_dir, sources) = sources();
        let error = prepare("demo.Echo/Say", &sources, &options(Some(r#"{"txet": "hi"}"#), false))
            .unwrap_err();
        assert!(error.starts_with("--data is not a demo.Note in JSON: "), "{error}");
        let error =
            prepare("demo.Echo/Say", &sources, &options(Some(r#"{"text": "hi"} x"#), false))
                .unwrap_err();
        assert_eq!(error, "--data: expected a message (a JSON object), found \"x\"");
        let listen = prepare("demo.Echo/Listen", &sources, &options(None, false)).unwrap();
        assert!(listen.server_streaming() && listen.stream.is_none());
        let chat = prepare("demo.Echo/Chat", &sources, &options(Some("{} {}"), false)).unwrap();
        let plan = StreamPlan { count: 2, interval: Duration::ZERO };
        assert_eq!(chat.stream, Some(plan), "each message once by default");
        let stream = CallOptions {
            stream_count: Some(5),
            stream_interval: Some(Duration::from_millis(10)),
            ..CallOptions::default()
        };
        let chat = prepare("demo.Echo/Chat", &sources, &stream).unwrap();
        let plan = StreamPlan { count: 5, interval: Duration::from_millis(10) };
        assert_eq!(chat.stream, Some(plan));
        let error = prepare("demo.Echo/Say", &sources, &stream).unwrap_err();
        assert_eq!(
            error,
            "--grpc-stream-count: --grpc demo.Echo/Say takes one request message (not a \
             client-streaming or bidirectional method)"
        );
        let templated = options(Some(r#"{"text": "{{.UUID}}"}"#), false);
        let error = prepare("demo.Echo/Chat", &sources, &templated).unwrap_err();
        assert!(error.contains("a stream's messages are made once for the run"), "{error}");
    }

    #[test]
    fn a_template_is_made_per_call_and_checked_once_before() {
        let (_dir, sources) = sources();
        let data = r#"{"text": "{{.MethodName}}"} {"times": {{.RequestNumber}}}"#;
        let call = prepare("demo.Echo/Say", &sources, &options(Some(data), false)).unwrap();
        let Message::Template(template) = &call.messages[1] else { panic!("not a template") };
        // The constant action is written in once: the first is fixed.
        assert!(matches!(&call.messages[0], Message::Framed(m) if m[7..] == *b"Say"));
        let mut draws = Draws::at(0, 0, 0);
        let now = SystemTime::now();
        let mut data = CallData { number: 300, thread: 0, connection: 0, now, draws: &mut draws };
        let made = template.make(&mut data, &mut String::new()).unwrap();
        assert_eq!(made, [0, 0, 0, 0, 3, 0x10, 0xac, 0x02]);
        // A message the first call's rendering makes wrong: before any load.
        let bad = r#"{"text": {{.RequestNumber}}}"#;
        let error = prepare("demo.Echo/Say", &sources, &options(Some(bad), false)).unwrap_err();
        assert!(error.ends_with("(rendered for a first call)"), "{error}");
    }

    #[test]
    fn gzip_compresses_each_message_and_flags_it() {
        let (_dir, sources) = sources();
        let text = "hello ".repeat(50);
        let data = format!(r#"{{"text": "{text}"}}"#);
        let call = prepare("demo.Echo/Say", &sources, &options(Some(&data), true)).unwrap();
        let framed = framed(&call)[0];
        assert_eq!(framed[0], 1, "the compressed flag");
        let length = u32::from_be_bytes(framed[1..5].try_into().unwrap()) as usize;
        assert_eq!(length, framed.len() - 5);
        let mut message = Vec::new();
        let mut decoder = flate2::read::GzDecoder::new(&framed[5..]);
        std::io::Read::read_to_end(&mut decoder, &mut message).unwrap();
        assert_eq!(message.len(), 3 + text.len());
        assert!(framed.len() < message.len(), "compressed");
        assert!(
            fields(Duration::from_secs(1), true).contains(&("grpc-encoding".into(), "gzip".into()))
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
