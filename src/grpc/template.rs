//! Per-call templates in `--data` and `-H`, as ghz writes them (Go's template
//! actions): `{{.RequestNumber}}`, `{{.WorkerID}}`, `{{.Timestamp}}`,
//! `{{newUUID}}`, `{{randomString 8}}`, `{{randomInt 1 100}}`, ... A
//! message with actions is made anew for every call (rendered, read as
//! JSON, encoded); one without is encoded once for the run.
//!
//! The data may hold several messages one after another (a file of them):
//! [`split`] finds where each begins and ends without reading them as JSON,
//! since an action such as `"id": {{.RequestNumber}}` is not JSON until
//! it is rendered.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use prost_reflect::MethodDescriptor;

use crate::plan::random::Draws;

/// The variables and functions a template may use, for the error that
/// names an unknown one.
const KNOWN: &str = ".RequestNumber, .WorkerID, .Thread, .Connection, .Timestamp, \
     .TimestampUnix, .TimestampUnixMilli, .TimestampUnixNano, .UUID, .FullyQualifiedName, \
     .MethodName, .ServiceName, .InputName, .OutputName, .IsClientStreaming, \
     .IsServerStreaming, newUUID, randomString N, randomInt MIN MAX";

/// The characters of `randomString` (ghz's: letters and digits).
const ALPHANUMERIC: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// What one call's message is made with.
pub struct CallData<'a> {
    /// The call's number in the run, from 1, unique across threads and
    /// shards.
    pub number: u64,
    /// The thread's number in the run (across shards).
    pub thread: u64,
    /// The connection's number in its thread.
    pub connection: u64,
    /// When the call is made.
    pub now: SystemTime,
    /// The thread's random numbers.
    pub draws: &'a mut Draws,
}

/// One action of a template, what it renders to varying per call.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Action {
    RequestNumber,
    Thread,
    Connection,
    /// RFC 3339, whole seconds, UTC.
    Timestamp,
    TimestampUnix,
    TimestampUnixMilli,
    TimestampUnixNano,
    Uuid,
    RandomString(usize),
    /// In `[min, max)`.
    RandomInt(i64, i64),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Text(String),
    Action(Action),
}

/// A message's text with its actions, read once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

/// A message's text read as a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// The same for every call: the text with its constant actions (the
    /// method's names) written in.
    Fixed(String),
    /// Made anew for every call.
    Varying(Template),
}

impl Template {
    /// The template of `text` for calls of `method`, from `source` (the
    /// option that gave it, for errors: `--data`, `-H x-id`). Err: an
    /// action pace does not know, or one not closed, in words.
    pub fn parse(text: &str, method: &MethodDescriptor, source: &str) -> Result<Parsed, String> {
        let mut parts: Vec<Part> = Vec::new();
        let mut text_part = String::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            text_part.push_str(&rest[..open]);
            let Some(close) = rest[open..].find("}}") else {
                return Err(format!(
                    "{source}: a template action is not closed: {}",
                    &rest[open..]
                ));
            };
            let inner = &rest[open + 2..open + close];
            match action(inner.trim(), method, source)? {
                Ok(constant) => text_part.push_str(&constant),
                Err(action) => {
                    if !text_part.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut text_part)));
                    }
                    parts.push(Part::Action(action));
                }
            }
            rest = &rest[open + close + 2..];
        }
        text_part.push_str(rest);
        if parts.is_empty() {
            return Ok(Parsed::Fixed(text_part));
        }
        if !text_part.is_empty() {
            parts.push(Part::Text(text_part));
        }
        Ok(Parsed::Varying(Template { parts }))
    }

    /// The text with every action rendered for `call`, into `out` (cleared
    /// first).
    pub fn render(&self, call: &mut CallData, out: &mut String) {
        out.clear();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Action(action) => render(action, call, out),
            }
        }
    }
}

/// The action `inner` (between `{{` and `}}`, trimmed): the text of a
/// constant one (Ok), or one that varies per call (Err), or why it is not
/// one pace knows.
fn action(
    inner: &str,
    method: &MethodDescriptor,
    source: &str,
) -> Result<Result<String, Action>, String> {
    let words: Vec<&str> = inner.split_whitespace().collect();
    let unknown =
        || format!("{source}: {{{{{inner}}}}} is not a template action pace knows ({KNOWN})");
    let number = |word: &str| word.parse::<i64>().map_err(|_| unknown());
    let constant = |text: &str| Ok(Ok(text.to_string()));
    let varying = |action: Action| Ok(Err(action));
    match words[..] {
        [".RequestNumber"] => varying(Action::RequestNumber),
        [".WorkerID"] | [".Thread"] => varying(Action::Thread),
        [".Connection"] => varying(Action::Connection),
        [".Timestamp"] => varying(Action::Timestamp),
        [".TimestampUnix"] => varying(Action::TimestampUnix),
        [".TimestampUnixMilli"] => varying(Action::TimestampUnixMilli),
        [".TimestampUnixNano"] => varying(Action::TimestampUnixNano),
        [".UUID"] | ["newUUID"] => varying(Action::Uuid),
        ["randomString", length] => match usize::try_from(number(length)?) {
            Ok(length) => varying(Action::RandomString(length)),
            Err(_) => Err(format!("{source}: {{{{{inner}}}}}: the length is below 0")),
        },
        ["randomInt", min, max] => match (number(min)?, number(max)?) {
            (min, max) if min < max => varying(Action::RandomInt(min, max)),
            _ => Err(format!("{source}: {{{{{inner}}}}}: MIN must be below MAX")),
        },
        [".FullyQualifiedName"] => constant(method.full_name()),
        [".MethodName"] => constant(method.name()),
        [".ServiceName"] => constant(method.parent_service().full_name()),
        [".InputName"] => constant(method.input().full_name()),
        [".OutputName"] => constant(method.output().full_name()),
        [".IsClientStreaming"] => constant(&method.is_client_streaming().to_string()),
        [".IsServerStreaming"] => constant(&method.is_server_streaming().to_string()),
        _ => Err(unknown()),
    }
}

