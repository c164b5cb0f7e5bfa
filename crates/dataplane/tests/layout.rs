//! Arrows point down: the runtime (`src/runtime`) knows no feature. No file in it may name a
//! module of the crate outside the runtime (`crate::ip4`, `crate::{runtime, sflow}`, …), in
//! code or in doc links, nor a node or drop reason a feature declares (their `show runtime` and
//! `show errors` names), so that buffers, vectors and the scheduler can be read, tested and
//! changed without any protocol in view (docs/architecture.md).
//!
//! And between the folders of `src`, every arrow points down: no folder names a folder that
//! names it back, however far round, and the floors `docs/architecture.md` draws are the
//! code's (each arrow from a higher floor to a lower one, every folder on one floor).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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
    let files = sources(&dir);
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
fn the_runtime_names_no_node_and_no_drop_reason() {
    use dataplane::datapath::registry::{DROPS, NODES};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/runtime");
    let names: BTreeSet<&str> = NODES.iter().map(|n| n.name).chain(DROPS.iter().map(|d| d.name)).collect();
    assert!(names.contains("ip4-input") && names.contains("truncated-ethernet"), "the features' lists were read");
    let mut named = Vec::new();
    for file in sources(&dir) {
        let text = code_only(&without_tests(&std::fs::read_to_string(&file).unwrap()));
        for (k, literal) in text.split('"').enumerate().filter(|(k, _)| k % 2 == 1) {
            if names.contains(literal) {
                named.push(format!("{}: \"{literal}\" (string {k})", file.display()));
            }
        }
    }
    assert!(named.is_empty(), "the runtime names a feature's node or drop reason:\n{}", named.join("\n"));
}

#[test]
fn paths_are_found_alone_and_in_groups() {
    let text = "use crate::runtime::buffer;\nuse crate::{ip4, runtime::tsc};\n/// [`crate::sflow::ring`]\n\
                use crate::{\n    runtime::{qsbr, tsc},\n    l3::fib,\n};";
    let names: Vec<_> = crate_paths(text).into_iter().map(|(l, n)| format!("{l}:{n}")).collect();
    assert_eq!(names, ["1:runtime", "2:ip4", "2:runtime", "3:sflow", "4:runtime", "4:l3"]);
}

/// The source text without its test-only items: what follows a `#[cfg(test)]` line, up to the
/// end of that item (its braces balanced, or its `;`).
fn without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let mut depth = 0i32;
        for item in lines.by_ref() {
            depth += item.matches('{').count() as i32 - item.matches('}').count() as i32;
            if depth <= 0 && (item.contains('}') || item.trim_end().ends_with(';')) {
                break;
            }
        }
        out.push('\n');
    }
    out
}

/// The code of `text`: comments (and so doc links) blanked out, line by line.
fn code_only(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// Every `.rs` file under `dir`, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The folders each folder of `src` names in its code, tests left out: `crate::X` paths (in
/// `use` lines, groups and inline) and `super::` paths that climb out of the folder.
fn folder_arrows() -> BTreeSet<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut arrows = BTreeSet::new();
    for file in sources(&src) {
        let rel = file.strip_prefix(&src).unwrap();
        let mut module: Vec<String> =
            rel.iter().map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string()).collect();
        if module.last().is_some_and(|m| m.ends_with("tests")) {
            continue; // a test module in a file of its own (`tests.rs`, `kernel_tests.rs`)
        }
        if module.last().is_some_and(|m| m == "mod" || m == "lib") {
            module.pop();
        }
        let Some(folder) = module.first().cloned() else { continue };
        let text = code_only(&without_tests(&std::fs::read_to_string(&file).unwrap()));
        let mut named: Vec<String> = crate_paths(&text).into_iter().map(|(_, n)| n).collect();
        for (at, _) in text.match_indices("super::") {
            // From the first `super::` of a chain: a chain as long as the module's path lands
            // at the crate's root, and the name after it is a folder.
            if text[..at].ends_with("super::") {
                continue;
            }
            let mut rest = &text[at..];
            let mut ups = 0;
            while let Some(r) = rest.strip_prefix("super::") {
                (rest, ups) = (r, ups + 1);
            }
            if ups >= module.len() {
                named.push(first_name(rest));
            }
        }
        for name in named {
            if !name.is_empty() && name != folder && src.join(&name).is_dir() {
                arrows.insert((folder.clone(), name));
            }
        }
    }
    arrows
}

