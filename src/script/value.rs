//! Copying a value from one Lua state to another, for `thread:get` and
//! `thread:set` (wrk's `script_copy_value`): nil, booleans, numbers,
//! strings and tables of these, nested to any depth. Anything else raises
//! `cannot transfer '<type>' to thread`.
//!
//! Tables keep their keys as keys and their values as values; wrk2 and its
//! forks swap them (giltene/wrk2#57, #91, #112). A table that contains
//! itself raises an error instead of recursing until the stack overflows,
//! and so do tables nested more than [`MAX_DEPTH`] deep and copies larger
//! than [`MAX_BYTES`] (a table holding the same table twice, 60 levels
//! deep, is small in Lua and 2^60 tables copied).

use mlua::{Lua, Table, Value};

/// A Lua value detached from any state.
#[derive(Clone, Debug, PartialEq)]
pub enum Transfer {
    Nil,
    Boolean(bool),
    Number(f64),
    String(Vec<u8>),
    /// Key/value pairs in the source's `next` order.
    Table(Vec<(Transfer, Transfer)>),
}

impl Transfer {
    /// Copies `value` out of its state.
    pub fn from_lua(value: &Value) -> Result<Transfer, String> {
        copy_out(value, &mut Copying { path: Vec::new(), bytes: 0 })
    }

    /// Creates the value in `lua`.
    pub fn into_lua(self, lua: &Lua) -> mlua::Result<Value> {
        Ok(match self {
            Transfer::Nil => Value::Nil,
            Transfer::Boolean(b) => Value::Boolean(b),
            Transfer::Number(n) => Value::Number(n),
            Transfer::String(bytes) => Value::String(lua.create_string(bytes)?),
            Transfer::Table(pairs) => {
                let table = lua.create_table_with_capacity(0, pairs.len())?;
                for (key, value) in pairs {
                    table.raw_set(key.into_lua(lua)?, value.into_lua(lua)?)?;
                }
                Value::Table(table)
            }
        })
    }
}

/// Tables nested deeper are refused: copying recurses (out of the source
/// state and into the target), about 1.3 KiB of stack per level in a
/// release build and 5 to 7 KiB in a debug build, and an engine thread has
/// 2 MiB. Found by fuzzing: 65535 levels overflowed the stack.
const MAX_DEPTH: usize = 100;

/// The most a copy may hold, counting [`VALUE_BYTES`] per value plus the
/// bytes of strings: far beyond what a script hands between states, and
/// short of the memory of the machine. Found by fuzzing: tables holding
/// the same table twice, nested 63 deep, ran for ever.
const MAX_BYTES: usize = 256 << 20;

/// What a value costs in a copy besides the bytes of a string.
const VALUE_BYTES: usize = std::mem::size_of::<Transfer>();

/// A copy under way.
struct Copying {
    /// The tables being copied, outermost first, to catch cycles.
    path: Vec<*const std::ffi::c_void>,
    /// The size of the copy so far.
    bytes: usize,
}

fn copy_out(value: &Value, copying: &mut Copying) -> Result<Transfer, String> {
    let string_bytes = match value {
        Value::String(s) => s.as_bytes().len(),
        _ => 0,
    };
    copying.bytes += VALUE_BYTES + string_bytes;
    if copying.bytes > MAX_BYTES {
        return Err(format!("cannot transfer more than {} MiB to thread", MAX_BYTES >> 20));
    }
    Ok(match value {
        Value::Nil => Transfer::Nil,
        Value::Boolean(b) => Transfer::Boolean(*b),
        Value::Integer(n) => Transfer::Number(*n as f64),
        Value::Number(n) => Transfer::Number(*n),
        Value::String(s) => Transfer::String(s.as_bytes().to_vec()),
        Value::Table(table) => copy_table(table, copying)?,
        other => return Err(format!("cannot transfer '{}' to thread", lua_type_name(other))),
    })
}

fn copy_table(table: &Table, copying: &mut Copying) -> Result<Transfer, String> {
    let id = table.to_pointer();
    if copying.path.contains(&id) {
        return Err("cannot transfer a table that contains itself to thread".to_string());
    }
    if copying.path.len() == MAX_DEPTH {
        return Err(format!("cannot transfer tables nested more than {MAX_DEPTH} deep to thread"));
    }
    copying.path.push(id);
    let mut pairs = Vec::new();
    // Raw iteration, as lua_next: metamethods are not consulted.
    table
        .for_each(|key: Value, value: Value| {
            match (copy_out(&key, copying), copy_out(&value, copying)) {
                (Ok(key), Ok(value)) => {
                    pairs.push((key, value));
                    Ok(())
                }
                (Err(message), _) | (_, Err(message)) => Err(mlua::Error::RuntimeError(message)),
            }
        })
        .map_err(|err| match err {
            mlua::Error::RuntimeError(message) => message,
            other => other.to_string(),
        })?;
    copying.path.pop();
    Ok(Transfer::Table(pairs))
}

