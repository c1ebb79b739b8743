//! `--targets FILE`: vegeta's plain-text ("http") targets format.
//!
//! ```text
//! # a comment
//! GET http://127.0.0.1:8080/a?x=1
//! X-Account: 8675309
//!
//! POST http://127.0.0.1:8080/things
//! Content-Type: application/json
//! @bodies/thing.json
//! HEAD http://127.0.0.1:8080/health
//! ```
//!
//! A target is a `METHOD URL` line (the method in capitals, as vegeta
//! requires), then its headers (`Name: value`, one a line), then at most one
//! `@path` line naming a file whose bytes are the body; the body line ends
//! the target. A blank line also ends it, and a line starting with a method
//! starts the next one; lines starting with `#` are comments. Lines may end
//! in CRLF, and surrounding spaces are ignored. Unlike vegeta, a body path
//! is relative to the targets file's directory (not to the working
//! directory), and every error names the file and the line.
//!
//! Targets may name any mix of schemes, hosts and ports: each request goes
//! to its own origin ([`super::origins`]).
//!
//! The header and method grammar of `-H`, `-m` and a targets file is
//! here too ([`parse_header`], [`check_method`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::Error;
use crate::files;
use crate::target::Target;

/// The requests of a targets file, in the order of the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Targets {
    /// The file as named on the command line (for messages).
    pub file: PathBuf,
    /// At least one.
    pub list: Vec<TargetRequest>,
}

/// One target of the file.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetRequest {
    /// The 1-based line of its `METHOD URL`.
    pub line: usize,
    pub method: String,
    pub target: Target,
    /// Its header lines, in order.
    pub headers: Vec<(String, String)>,
    /// The bytes of its `@file`.
    pub body: Option<Arc<[u8]>>,
}

/// `--targets-order`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TargetsOrder {
    /// Round-robin, in the order of the file.
    #[default]
    Sequential,
    /// Each request drawn at random from the targets.
    Random,
}

impl TargetsOrder {
    /// The value of `--targets-order`.
    pub fn parse(text: &str) -> Option<TargetsOrder> {
        match text {
            "sequential" => Some(TargetsOrder::Sequential),
            "random" => Some(TargetsOrder::Random),
            _ => None,
        }
    }
}

impl Targets {
    /// Reads and parses `file`, and the body files it names (each once).
    /// A file that cannot be read is [`Error::Setup`] (as every file pace
    /// cannot read); a line that is wrong is [`Error::Usage`], like a
    /// mistake on the command line.
    pub fn read(file: &Path) -> Result<Targets, Error> {
        let name = file.display().to_string();
        let text = files::read_bounded(file, files::TARGETS)?;
        let dir = match file.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut read: HashMap<PathBuf, Arc<[u8]>> = HashMap::new();
        let mut body_unreadable = false;
        let mut read_body = |written: &str| {
            let path = dir.join(written);
            if let Some(body) = read.get(&path) {
                return Ok(body.clone());
            }
            let body: Arc<[u8]> = files::read_at_most(&path, files::TARGETS_BODY.bytes)
                .map_err(|why| {
                    body_unreadable = true;
                    let what = files::TARGETS_BODY.what;
                    format!("cannot read {what} {}: {}", path.display(), why.reason())
                })?
                .into();
            read.insert(path, body.clone());
            Ok(body)
        };
        let list = parse(&text, &name, &mut read_body).map_err(|why| {
            if body_unreadable {
                Error::Setup(why)
            } else {
                Error::Usage(why)
            }
        })?;
        Ok(Targets { file: file.to_path_buf(), list })
    }

    /// The first target: its URL is the run's when the command line has
    /// none.
    pub fn first(&self) -> &TargetRequest {
        &self.list[0]
    }
}

/// Gives the bytes of the file an `@path` line names, or why not.
pub type ReadBody<'a> = dyn FnMut(&str) -> Result<Arc<[u8]>, String> + 'a;

