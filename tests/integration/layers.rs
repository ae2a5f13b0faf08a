//! The crate's floors, checked from its `use` lines and paths.
//!
//! `src/lib.rs` says which floor each module stands on; dependencies run
//! one way, from commands down to the pure core. This test reads every
//! source file (test code left out), collects the `crate::...` paths it
//! names, and fails on a path to a floor above, or on a cycle between
//! modules, naming the file and the path. It also reads the `super::` and
//! `self::` paths and fails on a cycle between the files of one folder
//! (say `commands::hunt` and `commands::lab`): a folder's `mod.rs` is its
//! face, so only paths between a module and its own folder are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Floors from the bottom up; a module may use its own floor and those below.
const FLOORS: &[(&str, &[&str])] = &[
    (
        "core",
        &[
            "error",
            "model",
            "time",
            "files",
            "folders",
            "profile_files",
            "capture",
            "proc",
            "shown",
            "spelling",
            "strays",
            "core",
            "lab",
        ],
    ),
    (
        "services",
        &[
            "repo",
            "profile",
            "journal",
            "store",
            "report",
            "notify",
            "progress",
            "machine",
            "bench",
            "placement",
            "perf",
            "counts",
        ],
    ),
    (
        "labs",
        &[
            "server",
            "build",
            "hosts",
            "lab::pg",
            "lab::open",
            "lab::held",
            "lab::command",
            "lab::replay",
            "lab::reuse",
            "lab::pool",
            "lab::spread",
            "lab::sim",
        ],
    ),
    ("workspace", &["workspace"]),
    ("engine", &["engine"]),
    ("commands", &["commands"]),
];

/// The unit a `crate::` path (or a file's module path) belongs to: the
/// longest module named in [`FLOORS`], or below `engine`, its submodule.
fn unit_of(path: &str) -> Option<String> {
    let named = FLOORS
        .iter()
        .flat_map(|(_, units)| units.iter())
        .filter(|u| path == **u || path.starts_with(&format!("{u}::")))
        .max_by_key(|u| u.len())?;
    if *named == "engine" {
        let sub = path.split("::").nth(1).unwrap_or("");
        return Some(format!("engine::{sub}"));
    }
    Some(named.to_string())
}