/// The type name Lua itself uses (`luaL_typename`), which mlua's
/// `Value::type_name` does not always match (`integer`, `other`...).
pub fn lua_type_name(value: &Value) -> &'static str {
    match value {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        Value::LightUserData(_) | Value::UserData(_) | Value::Error(_) => "userdata",
        // LuaJIT's only other type.
        _ => "cdata",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `code`'s value copied into another state, and detached again.
    fn copy(code: &str) -> Result<Transfer, String> {
        let from = Lua::new();
        let to = Lua::new();
        let value: Value = from.load(code).eval().unwrap();
        let copied = Transfer::from_lua(&value)?.into_lua(&to).unwrap();
        Transfer::from_lua(&copied)
    }

    #[test]
    fn scalars_survive() {
        assert_eq!(copy("return nil").unwrap(), Transfer::Nil);
        assert_eq!(copy("return true").unwrap(), Transfer::Boolean(true));
        assert_eq!(copy("return 1.5").unwrap(), Transfer::Number(1.5));
        assert_eq!(copy("return 'a\\0b'").unwrap(), Transfer::String(b"a\0b".to_vec()));
    }

    #[test]
    fn nested_tables_keep_keys_and_values_in_place() {
        let to = Lua::new();
        let from = Lua::new();
        let value: Value = from
            .load("return { 10, 20, name = 'x', [5] = true, inner = { id = 7, list = { 'a', 'b' } } }")
            .eval()
            .unwrap();
        to.globals().set("t", Transfer::from_lua(&value).unwrap().into_lua(&to).unwrap()).unwrap();
        let check: String = to
            .load(
                "return table.concat({ t[1], t[2], t.name, tostring(t[5]), t.inner.id, \
                 t.inner.list[1], t.inner.list[2], #t.inner.list }, ',')",
            )
            .eval()
            .unwrap();
        assert_eq!(check, "10,20,x,true,7,a,b,2");
    }

    #[test]
    fn functions_and_cycles_are_refused() {
        assert_eq!(copy("return print").unwrap_err(), "cannot transfer 'function' to thread");
        assert_eq!(
            copy("return { f = { g = coroutine.create(print) } }").unwrap_err(),
            "cannot transfer 'thread' to thread"
        );
        assert_eq!(
            copy("local t = {} t.self = t return t").unwrap_err(),
            "cannot transfer a table that contains itself to thread"
        );
        // The same table twice, but not inside itself, is fine.
        assert!(copy("local t = {1} return { a = t, b = t }").is_ok());
    }

    /// Fuzzing regression: 65535 nested tables overflowed the stack.
    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let nest =
            |depth: usize| format!("local t = 1 for _ = 1, {depth} do t = {{ t }} end return t");
        assert!(copy(&nest(MAX_DEPTH)).is_ok());
        let refused = "cannot transfer tables nested more than 100 deep to thread";
        assert_eq!(copy(&nest(MAX_DEPTH + 1)).unwrap_err(), refused);
        assert_eq!(copy(&nest(100_000)).unwrap_err(), refused);
    }

    /// Fuzzing regression: a table holding the same table twice, 63 levels
    /// deep, is 2^63 tables to copy; the copy ran for ever.
    #[test]
    fn copies_larger_than_the_limit_are_refused() {
        // (A string of 1 MiB at the bottom reaches the limit sooner.)
        let doubled = "local t = { string.rep('x', 2^20) } \
            for _ = 1, 63 do t = { t, t } end return t";
        assert_eq!(copy(doubled).unwrap_err(), "cannot transfer more than 256 MiB to thread");
        let strings = "local s = string.rep('x', 2^20) local t = {} \
            for i = 1, 300 do t[i] = s end return t";
        assert_eq!(copy(strings).unwrap_err(), "cannot transfer more than 256 MiB to thread");
        let large = "local s = string.rep('x', 2^20) local t = {} \
            for i = 1, 200 do t[i] = s end return t";
        assert!(copy(large).is_ok());
    }
}
