//! `wrk.grpc` in a script of a `--grpc` run: the call's messages as Lua
//! tables, with the method's schema.
//!
//! - `wrk.grpc.method`: `package.Service/Method` (also `wrk.path`, with
//!   its `/`).
//! - `wrk.grpc.encode(message)`: the request message (a table, fields by
//!   their `.proto` or JSON names, as protobuf's JSON mapping reads them)
//!   encoded and framed as a call's body (compressed with `--grpc-gzip`),
//!   for `wrk.format("POST", nil, nil, body)` or `wrk.body`. A table that
//!   is no such message is a Lua error naming the field.
//! - `wrk.grpc.decode(body)`: the first reply message in a response's
//!   body, as a table (fields by their `.proto` names, every field
//!   present, 64-bit integers as numbers); nil when the body holds no
//!   message (a call that failed), nil and the reason when it is not one.
//!
//! The call's status is the response's `grpc-status` header (the trailers
//! are among the headers `response()` gets).
//!
//! `wrk.method` is `POST`, and `wrk.body` the `--data` message, so a script
//! that only reads replies sends the command line's call.

use std::io::Read as _;

use mlua::{Lua, LuaSerdeExt, Table, Value};
use prost::Message as _;
use prost_reflect::{DynamicMessage, SerializeOptions};

use crate::grpc::call::{frame, Call};

/// Sets `wrk.grpc`, `wrk.method` and `wrk.body` for the calls of `call`.
pub fn register(lua: &Lua, wrk: &Table, call: &Call) -> mlua::Result<()> {
    let grpc = lua.create_table()?;
    grpc.raw_set("method", call.method.as_str())?;
    let (input, gzip) = (call.schema.input(), call.gzip);
    let encode = lua.create_function(move |lua, message: Value| {
        let json: serde_json::Value = lua.from_value(message)?;
        let message = DynamicMessage::deserialize(input.clone(), json).map_err(|e| {
            mlua::Error::runtime(format!("wrk.grpc.encode: not a {}: {e}", input.full_name()))
        })?;
        lua.create_string(frame(&message.encode_to_vec(), gzip))
    })?;
    grpc.raw_set("encode", encode)?;
    let output = call.schema.output();
    let decode = lua.create_function(move |lua, body: mlua::LuaString| {
        let decoded = match first_message(&body.as_bytes()) {
            Ok(None) => return Ok((Value::Nil, None)),
            Ok(Some(bytes)) => DynamicMessage::decode(output.clone(), &bytes[..])
                .map_err(|e| format!("not a {}: {e}", output.full_name())),
            Err(why) => Err(why),
        };
        let message = match decoded {
            Ok(message) => message,
            Err(why) => return Ok((Value::Nil, Some(why))),
        };
        let options = SerializeOptions::new()
            .use_proto_field_name(true)
            .skip_default_fields(false)
            .stringify_64_bit_integers(false);
        let json = message
            .serialize_with_options(serde_json::value::Serializer, &options)
            .map_err(mlua::Error::external)?;
        Ok((lua.to_value(&json)?, None))
    })?;
    grpc.raw_set("decode", decode)?;
    wrk.raw_set("grpc", grpc)?;
    wrk.raw_set("method", "POST")?;
    let body = call.script_body().map_err(mlua::Error::runtime)?;
    wrk.raw_set("body", lua.create_string(&body[..])?)
}

/// The first message of a gRPC body, decompressed: None for an empty body;
/// Err when the framing is cut short or the compression is not gzip's.
fn first_message(body: &[u8]) -> Result<Option<Vec<u8>>, String> {
    if body.is_empty() {
        return Ok(None);
    }
    let Some((&[flag, a, b, c, d], rest)) = body.split_first_chunk::<5>() else {
        return Err("a gRPC message cut short (its 5-byte prefix)".into());
    };
    let length = u32::from_be_bytes([a, b, c, d]) as usize;
    let Some(message) = rest.get(..length) else {
        return Err(format!("a gRPC message cut short ({} of {length} bytes)", rest.len()));
    };
    match flag {
        0 => Ok(Some(message.to_vec())),
        _ => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(message)
                .read_to_end(&mut out)
                .map_err(|e| format!("a compressed message that is not gzip's: {e}"))?;
            Ok(Some(out))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_message_of_a_body() {
        assert_eq!(first_message(b""), Ok(None));
        assert_eq!(first_message(&[0, 0, 0, 0, 2, 8, 1, 0, 0]), Ok(Some(vec![8, 1])));
        assert_eq!(
            first_message(&[0, 0, 0, 0, 3, 8]),
            Err("a gRPC message cut short (1 of 3 bytes)".into())
        );
        assert_eq!(
            first_message(&[0, 0]),
            Err("a gRPC message cut short (its 5-byte prefix)".into())
        );
        let framed = frame(b"hello", true);
        assert_eq!(first_message(&framed), Ok(Some(b"hello".to_vec())));
        let error = first_message(&[1, 0, 0, 0, 1, 9]).unwrap_err();
        assert!(error.starts_with("a compressed message that is not gzip's"), "{error}");
    }
}