fn render(action: &Action, call: &mut CallData, out: &mut String) {
    let since_epoch = || call.now.duration_since(UNIX_EPOCH).unwrap_or_default();
    // Writing into a String does not fail.
    let _ = match *action {
        Action::RequestNumber => write!(out, "{}", call.number),
        Action::Thread => write!(out, "{}", call.thread),
        Action::Connection => write!(out, "{}", call.connection),
        Action::Timestamp => {
            let seconds = UNIX_EPOCH + std::time::Duration::from_secs(since_epoch().as_secs());
            write!(out, "{}", crate::units::format_rfc3339(seconds))
        }
        Action::TimestampUnix => write!(out, "{}", since_epoch().as_secs()),
        Action::TimestampUnixMilli => write!(out, "{}", since_epoch().as_millis()),
        Action::TimestampUnixNano => write!(out, "{}", since_epoch().as_nanos()),
        Action::Uuid => write_uuid(call.draws, out),
        Action::RandomString(length) => {
            for _ in 0..length {
                let pick = call.draws.bits() % ALPHANUMERIC.len() as u64;
                out.push(char::from(ALPHANUMERIC[pick as usize]));
            }
            Ok(())
        }
        Action::RandomInt(min, max) => {
            let span = max.abs_diff(min);
            write!(out, "{}", min.wrapping_add_unsigned(call.draws.bits() % span))
        }
    };
}

/// A random (version 4) UUID, as `8-4-4-4-12` hex digits.
fn write_uuid(draws: &mut Draws, out: &mut String) -> std::fmt::Result {
    let (high, low) = (draws.bits(), draws.bits());
    let high = (high & !0xf000) | 0x4000; // version 4
    let low = (low & !(0b11 << 62)) | (0b10 << 62); // RFC 9562's variant
    write!(
        out,
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xffff,
        low >> 48,
        low & 0xffff_ffff_ffff
    )
}

/// The messages of `text`, one after another (objects, whitespace between
/// them), each as its text: where each ends is found by its braces, outside
/// strings and template actions. Err: text that is not a message, in words.
pub fn split(text: &str) -> Result<Vec<&str>, String> {
    let bytes = text.as_bytes();
    let mut messages = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at].is_ascii_whitespace() {
            at += 1;
            continue;
        }
        if bytes[at] != b'{' || bytes[at..].starts_with(b"{{") {
            let found: String = text[at..].chars().take(20).collect();
            return Err(format!("--data: expected a message (a JSON object), found {found:?}"));
        }
        let end = object_end(text, at)?;
        messages.push(&text[at..end]);
        at = end;
    }
    Ok(messages)
}

