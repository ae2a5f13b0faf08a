//! What a commit changed in the server's source, read by the repository
//! layer from real git repositories made in temp dirs.

use crate::common;

use pgbisect::repo::Repo;
use std::fs;
use std::path::Path;

/// Writes `files` into `dir` (or deletes those given `None`), commits them,
/// and returns the commit's SHA.
fn commit(dir: &Path, files: &[(&str, Option<&str>)]) -> String {
    for (path, content) in files {
        let full = dir.join(path);
        match content {
            Some(text) => {
                fs::create_dir_all(full.parent().unwrap()).unwrap();
                fs::write(&full, text).unwrap();
            }
            None => fs::remove_file(&full).unwrap(),
        }
    }
    let git = |args: &[&str]| common::git_as(("Ann Author", "ann@example.org"), dir, args);
    git(&["add", "-A"]);
    git(&["commit", "-q", "--allow-empty", "-m", "change"]);
    git(&["rev-parse", "HEAD"])
}

#[test]
fn a_commits_code_change_names_the_functions_it_edited_added_and_removed() {
    let t = tempfile::TempDir::new().unwrap();
    common::git(t.path(), &["init", "-q", "-b", "master"]);
    let file = "src/backend/tsearch/wparser_def.c";
    let before = "static bool\nhlCover(int *p)\n{\n\treturn *p > 0;\n}\n\n\
                  static int\nold_helper(void)\n{\n\treturn 1;\n}\n\n\
                  Datum\nprsd_headline(int a)\n{\n\treturn a;\n}\n";
    let after = "static bool\nhlCover(int *p)\n{\n\treturn *p > 1;\n}\n\n\
                 static int\nnew_helper(void)\n{\n\treturn 2;\n}\n\n\
                 Datum\nprsd_headline(int a)\n{\n\treturn a;\n}\n";
    let first = commit(
        t.path(),
        &[
            (file, Some(before)),
            ("src/include/utils/rel.h", Some("#define A 1\n")),
            ("src/backend/catalog/system_views.sql", Some("select 1;\n")),
        ],
    );
    let second = commit(
        t.path(),
        &[
            (file, Some(after)),
            ("src/include/utils/rel.h", Some("#define A 2\n")),
            ("src/backend/catalog/system_views.sql", Some("select 2;\n")),
            ("src/test/regress/sql/tsearch.sql", Some("select;\n")),
            ("doc/src/sgml/func.sgml", Some("<para/>\n")),
        ],
    );
    let change = Repo::open(t.path())
        .unwrap()
        .code_change(&first, &second)
        .unwrap();
    assert_eq!(change.functions, ["hlCover", "new_helper", "old_helper"]);
    assert_eq!(
        change.other_files,
        [
            "src/backend/catalog/system_views.sql",
            "src/include/utils/rel.h"
        ]
    );
    let none = Repo::open(t.path())
        .unwrap()
        .code_change(&second, &second)
        .unwrap();
    assert!(none.functions.is_empty() && none.other_files.is_empty());
    assert!(
        Repo::open(t.path())
            .unwrap()
            .code_change("nope", &second)
            .is_err()
    );
}
