//! The reference docs cannot drift from the code: `docs/config.md` documents exactly the keys
//! of the configuration model, and `docs/cli.md` exactly the commands of the registry. Nor can
//! the fuzzers' dictionaries (`crates/dataplane/fuzz/dicts/`), made from the same two sources.

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

/// Every string of the schema a configuration is made of: each key, and each value an enum
/// or a constant allows.
fn schema_words(schema: &Value, out: &mut BTreeSet<String>) {
    match schema {
        Value::Object(m) => {
            for (k, v) in m {
                match k.as_str() {
                    "properties" => out.extend(v.as_object().into_iter().flat_map(|p| p.keys().cloned())),
                    "enum" => {
                        out.extend(v.as_array().into_iter().flatten().filter_map(|e| e.as_str().map(String::from)))
                    }
                    "const" => out.extend(v.as_str().map(String::from)),
                    _ => {}
                }
                schema_words(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| schema_words(v, out)),
        _ => {}
    }
}

/// A libFuzzer dictionary: a comment saying where it comes from, then one quoted entry a line
/// (`\"`, `\\` and `\xNN` escaped).
fn dictionary(source: &str, entries: &BTreeSet<String>) -> String {
    let mut text = format!("# {source}\n# Made by crates/dataplane/tests/docs.rs (VECFLOW_BLESS=1 writes it again).\n");
    for e in entries {
        text.push('"');
        for b in e.bytes() {
            match b {
                b'"' | b'\\' => text.push_str(&format!("\\{}", b as char)),
                0x20..=0x7e => text.push(b as char),
                _ => text.push_str(&format!("\\x{b:02X}")),
            }
        }
        text.push_str("\"\n");
    }
    text
}

/// The fuzz dictionaries are what the schema and the registry make of them: the configuration's
/// keys and enum values for the `config` and `apply` targets; the JSON-RPC framing, methods and
/// command words for `api`. With `VECFLOW_BLESS=1` the test writes them instead.
#[test]
fn fuzz_dictionaries_follow_the_schema_and_the_registry() {
    let schema = serde_json::to_value(schemars::schema_for!(Config)).unwrap();
    let mut config = BTreeSet::new();
    schema_words(&schema, &mut config);
    let config_keys: BTreeSet<String> = config.iter().map(|w| format!("{w}:")).collect();
    config.extend(config_keys);

    let mut api: BTreeSet<String> = ["jsonrpc", "2.0", "id", "method", "params", "api", "command", "config"]
        .iter()
        .chain(api::METHODS.iter())
        .map(|w| format!("\"{w}\""))
        .collect();
    api.insert(format!("\"api\": {}", api::API_VERSION));
    for c in Registry::with_builtins().commands() {
        api.insert(c.words.to_string());
        api.extend(c.words.split_whitespace().map(String::from));
    }

    let dicts = [
        (
            "config.dict",
            dictionary("The configuration's keys (also as `key:`) and enum values, from its schema.", &config),
        ),
        (
            "api.dict",
            dictionary("JSON-RPC framing, the API's methods and the CLI registry's commands and words.", &api),
        ),
    ];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/dicts");
    for (name, want) in dicts {
        let path = dir.join(name);
        if std::env::var_os("VECFLOW_BLESS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &want).unwrap();
            continue;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{} is not what the schema and the registry make; write it again with \
             VECFLOW_BLESS=1 cargo test -p dataplane --test docs",
            path.display()
        );
    }
}

/// Every fuzz target the fuzz crates build is in `scripts/fuzz-targets.sh`, the one list that
/// `./test.sh --full`, `scripts/fuzz-campaign.sh` and `scripts/long-checks.sh` run, and that
/// list names no target that is not built.
#[test]
fn every_fuzz_target_is_in_the_list_the_scripts_run() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut built = BTreeSet::new();
    for krate in ["dataplane", "sflow"] {
        let manifest = read(&format!("crates/{krate}/fuzz/Cargo.toml"));
        for bin in manifest.split("[[bin]]").skip(1) {
            let name = bin
                .lines()
                .find_map(|l| l.trim().strip_prefix("name = \""))
                .and_then(|rest| rest.strip_suffix('"'))
                .unwrap_or_else(|| panic!("crates/{krate}/fuzz/Cargo.toml: a [[bin]] without a name"));
            built.insert(format!("{krate}/{name}"));
        }
    }
    let script = read("scripts/fuzz-targets.sh");
    let listed: BTreeSet<String> = script
        .lines()
        .find_map(|l| l.strip_prefix("fuzz_targets=(")?.strip_suffix(')'))
        .expect("scripts/fuzz-targets.sh: no fuzz_targets=(...) line")
        .split_whitespace()
        .map(String::from)
        .collect();
    assert_eq!(listed, built, "scripts/fuzz-targets.sh lists other targets than the fuzz crates build");
    for target in &built {
        assert!(
            script.contains(&format!("        {target})")),
            "scripts/fuzz-targets.sh: fuzz_args has no case for {target}"
        );
    }
}
