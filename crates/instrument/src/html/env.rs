//! The environment record and the command of a result, as the page shows
//! them: every field the file has (known ones first, by name; fields added
//! later show too), each naming where it came from.

use super::page::{Cell, Page};
use serde_json::Value;

/// The fields of an environment record in the order shown, with their names.
const KNOWN: [(&str, &str); 10] = [
    ("hostname", "Host"),
    ("cpu_model", "CPU model"),
    ("cpus", "CPUs"),
    ("online_cpus", "CPUs online"),
    ("kernel", "Kernel"),
    ("kernel_cmdline", "Kernel command line"),
    ("detpath_version", "detpath version"),
    ("date", "Date (UTC)"),
    ("vm", "Virtual machine"),
    ("load", "Load average (1, 5, 15 min)"),
];

/// Fields shown elsewhere (the command has its own block).
const NOT_HERE: [&str; 3] = ["command", "command_line", "argv"];

fn show(v: &Value) -> String {
    match v {
        Value::String(s) if s.is_empty() => "-".into(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => if *b { "yes" } else { "no" }.into(),
        Value::Array(a) if a.is_empty() => "-".into(),
        Value::Array(a) => a.iter().map(show).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

fn cell(file: &str, pointer: &str, v: &Value) -> Cell {
    if v.is_number() {
        Cell::value(file, pointer, v, show)
    } else {
        Cell::text(show(v))
    }
}

/// Renders the environment record `env` found at `pointer` of `file`
/// (a JSON object) as the section's key-value list.
pub fn environment(page: &mut Page, id: &str, file: &str, pointer: &str, env: &Value) {
    let Some(obj) = env.as_object() else {
        page.text_with(id, "missing", &format!("{file} has no environment record: the CPU model, cores and kernel of the host that measured are not known."));
        return;
    };
    let mut pairs: Vec<(String, Cell)> = Vec::new();
    for (k, name) in KNOWN {
        if let Some(v) = obj.get(k) {
            pairs.push((name.to_string(), cell(file, &format!("{pointer}/{k}"), v)));
        }
    }
    for (k, v) in obj {
        if !KNOWN.iter().any(|(x, _)| x == k) && !NOT_HERE.contains(&k.as_str()) {
            pairs.push((k.replace('_', " "), cell(file, &format!("{pointer}/{k}"), v)));
        }
    }
    page.pairs(id, &pairs);
}

/// The command that made the result, if the file recorded it (a string,
/// or an argument list), from `command`, `command_line` or `argv` of any
/// of the objects given.
pub fn command_of<'a>(objects: impl IntoIterator<Item = &'a Value>) -> Option<String> {
    for o in objects {
        for k in NOT_HERE {
            match o.get(k) {
                Some(Value::String(s)) if !s.is_empty() => return Some(s.clone()),
                Some(Value::Array(a)) if !a.is_empty() => {
                    return Some(a.iter().map(|x| x.as_str().map(quote).unwrap_or_else(|| x.to_string())).collect::<Vec<_>>().join(" "))
                }
                _ => {}
            }
        }
    }
    None
}

/// An argument as a POSIX shell reads it back.
fn quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The command block: the command, or that the result did not record it.
pub fn command(page: &mut Page, command: Option<String>, what_made_it: &str) {
    match command {
        Some(c) => page.pre("command", &c),
        None => page.text_with(
            "command",
            "missing",
            &format!("The command line was not recorded in this result (results written before detpath recorded it); it was made by {what_made_it}."),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_found_and_quoted() {
        let a = serde_json::json!({"command": ["detpath", "bench", "--keys", "a b", "--out", "r"]});
        assert_eq!(command_of([&a]).unwrap(), "detpath bench --keys 'a b' --out r");
        let b = serde_json::json!({"environment": {}, "command_line": "detpath sched bench"});
        assert_eq!(command_of([&serde_json::json!({}), &b]).unwrap(), "detpath sched bench");
        assert_eq!(command_of([&serde_json::json!({"command": ""})]), None);
    }
}
