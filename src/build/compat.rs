//! Shipped compatibility steps: what old PostgreSQL trees need to build
//! with today's tool chain (flex, bison, gcc, glibc), out of the box.
//!
//! A hunt from a 2015 release to master builds ten years of commits with
//! tools those commits never met. The breakage is known and small, so it is
//! shipped here instead of left to every user's `[[build.fixups]]`. Each
//! step is decided from the checked-out tree itself (the text of its
//! `configure`, of its grammar), never from a list of SHAs: a user's clone
//! may carry other commits, and a tree that does not need a step never gets
//! it. A step either adds a `configure` argument or applies a patch shipped
//! in the binary to the private checkout (through the fixup machinery, so it
//! is taken out again after the build, also after an interrupt).
//!
//! The steps applied to a commit are written to its build log, go into its
//! install's cache key (a changed rule rebuilds), and are recorded per
//! commit in the work dir, so that reports can name them beside the
//! configure flags.
//!
//! Parts of old trees that the benchmark does not need (pg_rewind's
//! `copy_file_range`, which clashes with glibc 2.27 and later) need no step:
//! the build makes only what the benchmark needs and tolerates failures
//! elsewhere.

use super::{BuildError, BuildSettings, BuildSystem};
use crate::lab::LabDirs;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// What a step does to the build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// A `NAME=value` argument added to `configure`.
    ConfigureArg(String),
    /// A flag added to the profile's `CFLAGS`.
    Cflag(&'static str),
    /// A patch, shipped in the binary, applied to the checkout.
    Patch {
        /// File name under `src/build/compat/`, and of the copy the build uses.
        name: &'static str,
        text: &'static str,
    },
}

/// One compatibility step chosen for a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Step {
    /// Short stable name, for logs and reports.
    pub id: &'static str,
    /// Why the tree needs it, in a line.
    pub why: &'static str,
    pub action: Action,
}

impl Step {
    /// The change as a user would write it: `FLEX=/usr/bin/flex`, or
    /// `patch gram-undef-yylex`.
    pub(crate) fn change(&self) -> String {
        match &self.action {
            Action::ConfigureArg(arg) => arg.clone(),
            Action::Cflag(flag) => format!("CFLAGS+={flag}"),
            Action::Patch { name, .. } => {
                format!("patch {}", name.trim_end_matches(".patch"))
            }
        }
    }

    /// What decides the binaries: goes into the install's cache key.
    pub(crate) fn fingerprint_text(&self) -> String {
        match &self.action {
            Action::ConfigureArg(arg) => format!("compat|{}|{arg}", self.id),
            Action::Cflag(flag) => format!("compat|{}|cflags {flag}", self.id),
            Action::Patch { text, .. } => format!("compat|{}|{text}", self.id),
        }
    }
}

/// The patch of the flex 2.6 `yylex` clash in grammars that include their scanner.
const GRAM_UNDEF_YYLEX: Action = Action::Patch {
    name: "gram-undef-yylex.patch",
    text: include_str!("compat/gram-undef-yylex.patch"),
};

/// What the rules look at: the tree, the user's settings and fixups, and
/// the tools on this machine.
pub(crate) struct Tree<'a> {
    pub src: &'a Path,
    pub settings: &'a BuildSettings,
    /// Files the user's fixups for this commit change: a shipped patch of
    /// the same file is left out (the user has taken charge of it).
    pub fixed_by_user: &'a [String],
    /// `flex` on `PATH`, when there is one.
    pub flex: Option<&'a Path>,
}

impl Tree<'_> {
    fn read(&self, relative: &str) -> Option<String> {
        fs::read(self.src.join(relative))
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    fn uses_configure(&self) -> bool {
        self.settings.system != BuildSystem::Meson && self.src.join("configure").is_file()
    }

    fn user_configures(&self, name: &str) -> bool {
        let prefix = format!("{name}=");
        self.settings
            .configure
            .iter()
            .any(|a| a.starts_with(&prefix))
    }
}

/// A rule: the step a tree needs, if any.
type Rule = fn(&Tree) -> Option<Step>;

/// Every shipped rule, in the order their steps are applied.
const RULES: [Rule; 3] = [
    old_flex_version_check,
    gram_includes_scanner,
    psql_writes_a_const_global,
];

/// The steps `tree` needs, in application order.
pub(crate) fn detect(tree: &Tree) -> Vec<Step> {
    RULES.iter().filter_map(|rule| rule(tree)).collect()
}