/// Parses the text of a targets file named `file`.
pub fn parse(
    text: &[u8],
    file: &str,
    read_body: &mut ReadBody<'_>,
) -> Result<Vec<TargetRequest>, String> {
    let mut list: Vec<TargetRequest> = Vec::new();
    // The target whose headers may follow, if any.
    let mut open = false;
    // The previous line (not a comment) was a body line.
    let mut after_body = false;
    for (index, raw) in text.split(|&byte| byte == b'\n').enumerate() {
        let number = index + 1;
        let at = |why: String| format!("{file}:{number}: {why}");
        let line = std::str::from_utf8(raw).map_err(|_| at("not valid UTF-8".into()))?;
        // Also drops the CR of a CRLF line end.
        let line = line.trim();
        if line.is_empty() {
            (open, after_body) = (false, false);
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        if line.contains(|c: char| c.is_control() && c != '\t') {
            return Err(at("control character in the line".into()));
        }
        if starts_with_method(line) {
            list.push(request_line(line, number).map_err(at)?);
            (open, after_body) = (true, false);
        } else if !open {
            let hint = match (after_body, parse_header(line).is_ok()) {
                (true, true) => " (headers go before the '@' body line)",
                (false, true) => {
                    " (a target's headers follow its request line, with no blank line between)"
                }
                _ => "",
            };
            return Err(at(format!("expected 'METHOD URL'{hint}")));
        } else if let Some(path) = line.strip_prefix('@') {
            let path = path.trim_start();
            if path.is_empty() {
                return Err(at("expected a file name after '@'".into()));
            }
            let body = read_body(path).map_err(at)?;
            list.last_mut().expect("an open target").body = Some(body);
            (open, after_body) = (false, true);
        } else {
            let header =
                parse_header(line).map_err(|why| at(format!("invalid header '{line}': {why}")))?;
            list.last_mut().expect("an open target").headers.push(header);
        }
    }
    if list.is_empty() {
        return Err(format!("{file}: no targets (expected lines 'METHOD URL')"));
    }
    Ok(list)
}

/// vegeta's test: the line's first word is in capitals (a header's name
/// is followed by its ':').
fn starts_with_method(line: &str) -> bool {
    let word = line.split(|c: char| c.is_ascii_whitespace()).next().unwrap_or_default();
    !word.is_empty() && word.bytes().all(|byte| byte.is_ascii_uppercase())
}

/// `METHOD URL`.
fn request_line(line: &str, number: usize) -> Result<TargetRequest, String> {
    let mut words = line.split_ascii_whitespace();
    let (Some(method), Some(url), None) = (words.next(), words.next(), words.next()) else {
        return Err("expected 'METHOD URL'".into());
    };
    let target = Target::parse(url).map_err(|err| err.to_string())?;
    Ok(TargetRequest {
        line: number,
        method: method.to_string(),
        target,
        headers: Vec::new(),
        body: None,
    })
}

/// `-m`: an HTTP method is a token (RFC 9110: letters, digits and
/// `!#$%&'*+-.^_`|~`), sent as typed (methods are case-sensitive).
pub fn check_method(text: &str) -> Result<(), String> {
    if text.is_empty() || !text.bytes().all(is_token_byte) {
        return Err(format!("'{text}' is not an HTTP method (e.g. GET, POST, HEAD)"));
    }
    Ok(())
}

/// A header as `-H` and a targets file give it: `Name: value`, also
/// without the space (`Name:value`, which wrk silently dropped:
/// wg/wrk#404). Split at the first ':' so values may hold colons
/// (`Host: x:8080`). The error says why, without the header.
pub fn parse_header(text: &str) -> Result<(String, String), &'static str> {
    let (name, value) = text.split_once(':').ok_or("expected 'Name: value'")?;
    if name.is_empty() {
        return Err("empty name");
    }
    if !name.bytes().all(is_token_byte) {
        return Err("the name may not contain spaces or separators");
    }
    // A CR or LF would end the header early and corrupt the request.
    if value.contains(['\r', '\n']) {
        return Err("the value may not contain line breaks");
    }
    Ok((name.to_string(), value.trim_start_matches([' ', '\t']).to_string()))
}

