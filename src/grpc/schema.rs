//! The schema of the calls: `.proto` files compiled in process (protox,
//! so no `protoc` on the user's machine) or a compiled descriptor set
//! (`--protoset`, as `protoc --descriptor_set_out --include_imports`
//! writes it), and the method a `--grpc` name picks in it.

use std::path::{Path, PathBuf};

use prost_reflect::{DescriptorPool, MethodDescriptor};

/// Where the schema comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sources {
    /// `--proto`, in order.
    pub protos: Vec<PathBuf>,
    /// `--import-path`, in order.
    pub import_paths: Vec<PathBuf>,
    /// `--protoset`.
    pub protoset: Option<PathBuf>,
}

/// The descriptors `sources` name, or why they cannot be read.
pub fn load(sources: &Sources) -> Result<DescriptorPool, String> {
    match &sources.protoset {
        Some(file) => protoset(file),
        None => compile(&sources.protos, &sources.import_paths),
    }
}

/// A descriptor set file.
fn protoset(file: &Path) -> Result<DescriptorPool, String> {
    let bytes = std::fs::read(file)
        .map_err(|e| format!("--protoset {}: {}", file.display(), crate::error::io_reason(&e)))?;
    DescriptorPool::decode(&bytes[..])
        .map_err(|e| format!("--protoset {}: not a compiled descriptor set ({e})", file.display()))
}

/// `.proto` files, their imports looked up in `import_paths` and then in
/// each file's own directory (as ghz does).
fn compile(protos: &[PathBuf], import_paths: &[PathBuf]) -> Result<DescriptorPool, String> {
    let mut includes: Vec<PathBuf> = import_paths.to_vec();
    for proto in protos {
        let dir = proto.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !includes.iter().any(|known| known == dir) {
            includes.push(dir.to_path_buf());
        }
    }
    let mut compiler = protox::Compiler::new(&includes).map_err(|e| format!("--proto: {e}"))?;
    compiler.include_imports(true);
    for proto in protos {
        if let Err(e) = compiler.open_file(proto) {
            return Err(format!("--proto {}: {e}", proto.display()));
        }
    }
    Ok(compiler.descriptor_pool())
}

/// The service and method `name` names: `package.Service/Method`, or
/// ghz's `package.Service.Method`.
pub fn service_and_method(name: &str) -> Result<(&str, &str), String> {
    name.split_once('/')
        .or_else(|| name.rsplit_once('.'))
        .filter(|(service, method)| !service.is_empty() && !method.is_empty())
        .ok_or_else(|| format!("--grpc {name}: name a method as package.Service/Method"))
}

/// The method `name` names ([`service_and_method`]) in `pool`.
pub fn method(pool: &DescriptorPool, name: &str) -> Result<MethodDescriptor, String> {
    let (service, method) = service_and_method(name)?;
    let Some(found) = pool.get_service_by_name(service) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        let known = match known.is_empty() {
            true => "the schema has no service".to_string(),
            false => format!("the schema has {}", known.join(", ")),
        };
        return Err(format!("--grpc {name}: no service {service} ({known})"));
    };
    let wanted = found.methods().find(|m| m.name() == method);
    wanted.ok_or_else(|| {
        let known: Vec<String> = found.methods().map(|m| m.name().to_string()).collect();
        format!("--grpc {name}: {service} has no method {method} (it has {})", known.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GREETER: &str = r#"
        syntax = "proto3";
        package helloworld;
        import "common/name.proto";
        service Greeter { rpc SayHello (HelloRequest) returns (HelloReply); }
        message HelloRequest { common.Name name = 1; }
        message HelloReply { string message = 1; }
    "#;
    const NAME: &str = r#"
        syntax = "proto3";
        package common;
        message Name { string first = 1; }
    "#;

    fn files() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("protos/common")).unwrap();
        std::fs::write(dir.path().join("protos/greeter.proto"), GREETER).unwrap();
        std::fs::write(dir.path().join("protos/common/name.proto"), NAME).unwrap();
        dir
    }

    #[test]
    fn a_proto_with_imports_from_its_own_directory() {
        let dir = files();
        let sources =
            Sources { protos: vec![dir.path().join("protos/greeter.proto")], ..Sources::default() };
        let pool = load(&sources).unwrap();
        let method = method(&pool, "helloworld.Greeter/SayHello").unwrap();
        assert_eq!(method.input().full_name(), "helloworld.HelloRequest");
        let ghz = super::method(&pool, "helloworld.Greeter.SayHello").unwrap();
        assert_eq!(ghz.full_name(), method.full_name());
    }

    #[test]
    fn a_protoset_reads_back_what_protox_compiled() {
        let dir = files();
        let mut compiler = protox::Compiler::new([dir.path().join("protos")]).unwrap();
        compiler.include_imports(true).open_file("greeter.proto").unwrap();
        let set = dir.path().join("greeter.protoset");
        std::fs::write(&set, compiler.encode_file_descriptor_set()).unwrap();
        let pool = load(&Sources { protoset: Some(set), ..Sources::default() }).unwrap();
        assert!(method(&pool, "helloworld.Greeter/SayHello").is_ok());
    }

    #[test]
    fn bad_schemas_and_unknown_methods_in_words() {
        let dir = files();
        let broken = dir.path().join("broken.proto");
        std::fs::write(&broken, "syntax = \"proto3\";\nmessage {").unwrap();
        let error = load(&Sources { protos: vec![broken], ..Sources::default() }).unwrap_err();
        assert!(error.starts_with("--proto "), "{error}");
        let missing = dir.path().join("missing.proto");
        let error = load(&Sources { protos: vec![missing], ..Sources::default() }).unwrap_err();
        assert!(error.contains("missing.proto"), "{error}");
        let junk = dir.path().join("junk.protoset");
        std::fs::write(&junk, b"\xff\xff\xff").unwrap();
        let error = load(&Sources { protoset: Some(junk), ..Sources::default() }).unwrap_err();
        assert!(error.contains("not a compiled descriptor set"), "{error}");

        let sources =
            Sources { protos: vec![dir.path().join("protos/greeter.proto")], ..Sources::default() };
        let pool = load(&sources).unwrap();
        let error = method(&pool, "helloworld.Greeter/SayBye").unwrap_err();
        assert_eq!(
            error,
            "--grpc helloworld.Greeter/SayBye: helloworld.Greeter has no method SayBye \
             (it has SayHello)"
        );
        let error = method(&pool, "nope.Svc/M").unwrap_err();
        assert!(
            error.contains("no service nope.Svc (the schema has helloworld.Greeter)"),
            "{error}"
        );
        assert!(method(&pool, "SayHello").is_err());
    }
}