/// Until November 2015 (32f15d05), `configure` accepted only flex 2.5.x:
/// its test `$2 = 5 && $3 >= 31` rejects flex 2.6.4 ("Flex version 2.5.31
/// or later is required, but this is flex 2.6.4") and builds then stop for
/// want of flex. Naming flex in `FLEX=` skips that test.
fn old_flex_version_check(tree: &Tree) -> Option<Step> {
    if !tree.uses_configure() || tree.user_configures("FLEX") {
        return None;
    }
    let flex = tree.flex?;
    let configure = tree.read("configure")?;
    configure.contains("$2 = 5 && $3 >= 31").then(|| Step {
        id: "flex-version-check",
        why: "configure's flex version test rejects flex 2.6 and later",
        action: Action::ConfigureArg(format!("FLEX={}", flex.display())),
    })
}

/// Until March 2016 (72b1e3a2), the core scanner was compiled inside the
/// grammar; with flex 2.6 that fails ("conflicting types for
/// 'base_yylex'"). See the patch for why.
fn gram_includes_scanner(tree: &Tree) -> Option<Step> {
    const GRAMMAR: &str = "src/backend/parser/gram.y";
    if tree.fixed_by_user.iter().any(|f| f == GRAMMAR) {
        return None;
    }
    let text = tree.read(GRAMMAR)?;
    let includes = text.lines().any(|l| l.trim() == "#include \"scan.c\"");
    let undefined = text.lines().any(|l| l.trim() == "#undef yylex");
    (includes && !undefined).then_some(Step {
        id: "gram-undef-yylex",
        why: "the grammar compiles the scanner inside it, which flex 2.6 breaks",
        action: GRAM_UNDEF_YYLEX,
    })
}

/// From September 2014 (a2dabf0e) to March 2016 (fc7a9dfd), psql writes
/// to a global declared `const` without an initializer. Built as a common
/// symbol (GCC's default before GCC 10) it is writable; GCC 10 and later
/// put it in read-only memory and psql crashes at its start (SIGSEGV in
/// `refresh_utf8format`), so no benchmark can set up its data. `-fcommon`
/// builds it as the compilers of its day did.
fn psql_writes_a_const_global(tree: &Tree) -> Option<Step> {
    if !tree.uses_configure() {
        return None;
    }
    let print = tree.read("src/bin/psql/print.c")?;
    let tentative_const = print
        .lines()
        .any(|l| l.trim() == "const printTextFormat pg_utf8format;");
    tentative_const.then_some(Step {
        id: "fcommon",
        why: "psql writes a const global that GCC 10 and later make read-only (psql crashes)",
        action: Action::Cflag("-fcommon"),
    })
}

/// The files a patch changes (its `+++ b/...` lines).
pub(crate) fn patched_files(patch: &str) -> Vec<String> {
    patch
        .lines()
        .filter_map(|l| l.strip_prefix("+++ "))
        .map(|p| p.trim().trim_start_matches("b/").to_string())
        .filter(|p| p != "/dev/null")
        .collect()
}

/// The `configure` arguments of `steps`: their own, then `CFLAGS` as the
/// profile gives them (`cflags`) with the steps' flags added, when any.
pub(crate) fn configure_args(steps: &[Step], cflags: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut extra = Vec::new();
    for step in steps {
        match &step.action {
            Action::ConfigureArg(arg) => args.push(arg.clone()),
            Action::Cflag(flag) => extra.push(*flag),
            Action::Patch { .. } => {}
        }
    }
    if !extra.is_empty() {
        args.push(format!("CFLAGS={cflags} {}", extra.join(" ")));
    }
    args
}

/// Writes the patches of `steps` into `dir` and returns their paths, for
/// the fixup machinery to apply.
pub(crate) fn patch_files(steps: &[Step], dir: &Path) -> Result<Vec<PathBuf>, BuildError> {
    let mut paths = Vec::new();
    for step in steps {
        if let Action::Patch { name, text } = &step.action {
            crate::folders::create_dir(dir).map_err(BuildError::io("create", dir))?;
            let path = dir.join(name);
            crate::files::write(&path, text).map_err(BuildError::io("write", &path))?;
            paths.push(path);
        }
    }
    Ok(paths)
}

/// Per commit, the changes of the steps its last build used:
/// `compat-applied.json` in the build folder ([`LabDirs::build`]).
pub(crate) const RECORD_FILE: &str = "compat-applied.json";

/// Remembers which steps `commit` was built with (none: forgets it).
pub(crate) fn record(build_root: &Path, commit: &str, steps: &[Step]) -> Result<(), BuildError> {
    let path = build_root.join(RECORD_FILE);
    let mut all = read_record(&path);
    let changes: Vec<String> = steps.iter().map(Step::change).collect();
    let known = all.get(commit);
    if known == Some(&changes) || (known.is_none() && changes.is_empty()) {
        return Ok(());
    }
    if changes.is_empty() {
        all.remove(commit);
    } else {
        all.insert(commit.to_string(), changes);
    }
    let text = serde_json::to_string_pretty(&all).unwrap_or_default();
    let partial = path.with_extension("json.partial");
    crate::files::write(&partial, text).map_err(BuildError::io("write", &partial))?;
    fs::rename(&partial, &path).map_err(BuildError::io("replace", &path))
}

