//! Lua errors as pace reports them: always `file:line: message`, and for
//! runtime errors the Lua traceback below it. wrk called Lua unprotected
//! and died with `PANIC: unprotected error in call to Lua API` (wg/wrk#45,
//! #130, #298); every call here is protected and its error described.

use std::fmt;

use mlua::Lua;

pub use crate::workload::ScriptError;

/// A runtime error in a script function called during the run (`init`,
/// `request`, `response`, `delay`): the message with its `file:line` and
/// the Lua traceback, a [`ScriptError`] that stops the run (exit 3).
impl From<ScriptError> for crate::error::Error {
    fn from(err: ScriptError) -> crate::error::Error {
        crate::error::Error::Script(err.0)
    }
}

impl From<mlua::Error> for ScriptError {
    fn from(err: mlua::Error) -> ScriptError {
        ScriptError(describe(&err))
    }
}

/// An error raised by a Rust function called from Lua, prefixed with where
/// the calling Lua code is, as C's `luaL_error` does (`luaL_where(L, 1)`).
pub fn located_error(lua: &Lua, message: impl fmt::Display) -> mlua::Error {
    mlua::Error::RuntimeError(format!("{}{message}", caller_position(lua)))
}

/// `file:line: ` of the Lua function that called the running Rust
/// function, or nothing when that is not Lua code.
fn caller_position(lua: &Lua) -> String {
    lua.inspect_stack(1, |debug| {
        let line = debug.current_line()?;
        let source = debug.source().short_src?.into_owned();
        Some(format!("{source}:{line}: "))
    })
    .flatten()
    .unwrap_or_default()
}

/// The text of an error from mlua, without mlua's own decorations
/// (`runtime error: `, `syntax error: `): the Lua message, which starts
/// with `file:line:`, then the traceback when there is one.
pub fn describe(err: &mlua::Error) -> String {
    match err {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(message) => message.clone(),
        mlua::Error::CallbackError { traceback, cause } => {
            // Nested callbacks: the innermost error is the cause, and its
            // traceback is the deepest.
            if let mlua::Error::CallbackError { .. } = **cause {
                return describe(cause);
            }
            format!("{}\n{traceback}", describe(cause))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_from_rust_functions_name_the_lua_caller() {
        let lua = Lua::new();
        let fail = lua
            .create_function(|lua, ()| -> mlua::Result<()> { Err(located_error(lua, "it broke")) });
        lua.globals().set("fail", fail.unwrap()).unwrap();
        let err = lua.load("\n\nfail()").set_name("@s.lua").exec().unwrap_err();
        let text = describe(&err);
        assert!(text.starts_with("s.lua:3: it broke\nstack traceback:"), "{text}");
    }

    #[test]
    fn lua_errors_keep_their_position_and_traceback() {
        let lua = Lua::new();
        let err = lua.load("local x = nil\nreturn x.y").set_name("@s.lua").exec().unwrap_err();
        let text = describe(&err);
        assert!(text.starts_with("s.lua:2: attempt to index local 'x' (a nil value)"), "{text}");
        assert!(text.contains("stack traceback:"), "{text}");
    }

    #[test]
    fn syntax_errors_are_the_bare_message() {
        let lua = Lua::new();
        let err = lua.load("x = = 1").set_name("@s.lua").exec().unwrap_err();
        assert_eq!(describe(&err), "s.lua:1: unexpected symbol near '='");
    }
}