/// RFC 9110 `tchar`: the bytes allowed in a header name or a method.
fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `text` with bodies from `bodies` (`path` -> text).
    fn parse_with(text: &str, bodies: &[(&str, &str)]) -> Result<Vec<TargetRequest>, String> {
        let mut read_body = |path: &str| match bodies.iter().find(|(p, _)| *p == path) {
            Some((_, body)) => Ok(Arc::from(body.as_bytes())),
            None => Err(format!("cannot read body file {path}: No such file or directory")),
        };
        parse(text.as_bytes(), "t.txt", &mut read_body)
    }

    fn targets(text: &str) -> Vec<TargetRequest> {
        parse_with(text, &[("b.json", "{}"), ("dir/c.bin", "C")]).unwrap()
    }

    fn error(text: &str) -> String {
        parse_with(text, &[("b.json", "{}")]).unwrap_err()
    }

    /// `METHOD path [headers] [body]` of each target, for comparing.
    fn summary(list: &[TargetRequest]) -> Vec<String> {
        list.iter()
            .map(|t| {
                let mut text =
                    format!("{}:{} {} {}", t.line, t.method, t.target.host, t.target.path);
                for (name, value) in &t.headers {
                    text.push_str(&format!(" [{name}={value}]"));
                }
                if let Some(body) = &t.body {
                    text.push_str(&format!(" @{}", String::from_utf8_lossy(body)));
                }
                text
            })
            .collect()
    }

    #[test]
    fn simple_targets() {
        let list = targets(
            "GET http://goku:9090/path/to/dragon?item=ball\n\
             GET http://user:password@goku:9090/path/to\n\
             HEAD http://goku:9090/path/to/success\n",
        );
        assert_eq!(
            summary(&list),
            [
                "1:GET goku /path/to/dragon?item=ball",
                "2:GET goku /path/to",
                "3:HEAD goku /path/to/success"
            ]
        );
        assert_eq!(list[1].target.userinfo.as_deref(), Some("user:password"));
        assert_eq!(list[0].target.port, 9090);
    }

    #[test]
    fn headers_bodies_comments_and_blank_lines() {
        let list = targets(
            "# get a dragon ball\n\
             \n\
             GET http://h/a\n\
             X-Account-ID: 8675309\n\
             # not a header\n\
             Authorization:Token DEADBEEF\n\
             \n\
             \n\
             POST http://h/things\n\
             Content-Type: application/json\n\
             @b.json\n\
             PATCH http://h/thing/7\n\
             @ dir/c.bin\n\
             \n\
             DELETE http://h/x\n\
             X-Empty:\n\
             # the end\n",
        );
        assert_eq!(
            summary(&list),
            [
                "3:GET h /a [X-Account-ID=8675309] [Authorization=Token DEADBEEF]",
                "9:POST h /things [Content-Type=application/json] @{}",
                "12:PATCH h /thing/7 @C",
                "15:DELETE h /x [X-Empty=]",
            ]
        );
    }

    #[test]
    fn crlf_lines_and_surrounding_spaces() {
        let list =
            targets("  GET   http://h/a  \r\n  X-A:  1  \r\n\r\nPUT http://h/b\r\n@b.json\r\n");
        assert_eq!(summary(&list), ["1:GET h /a [X-A=1]", "4:PUT h /b @{}"]);
        // No newline at the end, and a file of one line.
        assert_eq!(summary(&targets("OPTIONS http://h/*")), ["1:OPTIONS h /*"]);
    }

    #[test]
    fn every_error_names_its_line() {
        const NO_BLANK: &str =
            " (a target's headers follow its request line, with no blank line between)";
        let cases = [
            ("GET http://h/\nX-A 1\n", "2: invalid header 'X-A 1': expected 'Name: value'".into()),
            ("\n\nget http://h/\n", "3: expected 'METHOD URL'".into()),
            ("GET\n", "1: expected 'METHOD URL'".into()),
            ("GET http://h/ HTTP/1.1\n", "1: expected 'METHOD URL'".into()),
            ("GET http://h/\n\nX-A: 1\n", format!("3: expected 'METHOD URL'{NO_BLANK}")),
            (
                "POST http://h/\n@b.json\nX-A: 1\n",
                "3: expected 'METHOD URL' (headers go before the '@' body line)".into(),
            ),
            ("POST http://h/\n@b.json\n@b.json\n", "3: expected 'METHOD URL'".into()),
            ("X-A: 1\n", format!("1: expected 'METHOD URL'{NO_BLANK}")),
            (
                "GET http://h/\nGET localhost:8080/\n",
                "2: invalid URL: localhost:8080/ (expected scheme://host)".into(),
            ),
            (
                "GET ftp://h/\n",
                "1: invalid URL: ftp://h/ (unsupported scheme, use http or https)".into(),
            ),
            ("POST http://h/\n@\n", "2: expected a file name after '@'".into()),
            (
                "POST http://h/\n@missing.json\n",
                "2: cannot read body file missing.json: No such file or directory".into(),
            ),
            (
                "GET http://h/\nBad Name: x\n",
                "2: invalid header 'Bad Name: x': the name may not contain spaces or separators"
                    .into(),
            ),
            ("GET http://h/\n: x\n", "2: invalid header ': x': empty name".into()),
            ("GET http://h/\nX-A: a\rb\n", "2: control character in the line".into()),
            (
                "GET http://h/\r\nX-A: 1\r\nx\r\n",
                "3: invalid header 'x': expected 'Name: value'".into(),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(error(text), format!("t.txt:{expected}"), "{text:?}");
        }
        for empty in ["", "# nothing\n\n  \r\n"] {
            assert_eq!(error(empty), "t.txt: no targets (expected lines 'METHOD URL')");
        }
        let bad_utf8 = parse(b"GET http://h/\nX-A: \xff\n", "t.txt", &mut |_| unreachable!());
        assert_eq!(bad_utf8.unwrap_err(), "t.txt:2: not valid UTF-8");
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn body_files_are_relative_to_the_targets_file_and_read_once() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "bodies/one.json", "{\"one\":1}");
        let absolute = write(dir.path(), "abs.bin", "abs");
        let file = write(
            dir.path(),
            "t.txt",
            &format!(
                "POST http://h/a\n@bodies/one.json\n\n\
                 PUT http://h/b\n@{}\n\n\
                 POST http://h/c\n@bodies/one.json\n",
                absolute.display()
            ),
        );
        let targets = Targets::read(&file).unwrap();
        let bodies: Vec<&[u8]> = targets.list.iter().map(|t| t.body.as_deref().unwrap()).collect();
        assert_eq!(bodies, [&b"{\"one\":1}"[..], b"abs", b"{\"one\":1}"]);
        let (a, c) =
            (targets.list[0].body.as_ref().unwrap(), targets.list[2].body.as_ref().unwrap());
        assert!(Arc::ptr_eq(a, c), "one file, read once");
        assert_eq!(targets.file, file);
        assert_eq!(targets.first().target.path, "/a");
    }

    #[test]
    fn missing_files_say_which() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.txt");
        let Err(Error::Setup(message)) = Targets::read(&missing) else { panic!("read") };
        assert_eq!(
            message,
            format!("cannot read --targets file {}: No such file or directory", missing.display())
        );
        let file = write(dir.path(), "t.txt", "GET http://h/\n\nPOST http://h/\n@gone.json\n");
        let Err(Error::Setup(message)) = Targets::read(&file) else { panic!("read") };
        assert_eq!(
            message,
            format!(
                "{}:4: cannot read body file {}: No such file or directory",
                file.display(),
                dir.path().join("gone.json").display()
            )
        );
        // A file that is read but wrong is a mistake of the user's.
        let file = write(dir.path(), "bad.txt", "GET http://h/\nnot a header\n");
        assert!(matches!(Targets::read(&file), Err(Error::Usage(_))));
    }

    #[test]
    fn headers_and_methods() {
        assert_eq!(parse_header("A: b"), Ok(("A".into(), "b".into())));
        assert_eq!(parse_header("A:b:c"), Ok(("A".into(), "b:c".into())));
        assert_eq!(parse_header("A:"), Ok(("A".into(), "".into())));
        assert_eq!(parse_header("A"), Err("expected 'Name: value'"));
        assert_eq!(parse_header(": b"), Err("empty name"));
        assert_eq!(parse_header("A B: c"), Err("the name may not contain spaces or separators"));
        assert_eq!(parse_header("A: b\rc"), Err("the value may not contain line breaks"));
        for good in ["GET", "POST", "M-SEARCH", "purge"] {
            assert!(check_method(good).is_ok(), "{good}");
        }
        for bad in ["", "GE T", "GET\r\n", "a/b"] {
            assert!(check_method(bad).is_err(), "{bad:?}");
        }
    }
}