fn read_record(path: &Path) -> BTreeMap<String, Vec<String>> {
    fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// For a report's configure line: each change made to some of `commits`
/// (full SHAs), with how many of them got it, e.g.
/// `+ FLEX=/usr/bin/flex (old trees: 4 of 9 commits)`. Empty when no
/// commit needed any step, so reports of current trees are unchanged.
pub fn report_flags(dirs: &LabDirs, commits: &[&str]) -> Vec<String> {
    let all = read_record(&dirs.build.join(RECORD_FILE));
    let mut counts: Vec<(String, usize)> = Vec::new();
    for commit in commits {
        for change in all.get(*commit).into_iter().flatten() {
            match counts.iter_mut().find(|(c, _)| c == change) {
                Some((_, n)) => *n += 1,
                None => counts.push((change.clone(), 1)),
            }
        }
    }
    counts
        .into_iter()
        .map(|(change, n)| format!("+ {change} (old trees: {n} of {} commits)", commits.len()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD_CHECK: &str = "if echo \"$pgac_flex_version\" | sed 's/[.a-z]/ /g' | \
        $AWK '{ if ($1 = 2 && $2 = 5 && $3 >= 31) exit 0; else exit 1;}'\n";
    const NEW_CHECK: &str = "if echo \"$pgac_flex_version\" | sed 's/[.a-z]/ /g' | \
        $AWK '{ if ($1 > 2 || ($1 == 2 && ($2 > 5 || ($2 == 5 && $3 >= 31)))) exit 0; else exit 1;}'\n";
    const OLD_GRAMMAR_END: &str = "void\nparser_init(void)\n{\n}\n\n\
        /*\n * Must undefine this stuff before including scan.c.\n */\n\
        #undef yyerror\n#undef yylval\n#undef yylloc\n\n#include \"scan.c\"\n";

    fn tree_dir(configure: &str, grammar: Option<&str>) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("configure"), configure).unwrap();
        if let Some(text) = grammar {
            let dir = tmp.path().join("src/backend/parser");
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("gram.y"), text).unwrap();
        }
        tmp
    }

    fn detect_in(src: &Path, settings: &BuildSettings, fixed: &[String]) -> Vec<Step> {
        detect(&Tree {
            src,
            settings,
            fixed_by_user: fixed,
            flex: Some(Path::new("/usr/bin/flex")),
        })
    }

    #[test]
    fn an_old_flex_check_gets_flex_named() {
        let old = tree_dir(OLD_CHECK, None);
        let steps = detect_in(old.path(), &BuildSettings::default(), &[]);
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert_eq!(steps[0].change(), "FLEX=/usr/bin/flex");
        assert_eq!(configure_args(&steps, "-O2"), vec!["FLEX=/usr/bin/flex"]);

        let new = tree_dir(NEW_CHECK, None);
        assert!(detect_in(new.path(), &BuildSettings::default(), &[]).is_empty());

        let user = BuildSettings {
            configure: vec!["FLEX=/opt/flex/bin/flex".into()],
            ..BuildSettings::default()
        };
        assert!(
            detect_in(old.path(), &user, &[]).is_empty(),
            "the user's FLEX wins"
        );
        let meson = BuildSettings {
            system: BuildSystem::Meson,
            ..BuildSettings::default()
        };
        assert!(detect_in(old.path(), &meson, &[]).is_empty());
        let no_flex = detect(&Tree {
            src: old.path(),
            settings: &BuildSettings::default(),
            fixed_by_user: &[],
            flex: None,
        });
        assert!(
            no_flex.is_empty(),
            "without flex the build says flex is missing"
        );
    }

    #[test]
    fn a_grammar_that_includes_its_scanner_is_patched() {
        let old = tree_dir(NEW_CHECK, Some(OLD_GRAMMAR_END));
        let steps = detect_in(old.path(), &BuildSettings::default(), &[]);
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert_eq!(steps[0].change(), "patch gram-undef-yylex");
        assert!(configure_args(&steps, "-O2").is_empty());

        let fixed = OLD_GRAMMAR_END.replace("#undef yylloc\n", "#undef yylloc\n#undef yylex\n");
        let done = tree_dir(NEW_CHECK, Some(&fixed));
        assert!(detect_in(done.path(), &BuildSettings::default(), &[]).is_empty());
        let standalone = tree_dir(NEW_CHECK, Some("%%\n/* scanner built alone */\n"));
        assert!(detect_in(standalone.path(), &BuildSettings::default(), &[]).is_empty());
        let by_user = ["src/backend/parser/gram.y".to_string()];
        assert!(detect_in(old.path(), &BuildSettings::default(), &by_user).is_empty());
    }

    #[test]
    fn the_shipped_patch_applies_to_an_old_grammar_and_comes_out_again() {
        let old = tree_dir(
            OLD_CHECK,
            Some(&format!("{}{OLD_GRAMMAR_END}", "/* rules */\n".repeat(40))),
        );
        let steps = detect_in(old.path(), &BuildSettings::default(), &[]);
        assert_eq!(steps.len(), 2, "{steps:?}");
        let dir = tempfile::tempdir().unwrap();
        let patches = patch_files(&steps, dir.path()).unwrap();
        assert_eq!(patches, vec![dir.path().join("gram-undef-yylex.patch")]);
        let note = dir.path().join("note.json");
        let mut log = super::super::log::BuildLog::create(
            &dir.path().join("log"),
            std::time::Duration::from_secs(600),
        )
        .unwrap();
        let grammar = old.path().join("src/backend/parser/gram.y");
        let before = fs::read_to_string(&grammar).unwrap();
        let failed = super::super::fixup::apply(&patches, old.path(), &note, &mut log).unwrap();
        assert_eq!(
            failed,
            None,
            "{}",
            fs::read_to_string(dir.path().join("log")).unwrap()
        );
        let after = fs::read_to_string(&grammar).unwrap();
        assert!(after.contains("#undef yylloc\n#undef yylex\n\n#include \"scan.c\""));
        assert!(detect_in(old.path(), &BuildSettings::default(), &[]).len() == 1);
        super::super::fixup::revert(&patches, old.path(), &note, &mut log).unwrap();
        assert_eq!(fs::read_to_string(&grammar).unwrap(), before);
    }

    #[test]
    fn psql_writing_a_const_global_gets_fcommon_added_to_cflags() {
        let old = tree_dir(NEW_CHECK, None);
        let psql = old.path().join("src/bin/psql");
        fs::create_dir_all(&psql).unwrap();
        let print =
            "/* Default unicode linestyle format */\nconst printTextFormat pg_utf8format;\n";
        fs::write(psql.join("print.c"), print).unwrap();
        let steps = detect_in(old.path(), &BuildSettings::default(), &[]);
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert_eq!(steps[0].change(), "CFLAGS+=-fcommon");
        assert_eq!(
            configure_args(&steps, "-O2 -g"),
            vec!["CFLAGS=-O2 -g -fcommon"]
        );
        let fixed = "/* Default unicode linestyle format */\nprintTextFormat pg_utf8format;\n";
        fs::write(psql.join("print.c"), fixed).unwrap();
        assert!(detect_in(old.path(), &BuildSettings::default(), &[]).is_empty());
    }

    #[test]
    fn patched_files_are_read_from_the_patch() {
        assert_eq!(
            patched_files(GRAM_UNDEF_YYLEX_TEXT),
            vec!["src/backend/parser/gram.y"]
        );
        assert_eq!(
            patched_files("--- a/x.c\n+++ b/y/x.c\n--- a/z\n+++ /dev/null\n"),
            vec!["y/x.c"]
        );
    }

    const GRAM_UNDEF_YYLEX_TEXT: &str = include_str!("compat/gram-undef-yylex.patch");

    #[test]
    fn applied_steps_are_recorded_and_summed_for_reports() {
        let work = tempfile::tempdir().unwrap();
        let root = work.path().join("build");
        fs::create_dir_all(&root).unwrap();
        let old = tree_dir(OLD_CHECK, Some(OLD_GRAMMAR_END));
        let steps = detect_in(old.path(), &BuildSettings::default(), &[]);
        record(&root, "aaa", &steps).unwrap();
        record(&root, "bbb", &steps[..1]).unwrap();
        record(&root, "ccc", &[]).unwrap();
        assert!(report_flags(&LabDirs::under(work.path()), &["ccc", "ddd"]).is_empty());
        assert_eq!(
            report_flags(&LabDirs::under(work.path()), &["aaa", "bbb", "ccc"]),
            vec![
                "+ FLEX=/usr/bin/flex (old trees: 2 of 3 commits)",
                "+ patch gram-undef-yylex (old trees: 1 of 3 commits)",
            ]
        );
        record(&root, "aaa", &[]).unwrap();
        assert_eq!(
            report_flags(&LabDirs::under(work.path()), &["aaa", "bbb"]),
            vec!["+ FLEX=/usr/bin/flex (old trees: 1 of 2 commits)"]
        );
    }
}