/// Where the object that begins at `start` ends (just after its `}`).
fn object_end(text: &str, start: usize) -> Result<usize, String> {
    let bytes = text.as_bytes();
    let (mut depth, mut in_string, mut at) = (0usize, false, start);
    while at < bytes.len() {
        if bytes[at..].starts_with(b"{{") {
            match text[at..].find("}}") {
                Some(close) => at += close + 2,
                None => return Err("--data: a template action is not closed".into()),
            }
            continue;
        }
        match (in_string, bytes[at]) {
            (true, b'\\') => at += 1,
            (true, b'"') | (false, b'"') => in_string = !in_string,
            (false, b'{' | b'[') => depth += 1,
            (false, b'}' | b']') => {
                depth -= 1;
                if depth == 0 {
                    return Ok(at + 1);
                }
            }
            _ => {}
        }
        at += 1;
    }
    Err("--data: a message is not closed (a '}' is missing)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn method() -> MethodDescriptor {
        let dir = tempfile::tempdir().unwrap();
        let proto = dir.path().join("echo.proto");
        std::fs::write(
            &proto,
            "syntax = \"proto3\"; package demo; service Echo { rpc Say (Note) returns (Note); } \
             message Note { string text = 1; int64 n = 2; }",
        )
        .unwrap();
        let sources = super::super::schema::Sources { protos: vec![proto], ..Default::default() };
        let pool = super::super::schema::load(&sources).unwrap();
        pool.get_service_by_name("demo.Echo").unwrap().methods().next().unwrap()
    }

    fn varying(text: &str) -> Template {
        match Template::parse(text, &method(), "--data").unwrap() {
            Parsed::Varying(template) => template,
            Parsed::Fixed(text) => panic!("fixed: {text}"),
        }
    }

    fn rendered(template: &Template, number: u64, draws: &mut Draws) -> String {
        let now = UNIX_EPOCH + std::time::Duration::from_nanos(1_700_000_000_123_456_789);
        let mut call = CallData { number, thread: 3, connection: 7, now, draws };
        let mut out = String::from("left over");
        template.render(&mut call, &mut out);
        out
    }

    #[test]
    fn actions_render_per_call_and_constants_once() {
        let method = method();
        let text = r#"{"text": "{{ .MethodName }} #{{.RequestNumber}} t{{.WorkerID}} c{{.Connection}} {{.Timestamp}} {{.TimestampUnix}} {{.TimestampUnixMilli}} {{.TimestampUnixNano}}", "n": {{.RequestNumber}}}"#;
        let template = varying(text);
        let mut draws = Draws::at(1, 2, 3);
        assert_eq!(
            rendered(&template, 42, &mut draws),
            r#"{"text": "Say #42 t3 c7 2023-11-14T22:13:20Z 1700000000 1700000000123 1700000000123456789", "n": 42}"#
        );
        let constant = r#"{"text": "{{.FullyQualifiedName}} {{.ServiceName}} {{.InputName}} {{.OutputName}} {{.IsClientStreaming}} {{.IsServerStreaming}}"}"#;
        assert_eq!(
            Template::parse(constant, &method, "--data").unwrap(),
            Parsed::Fixed(
                r#"{"text": "demo.Echo.Say demo.Echo demo.Note demo.Note false false"}"#.into()
            )
        );
    }

    #[test]
    fn random_actions_are_seeded_and_in_range() {
        let text =
            "{{newUUID}} {{.UUID}} {{randomString 12}} {{randomInt -3 3}} {{randomString 0}}|";
        let template = varying(text);
        let mut draws = Draws::at(9, 0, 0);
        let first = rendered(&template, 1, &mut draws);
        assert_eq!(first, rendered(&template, 1, &mut Draws::at(9, 0, 0)), "seeded");
        assert_ne!(first, rendered(&template, 1, &mut draws), "a new draw per call");
        let words: Vec<&str> = first.split(' ').collect();
        for uuid in &words[..2] {
            let groups: Vec<usize> = uuid.split('-').map(str::len).collect();
            assert_eq!(groups, [8, 4, 4, 4, 12], "{uuid}");
            assert_eq!(&uuid[14..15], "4", "version 4: {uuid}");
            assert!("89ab".contains(&uuid[19..20]), "variant: {uuid}");
        }
        assert_ne!(words[0], words[1]);
        assert!(words[2].len() == 12 && words[2].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(words[4], "|");
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..500 {
            let out = rendered(&template, 1, &mut draws);
            seen.insert(out.split(' ').nth(3).unwrap().parse::<i64>().unwrap());
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), [-3, -2, -1, 0, 1, 2]);
    }

    #[test]
    fn unknown_and_unclosed_actions_in_words() {
        let method = method();
        let error = Template::parse(r#"{"text": "{{.Nope}}"}"#, &method, "--data").unwrap_err();
        assert!(error.starts_with("--data: {{.Nope}} is not a template action pace knows (.Req"));
        let error = Template::parse(r#"{"text": "{{.UUID"}"#, &method, "--data").unwrap_err();
        assert!(error.starts_with("--data: a template action is not closed"), "{error}");
        let error = Template::parse("{{randomInt 5 5}}", &method, "--data").unwrap_err();
        assert_eq!(error, "--data: {{randomInt 5 5}}: MIN must be below MAX");
        let error = Template::parse("{{randomString -1}}", &method, "--data").unwrap_err();
        assert_eq!(error, "--data: {{randomString -1}}: the length is below 0");
        let error = Template::parse("{{randomString x}}", &method, "--data").unwrap_err();
        assert!(error.starts_with("--data: {{randomString x}} is not a template action"));
    }

    #[test]
    fn messages_split_by_their_braces_not_by_json() {
        let text = "{\"a\": {{.RequestNumber}}}\n {\"b\": \"}{{{newUUID}}\\\"}\"}{\"c\": [{}]}  \n";
        assert_eq!(
            split(text).unwrap(),
            ["{\"a\": {{.RequestNumber}}}", "{\"b\": \"}{{{newUUID}}\\\"}\"}", "{\"c\": [{}]}"]
        );
        assert_eq!(split(" \n").unwrap(), Vec::<&str>::new());
        let error = split("{} [1]").unwrap_err();
        assert_eq!(error, "--data: expected a message (a JSON object), found \"[1]\"");
        assert_eq!(
            split("{\"a\": 1").unwrap_err(),
            "--data: a message is not closed (a '}' is missing)"
        );
        assert_eq!(
            split("{\"a\": \"{{x\"}").unwrap_err(),
            "--data: a template action is not closed"
        );
    }
}
