//! Copying Lua values between states (`thread:get/set`).

use mlua::{Lua, Value};

use crate::script::Transfer;

use super::input::Input;

/// Values built per input, at most.
const MAX_STEPS: usize = 256;

/// Doublings (a table holding the same value twice) per input, at most:
/// each one doubles the size of the copy, and with many the copy is slow
/// to reach its limit.
const MAX_DOUBLINGS: usize = 16;

/// Bytes of large strings built per input, at most.
const MAX_LARGE_STRINGS: usize = 1 << 20;

/// Builds values in a Lua state from the input (scalars, strings up to
/// 256 KiB, tables filled with earlier values, tables nested up to 511
/// deep, tables holding the same table twice over up to 16 levels,
/// functions and coroutines, and tables that contain themselves), copies
/// the last one out and into another state and out again. The copy must
/// equal the original, or the copy fail with a message; no panic, no hang.
/// (Deeper and larger values only take longer to reach the same limits:
/// the unit tests of `script::value` have them.)
pub fn lua_transfer(data: &[u8]) {
    let mut input = Input::new(data);
    let from = Lua::new();
    let mut pool = vec![Value::Nil];
    let (mut large, mut doublings) = (0, 0);
    for _ in 0..MAX_STEPS {
        if input.is_empty() {
            break;
        }
        let pick = |input: &mut Input, pool: &[Value]| pool[input.below(pool.len())].clone();
        let value = match input.byte() % 12 {
            0 => Value::Nil,
            1 => Value::Boolean(input.bool()),
            2 => Value::Number(f64::from_bits(input.u64())),
            3 => Value::Integer(mlua::Integer::from(input.byte() as i8)),
            4 => Value::String(from.create_string(input.bytes(64)).unwrap()),
            5 => {
                let length = (1 + usize::from(input.byte() % 4)) << 16;
                if large + length > MAX_LARGE_STRINGS {
                    continue;
                }
                large += length;
                let fill = input.byte();
                Value::String(from.create_string(vec![fill; length]).unwrap())
            }
            6 => Value::Table(from.create_table().unwrap()),
            7 => {
                let (table, key, value) =
                    (pick(&mut input, &pool), pick(&mut input, &pool), pick(&mut input, &pool));
                if let Value::Table(table) = table {
                    // A nil or NaN key is Lua's error, not ours.
                    let _ = table.raw_set(key, value);
                }
                continue;
            }
            8 => Value::Function(from.create_function(|_, ()| Ok(())).unwrap()),
            9 => {
                let body = from.create_function(|_, ()| Ok(())).unwrap();
                Value::Thread(from.create_thread(body).unwrap())
            }
            10 => {
                let mut value = pick(&mut input, &pool);
                for _ in 0..input.u16() % 512 {
                    let table = from.create_table().unwrap();
                    table.raw_set(1, value).unwrap();
                    value = Value::Table(table);
                }
                value
            }
            _ => {
                let mut value = pick(&mut input, &pool);
                let levels = usize::from(input.byte() % 16).min(MAX_DOUBLINGS - doublings);
                doublings += levels;
                for _ in 0..levels {
                    let table = from.create_table().unwrap();
                    table.raw_set("a", value.clone()).unwrap();
                    table.raw_set("b", value).unwrap();
                    value = Value::Table(table);
                }
                value
            }
        };
        pool.push(value);
    }
    let root = pool.pop().unwrap_or(Value::Nil);
    check_transfer(&root);
}

/// Copies `value` out of its state, into a new one and out again: the two
/// detached values must be equal, unless the first copy fails.
pub fn check_transfer(value: &Value) {
    let detached = match Transfer::from_lua(value) {
        Ok(detached) => detached,
        Err(message) => {
            assert!(message.starts_with("cannot transfer"), "{message}");
            return;
        }
    };
    let to = Lua::new();
    let copied = detached.clone().into_lua(&to).expect("a detached value can be created");
    let again = Transfer::from_lua(&copied).expect("a copied value can be copied");
    assert!(same(&detached, &again), "{detached:?} copied as {again:?}");
}

/// Equal values: numbers by value (NaN equals NaN), tables as sets of
/// pairs whatever their order.
pub fn same(a: &Transfer, b: &Transfer) -> bool {
    match (a, b) {
        (Transfer::Number(a), Transfer::Number(b)) => a == b || (a.is_nan() && b.is_nan()),
        (Transfer::Table(a), Transfer::Table(b)) => {
            let mut unmatched: Vec<&(Transfer, Transfer)> = b.iter().collect();
            a.len() == b.len()
                && a.iter().all(|(key, value)| {
                    let found = unmatched.iter().position(|(other_key, other_value)| {
                        same(key, other_key) && same(value, other_value)
                    });
                    found.map(|index| unmatched.swap_remove(index)).is_some()
                })
        }
        (a, b) => a == b,
    }
}
