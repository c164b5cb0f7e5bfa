//! Arrows point down: the runtime (`src/runtime`) knows no feature. No file in it may name a
//! module of the crate outside the runtime (`crate::ip4`, `crate::{runtime, sflow}`, …), in
//! code or in doc links, so that buffers, vectors and the scheduler can be read, tested and
//! changed without any protocol in view (docs/architecture.md).

use std::path::Path;

/// Every `crate::NAME` in `text` (also each name of a `crate::{A, B::{c, d}}` group, which may
/// span lines), with its line.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("crate::") {
        let line = text[..at].matches('\n').count() + 1;
        let rest = &text[at + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            found.push((line, first_name(rest)));
            continue;
        };
        // The group's first-level names: what is inside nested braces belongs to them.
        let (mut depth, mut item) = (0, String::new());
        for c in group.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth > 0 => depth -= 1,
                '}' | ',' if depth == 0 => {
                    if !item.trim().is_empty() {
                        found.push((line, first_name(item.trim())));
                    }
                    item.clear();
                    if c == '}' {
                        break;
                    }
                }
                _ if depth == 0 => item.push(c),
                _ => {}
            }
        }
    }
    found
}

fn first_name(path: &str) -> String {
    path.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

#[test]
fn the_runtime_names_no_module_outside_it() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/runtime");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() > 10, "the runtime's files are in {}", dir.display());
    let mut outside = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, name) in crate_paths(&text) {
            if name != "runtime" {
                outside.push(format!("{}:{line}: crate::{name}", file.display()));
            }
        }
        if file.ends_with("mod.rs") && text.contains("super::") {
            outside.push(format!("{}: super:: leaves the runtime", file.display()));
        }
    }
    assert!(outside.is_empty(), "the runtime imports features:\n{}", outside.join("\n"));
}

#[test]
fn paths_are_found_alone_and_in_groups() {
    let text = "use crate::runtime::buffer;\nuse crate::{ip4, runtime::tsc};\n/// [`crate::sflow::ring`]\n\
                use crate::{\n    runtime::{qsbr, tsc},\n    l3::fib,\n};";
    let names: Vec<_> = crate_paths(text).into_iter().map(|(l, n)| format!("{l}:{n}")).collect();
    assert_eq!(names, ["1:runtime", "2:ip4", "2:runtime", "3:sflow", "4:runtime", "4:l3"]);
}
