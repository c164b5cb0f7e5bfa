//! The reference docs cannot drift from the code: `docs/config.md` documents exactly the keys
//! of the configuration model, and `docs/cli.md` exactly the commands of the registry.

use dataplane::config::Config;
use dataplane::control::cli::Registry;
use serde_json::Value;
use std::collections::BTreeSet;

fn doc(name: &str) -> String {
    let path = format!("{}/../../docs/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every key of the schema under `prefix`, dotted: maps of named things as `<name>` (`<id>`
/// for sub-interfaces), lists as `[]`.
fn keys(schema: &Value, defs: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap();
        return keys(&defs[name], defs, prefix, out);
    }
    for variants in ["anyOf", "oneOf", "allOf"] {
        for v in schema.get(variants).and_then(Value::as_array).into_iter().flatten() {
            keys(v, defs, prefix, out);
        }
    }
    for (k, v) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
        let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        out.insert(key.clone());
        keys(v, defs, &key, out);
    }
    let name = if prefix.ends_with("sub-interfaces") { "<id>" } else { "<name>" };
    if let Some(ap) = schema.get("additionalProperties").filter(|v| v.is_object()) {
        keys(ap, defs, &format!("{prefix}.{name}"), out);
    }
    for v in schema.get("patternProperties").and_then(Value::as_object).into_iter().flat_map(|m| m.values()) {
        keys(v, defs, &format!("{prefix}.{name}"), out);
    }
    if let Some(items) = schema.get("items") {
        keys(items, defs, &format!("{prefix}[]"), out);
    }
}

/// The keys a doc's tables list: the first cell of each table row, in backticks.
fn documented(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(k, _)| k.to_string()))
        .collect()
}

#[test]
fn config_reference_lists_every_key_and_no_other() {
    let schema = serde_json::to_value(schemars::schema_for!(Config)).unwrap();
    let mut model = BTreeSet::new();
    keys(&schema, &schema["$defs"], "", &mut model);
    let docs = documented(&doc("config.md"));
    let missing: Vec<_> = model.difference(&docs).collect();
    let unknown: Vec<_> = docs.difference(&model).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "undocumented keys: {missing:#?}\nkeys that do not exist: {unknown:#?}"
    );
}

#[test]
fn cli_reference_lists_every_command_and_no_other() {
    let registry: BTreeSet<String> = Registry::with_builtins().commands().iter().map(|c| c.words.to_string()).collect();
    let docs = documented(&doc("cli.md"));
    let missing: Vec<_> = registry.difference(&docs).collect();
    let unknown: Vec<_> = docs.difference(&registry).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "undocumented commands: {missing:#?}\ncommands that do not exist: {unknown:#?}"
    );
}
