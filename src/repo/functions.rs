//! The C functions a commit changed, read from its diff.
//!
//! A CPU profile says which functions got slower; the culprit's diff says
//! which functions somebody edited. Where the two meet is what a hacker
//! reads first: of the functions the commit touched, the one whose share
//! of the samples rose most. The profile alone often leads with a callee
//! the commit never changed (the callback `TS_execute` calls for each word,
//! a catalog cache lookup), because that is where the new calls spend
//! their time.
//!
//! Functions are found the way PostgreSQL's sources are laid out by
//! pgindent: a definition's name starts a line (`hlCover(HeadlineParsedText
//! *prs, ...`, the return type on the line above), its body opens with `{`
//! at the start of a line and closes with `}` at the start of a line.
//! Every line from the name to the closing brace belongs to the function.
//! A line that is changed outside any function (a macro, a struct, a
//! prototype) changes no function; a file with only such lines, or no C at
//! all (a catalog's SQL, `pg_proc.dat`), is listed as changed code apart.

use super::{Repo, RepoError};
use git2::{DiffOptions, Oid, Patch};
use std::collections::BTreeSet;

/// What a commit changed in the server's source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodeChange {
    /// Functions with a changed line (on either side), by name, sorted.
    pub functions: Vec<String>,
    /// Source files changed outside any function: no C function, or only
    /// macros, declarations and data. Tests and documentation are left out.
    pub other_files: Vec<String>,
}

/// Files whose functions are read.
const C_SUFFIXES: [&str; 4] = [".c", ".h", ".cpp", ".cc"];

/// Changed files not listed among `other_files`: they are not server code.
const NOT_SERVER_CODE: [&str; 3] = ["doc/", "src/test/", "contrib/"];

/// For each line of `text`, the function whose definition holds it.
pub fn function_of_lines(text: &str) -> Vec<Option<&str>> {
    let mut out = Vec::new();
    // The name of a definition whose body has not opened yet.
    let mut named: Option<(&str, usize)> = None;
    let mut body: Option<&str> = None;
    for line in text.lines() {
        out.push(None);
        if let Some(function) = body {
            *out.last_mut().expect("pushed above") = Some(function);
            if line.starts_with('}') {
                body = None;
            }
            continue;
        }
        if let Some(name) = definition_name(line) {
            named = Some((name, out.len() - 1));
            continue;
        }
        match named {
            Some((name, from)) if line.starts_with('{') => {
                out[from..].iter_mut().for_each(|f| *f = Some(name));
                body = Some(name);
                named = None;
            }
            // A parameter list goes on over indented lines; anything else
            // at the start of a line ends it (a prototype, a struct).
            Some(_) if line.starts_with(|c: char| !c.is_whitespace()) => named = None,
            _ => {}
        }
    }
    out
}

/// The name a line starts with when it is a definition's name line.
fn definition_name(line: &str) -> Option<&str> {
    let end = line.find('(')?;
    let name = &line[..end];
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some(name)
}

/// Whether `path` is a C source or header file.
fn is_c(path: &str) -> bool {
    C_SUFFIXES.iter().any(|s| path.ends_with(s))
}

/// The functions of `text` that hold any of `lines` (1-based).
fn functions_at(text: &str, lines: &[u32], into: &mut BTreeSet<String>) -> bool {
    let of = function_of_lines(text);
    let mut any = false;
    for &n in lines {
        if let Some(Some(name)) = (n as usize).checked_sub(1).and_then(|i| of.get(i)) {
            into.insert((*name).to_string());
            any = true;
        }
    }
    any
}

