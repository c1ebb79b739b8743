//! `--grpc` and its options: the options it needs and excludes, the schema
//! and message read once, and the run's requests made calls of the
//! method.

use std::path::Path;

use super::BenchArgs;
use crate::error::Error;
use crate::grpc::call::{self, Call, CallOptions, FromServer};
use crate::grpc::schema;

/// What `--grpc` asks for.
pub(super) enum Grpc {
    /// The call, its schema and message read.
    Call(Call),
    /// A call whose schema the server's reflection will give.
    FromServer(FromServer),
}

impl Grpc {
    /// The request path of the call: `/package.Service/Method`.
    pub(super) fn path(&self) -> String {
        match self {
            Grpc::Call(call) => format!("/{}", call.method),
            Grpc::FromServer(wanted) => {
                let (service, method) =
                    schema::service_and_method(&wanted.name).expect("checked in call_of");
                format!("/{service}/{method}")
            }
        }
    }
}

/// The call `--grpc` asks for, checked against the other options, its
/// schema and message read; None without `--grpc`.
pub(super) fn call_of(typed: &BenchArgs) -> Result<Option<Grpc>, Error> {
    let fail = |message: &str| Err(Error::Usage(message.into()));
    let Some(name) = &typed.grpc else {
        let given = [
            ("--proto", !typed.schema.protos.is_empty()),
            ("--import-path", !typed.schema.import_paths.is_empty()),
            ("--protoset", typed.schema.protoset.is_some()),
            ("--data", typed.data.is_some()),
            ("--grpc-gzip", typed.grpc_gzip),
            ("--grpc-stream-count", typed.stream_count.is_some()),
            ("--grpc-stream-interval", typed.stream_interval.is_some()),
        ];
        return match given.iter().find(|(_, given)| *given) {
            Some((option, _)) => Err(Error::Usage(format!("{option} needs --grpc"))),
            None => Ok(None),
        };
    };
    schema::service_and_method(name).map_err(Error::Usage)?;
    let from_server = typed.schema.protos.is_empty() && typed.schema.protoset.is_none();
    if from_server && !typed.schema.import_paths.is_empty() {
        return fail("--import-path applies to --proto");
    }
    if from_server && typed.script.is_some() {
        return fail(
            "--grpc without --proto or --protoset asks the server's reflection service, after \
             the script (-s) is loaded: give the schema for a script's calls",
        );
    }
    if from_server && typed.proxy.is_some() {
        return fail(
            "--grpc without --proto or --protoset asks the server's reflection service, which \
             pace does not do through --proxy: give the schema",
        );
    }
    if !typed.schema.protos.is_empty() && typed.schema.protoset.is_some() {
        return fail("--proto and --protoset cannot be used together: one schema");
    }
    if typed.schema.protoset.is_some() && !typed.schema.import_paths.is_empty() {
        return fail("--import-path applies to --proto (a protoset has its imports)");
    }
    let excluded = [
        ("-m/--method", typed.method.is_some(), "a gRPC call is a POST"),
        ("--body", typed.body.is_some(), "--data gives the message"),
        ("--body-file", typed.body_file.is_some(), "--data @FILE gives the message"),
        ("--targets", typed.targets.is_some(), "every call goes to the URL's server"),
    ];
    if let Some((option, _, why)) = excluded.iter().find(|(_, given, _)| *given) {
        return Err(Error::Usage(format!("{option} cannot be used with --grpc: {why}")));
    }
    // A file that cannot be read is a setup error (exit 2); a mistake in
    // one is the command line's (exit 1).
    let unreadable = |option: &str, file: &Path, e: std::io::Error| {
        Error::Setup(format!("{option} {}: {}", file.display(), crate::error::io_reason(&e)))
    };
    let schema = &typed.schema;
    let files = schema.protos.iter().map(|f| ("--proto", f));
    for (option, file) in files.chain(schema.protoset.iter().map(|f| ("--protoset", f))) {
        std::fs::File::open(file).map_err(|e| unreadable(option, file, e))?;
    }
    let data = match typed.data.as_deref().map(|data| data.strip_prefix('@').ok_or(data)) {
        None => None,
        Some(Err(json)) => Some(json.to_string()),
        Some(Ok(file)) => Some(
            std::fs::read_to_string(file).map_err(|e| unreadable("--data", Path::new(file), e))?,
        ),
    };
    let options = CallOptions {
        data,
        gzip: typed.grpc_gzip,
        stream_count: typed.stream_count,
        stream_interval: typed.stream_interval,
        metadata: typed.headers.clone(),
    };
    if from_server {
        return Ok(Some(Grpc::FromServer(FromServer { name: name.clone(), options })));
    }
    let call = call::prepare(name, &typed.schema, &options).map_err(Error::Usage)?;
    if typed.script.is_some() {
        call.script_body().map_err(Error::Usage)?;
    }
    Ok(Some(Grpc::Call(call)))
}