/// The arrows that lie on a circle: A -> B where B also reaches A.
fn arrows_on_circles(arrows: &BTreeSet<(String, String)>) -> BTreeSet<(String, String)> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in arrows {
        next.entry(a).or_default().push(b);
    }
    let reaches = |from: &str, to: &str| {
        let (mut seen, mut stack) = (BTreeSet::new(), vec![from]);
        while let Some(f) = stack.pop() {
            if f == to {
                return true;
            }
            if seen.insert(f) {
                stack.extend(next.get(f).into_iter().flatten());
            }
        }
        false
    };
    arrows.iter().filter(|(a, b)| reaches(b, a)).cloned().collect()
}

#[test]
fn no_import_circle_between_folders() {
    let arrows = folder_arrows();
    assert!(arrows.contains(&("control".into(), "runtime".into())), "the folder graph was read: {arrows:?}");
    let on_circles: Vec<String> = arrows_on_circles(&arrows).iter().map(|(a, b)| format!("{a} -> {b}")).collect();
    assert!(
        on_circles.is_empty(),
        "folders of src/ import each other in a circle; these arrows lie on one: {on_circles:#?}\n\
         Point the arrow down instead: a trait in the lower folder that `datapath/` implements \
         (docs/architecture.md, \"Where a change goes\"), or the shared type moved down."
    );
}

#[test]
fn a_circle_is_found_however_far_round() {
    let arrows: BTreeSet<(String, String)> =
        [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")].iter().map(|(x, y)| (x.to_string(), y.to_string())).collect();
    let on: Vec<_> = arrows_on_circles(&arrows).into_iter().map(|(a, b)| format!("{a}{b}")).collect();
    assert_eq!(on, ["ab", "bc", "ca"]);
}

/// The floors of `docs/architecture.md`, top first: the lines of the fenced block after the
/// line `<!-- floors: checked by crates/dataplane/tests/layout.rs -->`, each a floor's folders.
fn documented_floors() -> Vec<Vec<String>> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/architecture.md");
    let text = std::fs::read_to_string(&doc).unwrap();
    let marker = "<!-- floors: checked by crates/dataplane/tests/layout.rs -->";
    let after = text.split_once(marker).unwrap_or_else(|| panic!("{} has no line {marker}", doc.display())).1;
    let block = after.split("```").nth(1).expect("a fenced block after the marker");
    block
        .lines()
        .skip(1) // the fence's info string
        .map(|l| l.split_whitespace().map(|f| f.trim_end_matches('/').to_string()).collect::<Vec<_>>())
        .filter(|floor| !floor.is_empty())
        .collect()
}

#[test]
fn the_documented_floors_are_the_code_s() {
    let floors = documented_floors();
    let floor_of: BTreeMap<&str, usize> =
        floors.iter().enumerate().flat_map(|(k, f)| f.iter().map(move |name| (name.as_str(), k))).collect();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut folders: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
        .collect();
    folders.sort();
    let mut drawn: Vec<String> = floor_of.keys().map(|s| s.to_string()).collect();
    drawn.sort();
    assert_eq!(drawn, folders, "docs/architecture.md's floors name each folder of src/ once");
    assert_eq!(floor_of.len(), floors.iter().map(Vec::len).sum::<usize>(), "a folder drawn on two floors");
    let up: Vec<String> = folder_arrows()
        .iter()
        .filter(|(a, b)| floor_of[a.as_str()] >= floor_of[b.as_str()])
        .map(|(a, b)| format!("{a} -> {b}"))
        .collect();
    assert!(
        up.is_empty(),
        "arrows that do not point down the floors of docs/architecture.md: {up:?}\n\
         Point them down, or redraw the floors when a folder really belongs higher."
    );
}

#[test]
fn test_items_and_comments_are_left_out() {
    let text = "use crate::a::x; // crate::b\n#[cfg(test)]\nmod tests {\n    use crate::c::y;\n    fn f() {}\n}\n\
                #[cfg(test)]\nuse crate::d::z;\nfn g() { crate::e::w(); }\n";
    let names: Vec<_> = crate_paths(&code_only(&without_tests(text))).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["a", "e"]);
}