fn floor_of(unit: &str) -> usize {
    let module = if unit.starts_with("engine::") {
        "engine"
    } else {
        unit
    };
    FLOORS
        .iter()
        .position(|(_, units)| units.contains(&module))
        .unwrap_or_else(|| panic!("module `{unit}` is on no floor: add it to FLOORS and lib.rs"))
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/lab/pg.rs` -> `lab::pg`; `src/engine/hunt/check.rs` -> `engine::hunt::check`.
fn module_path(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .filter(|p| p != "mod")
        .collect();
    parts.join("::")
}

/// A file's text without comment lines and test code.
fn code_of(text: &str) -> String {
    text.split("#[cfg(test)]")
        .next()
        .unwrap_or("")
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths after `prefix` in `code`, with `{a, b::c}` groups opened up.
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                found.push(item.trim().to_string());
            }
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        found.push(rest[..end].trim_end_matches(':').to_string());
        rest = &rest[end..];
    }
    found
}

/// The `crate::a::b` paths a file names outside comments and test code,
/// with `use crate::{a, b::c}` groups opened up.
fn crate_paths(text: &str) -> Vec<String> {
    paths_after(&code_of(text), "crate::")
}

/// Every path a file names outside comments and test code, as a path from
/// the crate: `crate::a`, and `super::a` and `self::a` read from the file's
/// module (`module`, as [`module_path`] gives it: a `mod.rs` is its
/// folder).
fn all_paths(text: &str, module: &str) -> Vec<String> {
    let code = code_of(text);
    let here: Vec<&str> = module.split("::").filter(|p| !p.is_empty()).collect();
    let mut found = paths_after(&code, "crate::");
    let join = |base: &[&str], rest: &str| {
        let mut parts: Vec<&str> = base.to_vec();
        let mut rest = rest;
        while let Some(tail) = rest.strip_prefix("super::") {
            parts.pop();
            rest = tail;
        }
        parts.push(rest);
        parts.join("::")
    };
    let parent = &here[..here.len().saturating_sub(1)];
    found.extend(
        paths_after(&code, "super::")
            .iter()
            .filter(|p| !p.is_empty())
            .map(|p| join(parent, p)),
    );
    found.extend(
        paths_after(&code, "self::")
            .iter()
            .filter(|p| !p.is_empty())
            .map(|p| join(&here, p)),
    );
    found
}

/// The file module (of `modules`) that `path` names: its longest prefix.
fn file_of<'a>(path: &str, modules: &'a BTreeSet<String>) -> Option<&'a String> {
    modules
        .iter()
        .filter(|m| path == m.as_str() || path.starts_with(&format!("{m}::")))
        .max_by_key(|m| m.len())
}

/// Whether one of `a` and `b` is the other's folder (or the same module).
fn nested(a: &str, b: &str) -> bool {
    a == b || a.starts_with(&format!("{b}::")) || b.starts_with(&format!("{a}::"))
}

#[test]
fn dependencies_run_from_commands_down_to_the_core() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut upward = Vec::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let module = module_path(&src, file);
        if module == "lib" || module == "main" || module.ends_with("tests") || module == "testing" {
            continue;
        }
        let from = unit_of(&module).unwrap_or_else(|| panic!("{module} is on no floor"));
        let text = std::fs::read_to_string(file).unwrap();
        for path in crate_paths(&text) {
            let Some(to) = unit_of(&path) else {
                continue;
            };
            if floor_of(&to) > floor_of(&from) {
                upward.push(format!("{}: {from} uses crate::{path}", file.display()));
            }
            if to != from {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports from a floor above:\n{}",
        upward.join("\n")
    );
    let cycles = find_cycles(&edges);
    assert!(
        cycles.is_empty(),
        "import cycles between modules:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn no_two_files_import_each_other_even_within_a_folder() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let modules: BTreeSet<String> = files
        .iter()
        .map(|f| module_path(&src, f))
        .filter(|m| m != "lib" && m != "main")
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let module = module_path(&src, file);
        if !modules.contains(&module) || module.ends_with("tests") || module == "testing" {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for path in all_paths(&text, &module) {
            if let Some(to) = file_of(&path, &modules).filter(|to| !nested(&module, to)) {
                edges.entry(module.clone()).or_default().insert(to.clone());
            }
        }
    }
    let cycles = find_cycles(&edges);
    assert!(
        cycles.is_empty(),
        "import cycles between files:\n{}",
        cycles.join("\n")
    );
}

/// Every cycle found by a depth-first walk, as `a -> b -> a`.
fn find_cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn walk(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        cycles: &mut Vec<String>,
    ) {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node.to_string());
            cycles.push(cycle.join(" -> "));
            return;
        }
        if !done.insert(node.to_string()) {
            return;
        }
        stack.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            walk(next, edges, stack, done, cycles);
        }
        stack.pop();
    }
    let (mut done, mut cycles) = (BTreeSet::new(), Vec::new());
    for node in edges.keys() {
        walk(node, edges, &mut Vec::new(), &mut done, &mut cycles);
    }
    cycles
}

#[test]
fn the_checker_sees_upward_paths_and_groups() {
    let text = "use crate::{model::Commit, engine::hunt};\n// crate::commands in a comment\n\
                fn f() { crate::workspace::WorkDir::at(\"x\"); }\n#[cfg(test)]\nuse crate::commands;";
    assert_eq!(
        crate_paths(text),
        ["model::Commit", "engine::hunt", "workspace::WorkDir::at"]
    );
    assert_eq!(unit_of("lab::pg::PgLab").as_deref(), Some("lab::pg"));
    assert_eq!(unit_of("lab::Lab").as_deref(), Some("lab"));
    assert_eq!(
        unit_of("engine::hunt::Hunt").as_deref(),
        Some("engine::hunt")
    );
    assert!(floor_of("commands") > floor_of("engine::hunt"));
    let mut edges = BTreeMap::new();
    edges.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    edges.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(find_cycles(&edges), ["a -> b -> a"]);
}

#[test]
fn the_checker_sees_a_cycle_between_files_of_one_folder() {
    let hunt = "use super::lab::make_lab;\nuse super::{args::TargetArgs, plan::Plan};";
    let lab = "use super::hunt::Plan;\nfn f() { self::inner::g(); super::super::model::x(); }";
    assert_eq!(
        all_paths(hunt, "commands::hunt"),
        [
            "commands::lab::make_lab",
            "commands::args::TargetArgs",
            "commands::plan::Plan"
        ]
    );
    assert_eq!(
        all_paths(lab, "commands::lab"),
        [
            "commands::hunt::Plan",
            "model::x",
            "commands::lab::inner::g"
        ]
    );
    assert_eq!(
        all_paths("use super::engine::hunt;", "commands"),
        ["engine::hunt"]
    );
    let modules: BTreeSet<String> = ["commands", "commands::hunt", "commands::lab", "model"]
        .map(String::from)
        .into();
    assert_eq!(
        file_of("commands::hunt::Plan", &modules).map(String::as_str),
        Some("commands::hunt")
    );
    assert!(nested("commands", "commands::hunt"));
    assert!(!nested("commands::hunt", "commands::lab"));
    let mut edges = BTreeMap::new();
    for (from, text) in [("commands::hunt", hunt), ("commands::lab", lab)] {
        for path in all_paths(text, from) {
            if let Some(to) = file_of(&path, &modules).filter(|to| !nested(from, to)) {
                edges
                    .entry(from.to_string())
                    .or_insert_with(BTreeSet::new)
                    .insert(to.clone());
            }
        }
    }
    assert_eq!(
        find_cycles(&edges),
        ["commands::hunt -> commands::lab -> commands::hunt"]
    );
}

/// The longest function a command file may have: a command parses its
/// flags into a plan, calls the engine and renders what comes back; a
/// longer function is work that belongs below.
const COMMAND_FN_LINES: usize = 40;

/// `code` with string, character and comment text blanked out (their
/// lines kept), so that braces in them are not counted.
fn blank_literals(code: &str) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let blank = |out: &mut String, text: &[char]| {
        out.extend(text.iter().map(|&c| if c == '\n' { '\n' } else { ' ' }));
    };
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        let end = if rest.starts_with(&['/', '/']) {
            rest.iter().position(|&c| c == '\n').unwrap_or(rest.len())
        } else if rest[0] == 'r'
            && matches!(rest.get(1), Some('"' | '#'))
            && !ident_before(&chars, i)
        {
            let hashes = rest[1..].iter().take_while(|&&c| c == '#').count();
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let body = 2 + hashes;
            (body..rest.len())
                .find(|&j| rest[j..].starts_with(&close))
                .map_or(rest.len(), |j| j + close.len())
        } else if rest[0] == '"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != '"' {
                j += if rest[j] == '\\' { 2 } else { 1 };
            }
            (j + 1).min(rest.len())
        } else if rest[0] == '\'' && rest.get(2) == Some(&'\'') {
            3
        } else if rest.starts_with(&['\'', '\\']) {
            rest[2..]
                .iter()
                .position(|&c| c == '\'')
                .map_or(1, |j| j + 3)
        } else {
            out.push(rest[0]);
            i += 1;
            continue;
        };
        blank(&mut out, &rest[..end]);
        i += end;
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// Each function of `code` with its first line (from 1) and its length in
/// lines, from its `fn` line to its closing brace.
fn function_lengths(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| *w == "fn") else {
            continue;
        };
        let qualifiers = ["pub", "const", "async", "unsafe", "extern"];
        if !words[..at]
            .iter()
            .all(|w| qualifiers.contains(w) || w.starts_with("pub("))
        {
            continue;
        }
        let name: String = words
            .get(at + 1)
            .map_or("", |w| w)
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let mut depth = 0usize;
        let mut opened = false;
        'scan: for (end, text) in lines.iter().enumerate().skip(start) {
            for c in text.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth = depth.saturating_sub(1),
                    ';' if !opened => break 'scan,
                    _ => {}
                }
                if opened && depth == 0 {
                    found.push((name.clone(), start + 1, end - start + 1));
                    break 'scan;
                }
            }
        }
    }
    found
}

#[test]
fn no_function_in_the_commands_is_longer_than_forty_lines() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/commands");
    let mut files = Vec::new();
    sources(&dir, &mut files);
    let mut long = Vec::new();
    for file in &files {
        let code = blank_literals(&std::fs::read_to_string(file).unwrap());
        for (name, line, length) in function_lengths(&code) {
            if length > COMMAND_FN_LINES {
                long.push(format!(
                    "{}:{line}: fn {name}, {length} lines",
                    file.display()
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions in src/commands/ longer than {COMMAND_FN_LINES} lines (move the work into \
         the engine, e.g. engine/session/):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_length_scan_skips_braces_in_text_and_counts_whole_functions() {
    let code = "pub(super) fn a(x: u32) -> u32 {\n    let s = \"}}{\";\n    let c = '}';\n    \
                // }\n    let r = r#\"{\"#;\n    x\n}\nfn b();\nconst fn c<'a>(s: &'a str) -> &'a str {\n    \
                s\n}\n";
    let found = function_lengths(&blank_literals(code));
    assert_eq!(
        found,
        [("a".to_string(), 1, 7), ("c".to_string(), 9, 3)],
        "{found:?}"
    );
    let long = format!(
        "fn long() {{\n{}}}\n",
        "    x();\n".repeat(COMMAND_FN_LINES)
    );
    assert_eq!(function_lengths(&long)[0].2, COMMAND_FN_LINES + 2);
}