impl Repo {
    /// What `to` changed against `from` in the server's source: the C
    /// functions with a changed line and the other changed source files.
    pub fn code_change(&self, from: &str, to: &str) -> Result<CodeChange, RepoError> {
        let action = format!("reading the changes from {from} to {to}");
        let trees = (self.find_commit(from)?.tree(), self.find_commit(to)?.tree());
        let (old, new) = (
            trees.0.map_err(RepoError::git(action.clone()))?,
            trees.1.map_err(RepoError::git(action.clone()))?,
        );
        let mut options = DiffOptions::new();
        options.context_lines(0);
        let diff = self
            .git
            .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut options))
            .map_err(RepoError::git(action.clone()))?;
        let mut functions = BTreeSet::new();
        let mut other_files = Vec::new();
        for index in 0..diff.deltas().len() {
            let Some(patch) =
                Patch::from_diff(&diff, index).map_err(RepoError::git(action.clone()))?
            else {
                continue;
            };
            let delta = patch.delta();
            let Some(path) = delta
                .new_file()
                .path()
                .or(delta.old_file().path())
                .and_then(|p| p.to_str())
                .map(str::to_string)
            else {
                continue;
            };
            if NOT_SERVER_CODE.iter().any(|p| path.starts_with(p)) {
                continue;
            }
            let in_function = is_c(&path) && {
                let (old_lines, new_lines) = changed_lines(&patch);
                let old_text = self.blob_text(delta.old_file().id());
                let new_text = self.blob_text(delta.new_file().id());
                functions_at(&old_text, &old_lines, &mut functions)
                    | functions_at(&new_text, &new_lines, &mut functions)
            };
            if !in_function {
                other_files.push(path);
            }
        }
        Ok(CodeChange {
            functions: functions.into_iter().collect(),
            other_files,
        })
    }

    /// A blob's text (empty for a file that is not there on that side,
    /// or is not text).
    fn blob_text(&self, id: Oid) -> String {
        if id.is_zero() {
            return String::new();
        }
        self.git
            .find_blob(id)
            .map(|b| String::from_utf8_lossy(b.content()).into_owned())
            .unwrap_or_default()
    }
}

/// The removed lines' numbers on the old side and the added lines' on the
/// new side of `patch`.
fn changed_lines(patch: &Patch<'_>) -> (Vec<u32>, Vec<u32>) {
    let (mut old, mut new) = (Vec::new(), Vec::new());
    for hunk in 0..patch.num_hunks() {
        let Ok((hunk, _)) = patch.hunk(hunk) else {
            continue;
        };
        old.extend(hunk.old_start()..hunk.old_start() + hunk.old_lines());
        new.extend(hunk.new_start()..hunk.new_start() + hunk.new_lines());
    }
    (old, new)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "\
#include \"postgres.h\"

static bool hlCover(HeadlineParsedText *prs, int *p);

typedef struct Cover
{
\tint\t\tp;
} Cover;

/*
 * Finds a cover.
 */
static bool
hlCover(HeadlineParsedText *prs,
\t\tint *p)
{
\tif (*p > 0)
\t{
\t\treturn true;
\t}
\treturn false;
}

#define MAX(a, b) ((a) > (b) ? (a) : (b))

Datum
prsd_headline(PG_FUNCTION_ARGS)
{
#ifdef USE_ASSERT_CHECKING
\tcheck();
#endif
\tPG_RETURN_POINTER(NULL);
}
";

    fn of(line: usize) -> Option<&'static str> {
        function_of_lines(SOURCE)[line - 1]
    }

    #[test]
    fn a_definitions_lines_from_its_name_to_its_closing_brace_are_its_own() {
        assert_eq!(of(14), Some("hlCover"), "the name line");
        assert_eq!(of(15), Some("hlCover"), "a parameter line");
        assert_eq!(of(19), Some("hlCover"), "a nested block");
        assert_eq!(of(22), Some("hlCover"), "the closing brace");
        assert_eq!(of(29), Some("prsd_headline"), "a preprocessor line inside");
        assert_eq!(of(32), Some("prsd_headline"));
    }

    #[test]
    fn prototypes_structs_macros_and_comments_belong_to_no_function() {
        assert_eq!(of(3), None, "a prototype");
        assert_eq!(of(6), None, "a struct's brace");
        assert_eq!(of(7), None, "a struct's member");
        assert_eq!(of(11), None, "a comment");
        assert_eq!(of(24), None, "a macro");
        assert_eq!(of(23), None);
    }

    #[test]
    fn a_prototype_over_several_lines_does_not_open_the_next_struct() {
        let text = "void\nfoo(int a,\n\t\tint b);\ntypedef struct S\n{\n\tint a;\n} S;\n";
        let of = function_of_lines(text);
        assert!(of.iter().all(Option::is_none), "{of:?}");
    }

    #[test]
    fn lines_outside_the_text_name_nothing() {
        let mut found = BTreeSet::new();
        assert!(!functions_at(SOURCE, &[0, 10_000], &mut found));
        assert!(found.is_empty());
    }
}
