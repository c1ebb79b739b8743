//! gRPC over pace's own HTTP/2: a unary call is an HTTP/2 request (`POST
//! /package.Service/Method`, `content-type: application/grpc`, the message
//! in gRPC's length-prefixed framing) whose status comes in the
//! `grpc-status` trailer. The schema comes from `.proto` files or a
//! descriptor set ([`schema`]), or from the server's reflection service
//! ([`reflection`]); a call's message from JSON, encoded once ([`call`]);
//! its outcome is a status code (`crate::grpc_status`).

pub mod call;
pub mod reflection;
pub mod schema;
pub mod template;
