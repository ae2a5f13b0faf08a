//! The repository layer against real git repositories built in temp dirs.

use crate::common;

use common::mtime;
use pgbisect::model::Commit;
use pgbisect::repo::{Repo, RepoError, WorkTree};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use tempfile::TempDir;

/// A throwaway git repository driven by the `git` command.
struct TestRepo {
    dir: TempDir,
    commits: u32,
}

impl TestRepo {
    fn new() -> TestRepo {
        let repo = TestRepo {
            dir: TempDir::new().unwrap(),
            commits: 0,
        };
        repo.git(&["init", "-q", "-b", "master"]);
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn git(&self, args: &[&str]) -> String {
        common::git_as(("Ann Author", "ann@example.org"), self.path(), args)
    }

    /// Writes (`Some`) or deletes (`None`) files, commits, returns the SHA.
    fn commit(&mut self, subject: &str, files: &[(&str, Option<&str>)]) -> String {
        for (path, content) in files {
            let full = self.path().join(path);
            match content {
                Some(text) => {
                    fs::create_dir_all(full.parent().unwrap()).unwrap();
                    fs::write(&full, text).unwrap();
                }
                None => fs::remove_file(&full).unwrap(),
            }
        }
        self.commits += 1;
        self.git(&["add", "-A"]);
        let message = format!("{subject}\n\nBody of commit {}.", self.commits);
        self.git(&["commit", "-q", "--allow-empty", "-m", &message]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// A chain of `count` commits touching `log.txt`.
    fn chain(&mut self, name: &str, count: usize) -> Vec<String> {
        (0..count)
            .map(|i| {
                let text = format!("{name} {i}\n");
                self.commit(&format!("{name} {i}"), &[("log.txt", Some(&text))])
            })
            .collect()
    }

    fn open(&self) -> Repo {
        Repo::open(self.path()).unwrap()
    }
}

fn ids(commits: &[Commit]) -> Vec<String> {
    commits.iter().map(|c| c.id.clone()).collect()
}

fn rev_list_first_parent(repo: &TestRepo, range: &str) -> Vec<String> {
    let out = repo.git(&["rev-list", "--first-parent", "--reverse", range]);
    out.lines().map(str::to_string).collect()
}

#[test]
fn resolves_tags_branches_shas_and_expressions() {
    let mut t = TestRepo::new();
    let c = t.chain("main", 5);
    t.git(&["tag", "light", &c[0]]);
    t.git(&["tag", "-a", "-m", "release", "annotated", &c[1]]);
    t.git(&["branch", "feature", &c[2]]);
    t.git(&["update-ref", "refs/remotes/origin/stable", &c[3]]);
    let repo = t.open();
    let cases = [
        ("light", &c[0]),
        ("annotated", &c[1]),
        ("feature", &c[2]),
        ("origin/stable", &c[3]),
        (&c[3][..7], &c[3]),
        (c[4].as_str(), &c[4]),
        ("HEAD", &c[4]),
        ("HEAD~2", &c[2]),
        ("master^", &c[3]),
    ];
    for (rev, want) in cases {
        assert_eq!(&repo.resolve(rev).unwrap().id, want, "resolving {rev}");
    }
    let commit = repo.resolve("annotated").unwrap();
    assert_eq!(commit.subject, "main 1");
    assert_eq!(commit.author, "Ann Author <ann@example.org>");
    assert_eq!(commit.date, "2016-03-01T17:24:05-05:00");
}

#[test]
fn opens_from_a_subdirectory_and_refuses_a_plain_directory() {
    let mut t = TestRepo::new();
    t.commit("first", &[("src/backend/main.c", Some("int main;\n"))]);
    let repo = Repo::open(&t.path().join("src/backend")).unwrap();
    assert_eq!(
        repo.location().canonicalize().unwrap(),
        t.path().canonicalize().unwrap()
    );

    let plain = TempDir::new().unwrap();
    let err = Repo::open(plain.path()).err().unwrap();
    assert!(matches!(err, RepoError::NotARepository { .. }));
    let text = err.to_string();
    assert!(text.contains("is not inside a git repository"), "{text}");
    assert!(text.contains("--repo PATH"), "{text}");
}

#[test]
fn unknown_revisions_name_the_revision_and_suggest_what_to_do() {
    let mut t = TestRepo::new();
    let c = t.chain("main", 2);
    let untagged = t.open().resolve("REL_16_9").unwrap_err().to_string();
    assert!(
        untagged.contains("unknown revision 'REL_16_9'"),
        "{untagged}"
    );
    assert!(untagged.contains("no tags"), "{untagged}");
    assert!(untagged.contains("fetch --tags"), "{untagged}");

    for tag in ["REL_16_0", "REL_16_1", "REL_15_3", "REL9_6_0"] {
        t.git(&["tag", tag, &c[0]]);
    }
    let repo = t.open();
    let similar = repo.resolve("REL_16_9").unwrap_err().to_string();
    assert!(
        similar.contains("similar names: REL_16_0, REL_16_1, REL_15_3, REL9_6_0"),
        "{similar}"
    );
    let unrelated = repo.resolve("zz-top").unwrap_err().to_string();
    assert!(unrelated.contains("fetch --tags"), "{unrelated}");
    let sha = repo.resolve("deadbeefdead").unwrap_err().to_string();
    assert!(sha.contains("unknown revision 'deadbeefdead'"), "{sha}");
    assert!(sha.contains("fetch"), "{sha}");
    let too_far = repo.resolve("HEAD~10").unwrap_err().to_string();
    assert!(too_far.contains("unknown revision 'HEAD~10'"), "{too_far}");

    let tree = repo.resolve("HEAD^{tree}").unwrap_err();
    assert!(matches!(tree, RepoError::NotACommit { .. }), "{tree}");
    // A clone whose main line is `master` asked for `main`.
    let main = repo.resolve("main").unwrap_err().to_string();
    assert!(main.contains("main line is `master`, not `main`"), "{main}");
}

#[test]
fn candidates_follow_first_parents_oldest_first() {
    let mut t = TestRepo::new();
    let base = t.chain("main", 2);
    t.git(&["checkout", "-q", "-b", "side"]);
    let side = t.chain("side", 2);
    t.git(&["checkout", "-q", "master"]);
    let before_merge = t.commit("main 2", &[("other.txt", Some("x\n"))]);
    t.git(&["merge", "-q", "--no-ff", "-m", "merge side", "side"]);
    let merge = t.git(&["rev-parse", "HEAD"]);
    let tip = t.chain("after", 2);
    let repo = t.open();

    let good = repo.resolve(&base[0]).unwrap();
    let bad = repo.resolve("master").unwrap();
    let candidates = repo.candidates(&good, &bad).unwrap();
    let want = vec![
        base[1].clone(),
        before_merge,
        merge,
        tip[0].clone(),
        tip[1].clone(),
    ];
    assert_eq!(ids(&candidates), want);
    assert_eq!(
        want,
        rev_list_first_parent(&t, &format!("{}..master", base[0]))
    );
    assert_eq!(candidates.last().unwrap(), &bad);
    assert_eq!(candidates[2].subject, "merge side");

    // A good commit on the merged branch: same list as git gives.
    let good = repo.resolve(&side[0]).unwrap();
    let candidates = repo.candidates(&good, &bad).unwrap();
    assert_eq!(
        ids(&candidates),
        rev_list_first_parent(&t, &format!("{}..master", side[0]))
    );
}

#[test]
fn candidates_refuse_a_good_commit_that_is_not_an_ancestor() {
    let mut t = TestRepo::new();
    let base = t.chain("main", 2);
    t.git(&["checkout", "-q", "-b", "side", &base[0]]);
    let side = t.chain("side", 1);
    let repo = t.open();
    let (root, tip, other) = (
        repo.resolve(&base[0]).unwrap(),
        repo.resolve(&base[1]).unwrap(),
        repo.resolve(&side[0]).unwrap(),
    );

    let reversed = repo.candidates(&tip, &root).unwrap_err();
    assert!(matches!(reversed, RepoError::NotAncestor { .. }));
    let text = reversed.to_string();
    assert!(text.contains("is not an ancestor"), "{text}");
    assert!(text.contains("swap --good and --bad"), "{text}");
    assert!(text.contains("--bad is the older"), "{text}");

    let diverged = repo.candidates(&other, &tip).unwrap_err().to_string();
    assert!(
        diverged.contains(&format!("merge-base {}", base[0])),
        "{diverged}"
    );
    assert!(
        diverged.contains("different lines of history"),
        "{diverged}"
    );

    let same = repo.candidates(&tip, &tip).unwrap_err();
    assert!(matches!(same, RepoError::SameCommit { .. }), "{same}");

    assert_eq!(
        ids(&repo.candidates(&root, &tip).unwrap()),
        vec![base[1].clone()]
    );
}

#[test]
fn reads_files_and_changed_paths_without_a_checkout() {
    let mut t = TestRepo::new();
    let first = t.commit(
        "first",
        &[
            (
                "src/include/catalog/catversion.h",
                Some("#define CATALOG_VERSION_NO 201603011\n"),
            ),
            ("README", Some("readme\n")),
        ],
    );
    t.git(&["tag", "-a", "-m", "release", "REL_1", &first]);
    let second = t.commit(
        "second",
        &[
            (
                "src/include/catalog/catversion.h",
                Some("#define CATALOG_VERSION_NO 201603012\n"),
            ),
            ("README", None),
            ("NEWS", Some("news\n")),
        ],
    );
    let repo = t.open();
    let header = "src/include/catalog/catversion.h";
    assert_eq!(
        repo.read_file("REL_1", header).unwrap().unwrap(),
        b"#define CATALOG_VERSION_NO 201603011\n"
    );
    assert_eq!(
        repo.read_file(&second, header).unwrap().unwrap(),
        b"#define CATALOG_VERSION_NO 201603012\n"
    );
    assert_eq!(repo.read_file(&second, "README").unwrap(), None);
    assert_eq!(repo.read_file(&second, "src/include").unwrap(), None);
    assert!(repo.read_file("nope", "README").is_err());

    let changed = repo.changed_paths(&first, &second).unwrap();
    let want: Vec<PathBuf> = ["NEWS", "README", header]
        .iter()
        .map(PathBuf::from)
        .collect();
    assert_eq!(changed, want);
    assert!(repo.changed_paths(&first, &first).unwrap().is_empty());
}

/// Everything that says what state the user's repository is in.
fn user_state(t: &TestRepo) -> (String, String, Vec<u8>, BTreeSet<PathBuf>) {
    let mut git_files = BTreeSet::new();
    let mut stack = vec![t.path().join(".git")];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path.clone());
            }
            git_files.insert(path);
        }
    }
    (
        t.git(&["rev-parse", "HEAD"]),
        t.git(&["status", "--porcelain", "--untracked-files=all"]),
        fs::read(t.path().join(".git/index")).unwrap(),
        git_files,
    )
}

/// Two commits: B changes one file, deletes two (one alone in its
/// directory) and adds one.
fn two_commits(t: &mut TestRepo) -> (String, String) {
    let a = t.commit(
        "A",
        &[
            ("keep.c", Some("keep\n")),
            ("change.c", Some("old\n")),
            ("gone.c", Some("gone\n")),
            ("lonely/only.h", Some("only\n")),
            (".gitignore", Some("*.o\n")),
        ],
    );
    let b = t.commit(
        "B",
        &[
            ("change.c", Some("new\n")),
            ("gone.c", None),
            ("lonely/only.h", None),
            ("new.c", Some("added\n")),
        ],
    );
    (a, b)
}

#[test]
fn work_tree_moves_incrementally_and_never_touches_the_user_repository() {
    let mut t = TestRepo::new();
    let (a, b) = two_commits(&mut t);
    t.git(&["checkout", "-q", &a]);
    fs::write(t.path().join("keep.c"), "user's own edit\n").unwrap();
    let before = user_state(&t);

    let repo = t.open();
    let scratch = TempDir::new().unwrap();
    let mut tree = WorkTree::open_or_create(&repo, &scratch.path().join("checkout")).unwrap();
    let dir = tree.path().to_path_buf();
    tree.checkout(&a).unwrap();
    assert_eq!(tree.head().as_deref(), Some(a.as_str()));
    assert_eq!(fs::read_to_string(dir.join("keep.c")).unwrap(), "keep\n");
    fs::write(dir.join("keep.o"), "object").unwrap();
    fs::write(dir.join("notes.txt"), "untracked").unwrap();
    let keep = mtime(&dir.join("keep.c"));

    tree.checkout(&b).unwrap();
    assert_eq!(fs::read_to_string(dir.join("change.c")).unwrap(), "new\n");
    assert_eq!(fs::read_to_string(dir.join("new.c")).unwrap(), "added\n");
    assert!(!dir.join("gone.c").exists());
    assert!(!dir.join("lonely").exists());
    assert_eq!(
        mtime(&dir.join("keep.c")),
        keep,
        "an unchanged file was rewritten"
    );
    assert!(dir.join("keep.o").exists() && dir.join("notes.txt").exists());

    tree.checkout(&a).unwrap();
    assert_eq!(fs::read_to_string(dir.join("change.c")).unwrap(), "old\n");
    assert_eq!(
        fs::read_to_string(dir.join("lonely/only.h")).unwrap(),
        "only\n"
    );
    assert!(dir.join("gone.c").exists() && !dir.join("new.c").exists());
    assert_eq!(
        mtime(&dir.join("keep.c")),
        keep,
        "an unchanged file was rewritten"
    );
    assert!(dir.join("keep.o").exists() && dir.join("notes.txt").exists());

    drop(tree);
    assert_eq!(user_state(&t), before);
}

#[test]
fn work_tree_repairs_local_changes_and_interrupted_checkouts() {
    let mut t = TestRepo::new();
    let (a, b) = two_commits(&mut t);
    let repo = t.open();
    let scratch = TempDir::new().unwrap();
    let dir = scratch.path().join("checkout");
    let mut tree = WorkTree::open_or_create(&repo, &dir).unwrap();
    tree.checkout(&a).unwrap();
    fs::write(dir.join("change.c"), "edited by a build\n").unwrap();
    fs::remove_file(dir.join("keep.c")).unwrap();
    tree.checkout(&a).unwrap();
    assert_eq!(fs::read_to_string(dir.join("change.c")).unwrap(), "old\n");
    assert_eq!(fs::read_to_string(dir.join("keep.c")).unwrap(), "keep\n");
    drop(tree);

    // A run killed halfway from A to B: new.c written, HEAD still A.
    fs::write(dir.join("new.c"), "added\n").unwrap();
    fs::write(
        dir.join(".git/pgbisect-checkout-in-progress"),
        format!("{b}\n"),
    )
    .unwrap();
    fs::write(dir.join(".git/index.lock"), "").unwrap();
    let mut tree = WorkTree::open_or_create(&repo, &dir).unwrap();
    assert_eq!(tree.head().as_deref(), Some(b.as_str()));
    assert!(!dir.join("gone.c").exists());
    tree.checkout(&a).unwrap();
    assert!(
        !dir.join("new.c").exists(),
        "a file of the interrupted checkout was left behind"
    );
    assert!(dir.join("gone.c").exists());
}

#[test]
fn work_tree_is_reused_and_sees_new_commits() {
    let mut t = TestRepo::new();
    let (a, _) = two_commits(&mut t);
    let scratch = TempDir::new().unwrap();
    let dir = scratch.path().join("checkout");
    WorkTree::open_or_create(&t.open(), &dir)
        .unwrap()
        .checkout(&a)
        .unwrap();

    // Well after the index was written, so git trusts its file times.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let keep = mtime(&dir.join("keep.c"));
    let later = t.commit("C", &[("later.c", Some("later\n"))]);
    let mut tree = WorkTree::open_or_create(&t.open(), &dir).unwrap();
    assert_eq!(tree.head().as_deref(), Some(a.as_str()));
    tree.checkout(&later).unwrap();
    assert_eq!(
        mtime(&dir.join("keep.c")),
        keep,
        "an unchanged file was rewritten"
    );
    assert_eq!(fs::read_to_string(dir.join("later.c")).unwrap(), "later\n");
    assert!(
        tree.checkout("0123456789012345678901234567890123456789")
            .is_err()
    );
}

#[test]
fn work_tree_refuses_the_user_checkout() {
    let mut t = TestRepo::new();
    two_commits(&mut t);
    let repo = t.open();
    let err = WorkTree::open_or_create(&repo, t.path()).err().unwrap();
    assert!(
        matches!(err, RepoError::WorkTreeIsUserCheckout { .. }),
        "{err}"
    );
}

#[test]
fn a_repository_of_another_user_is_refused_with_advice() {
    let mut t = TestRepo::new();
    t.commit("first", &[("README", Some("readme\n"))]);
    // Only root can give a directory away, and a machine that trusts every
    // directory refuses nothing: then there is nothing to test.
    let trusted = Command::new("git")
        .args(["config", "--get-all", "safe.directory"])
        .output()
        .is_ok_and(|out| !out.stdout.is_empty());
    if trusted || std::os::unix::fs::chown(t.path(), Some(65534), Some(65534)).is_err() {
        return;
    }
    std::os::unix::fs::chown(t.path().join(".git"), Some(65534), Some(65534)).unwrap();
    let err = Repo::open(t.path()).err().unwrap();
    assert!(matches!(err, RepoError::NotOwned { .. }), "{err}");
    assert!(err.to_string().contains("safe.directory"), "{err}");
}

#[test]
fn a_patched_commit_lives_in_the_work_tree_and_is_readable_on_request() {
    let mut user = TestRepo::new();
    let base = user.commit("base", &[("level", Some("1000\n"))]);
    let scratch = TempDir::new().unwrap();
    let checkout = scratch.path().join("checkout");
    let repo = user.open();
    let mut tree = WorkTree::open_or_create(&repo, &checkout).unwrap();
    let patch = "diff --git a/level b/level\n--- a/level\n+++ b/level\n@@ -1 +1 @@\n-1000\n+700\n";
    let patched = tree
        .commit_with_patch(&base, patch.as_bytes(), "base + slower.patch")
        .unwrap()
        .expect("the patch applies");
    let again = tree
        .commit_with_patch(&base, patch.as_bytes(), "base + slower.patch")
        .unwrap();
    assert_eq!(
        again.as_deref(),
        Some(patched.as_str()),
        "same patch, same commit"
    );
    assert!(
        tree.commit_with_patch(
            &base,
            b"diff --git a/level b/level\n--- a/level\n+++ b/level\n@@ -1 +1 @@\n-5\n+7\n",
            "x"
        )
        .unwrap()
        .is_none()
    );
    tree.checkout(&patched).unwrap();
    assert_eq!(fs::read_to_string(checkout.join("level")).unwrap(), "700\n");
    // The user's repository does not have it, unless asked to look there.
    let fresh = user.open();
    assert!(fresh.read_file(&patched, "level").is_err());
    fresh
        .add_object_source(&checkout.join(".git/objects"))
        .unwrap();
    let text = fresh.read_file(&patched, "level").unwrap().unwrap();
    assert_eq!(text, b"700\n");
    assert_eq!(user.git(&["status", "--porcelain"]), "");
    let in_user_repo = Command::new("git")
        .args(["cat-file", "-e", &patched])
        .current_dir(user.path())
        .status()
        .unwrap();
    assert!(
        !in_user_repo.success(),
        "nothing is written into the user's repository"
    );
}

/// A PostgreSQL-like history: master's line with two releases branched
/// off it, as PostgreSQL tags them. `REL9_5_STABLE` is a local branch;
/// `REL_16_STABLE` is only remote-tracking (`origin/REL_16_STABLE`), as in
/// a fresh clone; `REL_18_STABLE` has no release tag yet.
struct Releases {
    t: TestRepo,
    /// master's line, oldest first: 95 branched at [2], 16 at [4], 18 at [5].
    master: Vec<String>,
    rel9_5_0: String,
    rel_16_0: String,
    rel_16_2: String,
    rel_18_stable: String,
}

fn releases() -> Releases {
    let mut t = TestRepo::new();
    let mut master = t.chain("master", 3);
    t.git(&["checkout", "-q", "-b", "REL9_5_STABLE"]);
    let rel9_5_0 = t.commit("Stamp 9.5.0.", &[("version", Some("9.5.0\n"))]);
    t.git(&["tag", "-a", "-m", "9.5.0", "REL9_5_0"]);
    t.git(&["checkout", "-q", "master"]);
    master.extend(t.chain("master later", 2));
    t.git(&["checkout", "-q", "-b", "REL_16_STABLE"]);
    let rel_16_0 = t.commit("Stamp 16.0.", &[("version", Some("16.0\n"))]);
    t.git(&["tag", "REL_16_0"]);
    t.commit("Fix a bug.", &[("fix", Some("1\n"))]);
    let rel_16_2 = t.commit("Stamp 16.2.", &[("version", Some("16.2\n"))]);
    t.git(&["tag", "REL_16_2"]);
    t.git(&[
        "update-ref",
        "refs/remotes/origin/REL_16_STABLE",
        "REL_16_STABLE",
    ]);
    t.git(&["checkout", "-q", "master"]);
    t.git(&["branch", "-D", "REL_16_STABLE"]);
    master.extend(t.chain("master newest", 1));
    t.git(&["checkout", "-q", "-b", "REL_18_STABLE"]);
    let rel_18_stable = t.commit("Stamp 18beta1.", &[("version", Some("18beta1\n"))]);
    t.git(&["checkout", "-q", "master"]);
    master.extend(t.chain("master tip", 2));
    Releases {
        t,
        master,
        rel9_5_0,
        rel_16_0,
        rel_16_2,
        rel_18_stable,
    }
}

#[test]
fn release_names_resolve_exact_names_first_then_release_forms() {
    let r = releases();
    let repo = r.t.open();
    let reading = |name: &str| {
        let resolved = repo.resolve_name(name).unwrap();
        (resolved.commit.id.clone(), resolved.reading())
    };
    let short = |sha: &str| sha[..8].to_string();
    // git's own names: no reading to explain.
    for (name, want) in [
        ("REL9_5_0", &r.rel9_5_0),
        ("REL_16_0", &r.rel_16_0),
        ("REL_16_2", &r.rel_16_2),
        ("REL9_5_STABLE", &r.rel9_5_0),
        ("origin/REL_16_STABLE", &r.rel_16_2),
        ("master", &r.master[7]),
        ("HEAD~3", &r.master[4]),
    ] {
        assert_eq!(reading(name), (want.clone(), None), "{name}");
    }
    let tag95 = format!("tag REL9_5_0 ({})", short(&r.rel9_5_0));
    for name in ["REL9_5", "9.5"] {
        assert_eq!(
            reading(name),
            (r.rel9_5_0.clone(), Some(format!("{name} -> {tag95}")))
        );
    }
    let tag16 = format!("tag REL_16_0 ({})", short(&r.rel_16_0));
    for name in ["REL_16", "16"] {
        assert_eq!(
            reading(name),
            (r.rel_16_0.clone(), Some(format!("{name} -> {tag16}")))
        );
    }
    assert_eq!(
        reading("16.2"),
        (
            r.rel_16_2.clone(),
            Some(format!("16.2 -> tag REL_16_2 ({})", short(&r.rel_16_2)))
        )
    );
    // A stable branch only a remote has.
    assert_eq!(
        reading("REL_16_STABLE"),
        (
            r.rel_16_2.clone(),
            Some(format!(
                "REL_16_STABLE -> branch origin/REL_16_STABLE ({})",
                short(&r.rel_16_2)
            ))
        )
    );
    // A release not yet tagged: its stable branch, saying so.
    assert_eq!(
        reading("18"),
        (
            r.rel_18_stable.clone(),
            Some(format!(
                "18 -> branch REL_18_STABLE ({}): there is no tag REL_18_0",
                short(&r.rel_18_stable)
            ))
        )
    );
    // The same forms through the plain resolver that compare and judge use.
    assert_eq!(repo.resolve("9.5").unwrap().id, r.rel9_5_0);
    assert_eq!(repo.resolve("REL_16").unwrap().subject, "Stamp 16.0.");
}

#[test]
fn a_name_git_knows_wins_over_a_release_form() {
    let r = releases();
    r.t.git(&["tag", "16", &r.master[1]]);
    let repo = r.t.open();
    let resolved = repo.resolve_name("16").unwrap();
    assert_eq!(resolved.commit.id, r.master[1]);
    assert_eq!(resolved.reading(), None);
}

#[test]
fn unknown_release_names_say_what_was_looked_for_and_what_is_similar() {
    let r = releases();
    let repo = r.t.open();
    let minor = repo.resolve_name("9.5.3").unwrap_err();
    assert!(
        matches!(minor, RepoError::UnknownRevision { .. }),
        "{minor}"
    );
    let text = minor.to_string();
    assert!(text.contains("unknown revision '9.5.3'"), "{text}");
    assert!(text.contains("PostgreSQL 9.5"), "{text}");
    assert!(text.contains("tag REL9_5_3"), "{text}");
    assert!(
        text.contains("similar names: REL9_5_0, REL9_5_STABLE"),
        "{text}"
    );
    let major = repo.resolve_name("REL_17").unwrap_err().to_string();
    assert!(
        major.contains("tag REL_17_0 or branch REL_17_STABLE"),
        "{major}"
    );
    assert!(major.contains("similar names: REL_16_0"), "{major}");
    // Not a release form: git's error as before.
    let other = repo.resolve_name("REL9_5_").unwrap_err().to_string();
    assert!(other.contains("unknown revision 'REL9_5_'"), "{other}");
    assert!(other.contains("similar names: REL9_5_0"), "{other}");
    assert!(!other.contains("PostgreSQL"), "{other}");
}

#[test]
fn a_release_off_the_line_of_bad_hunts_from_where_it_left() {
    let r = releases();
    let repo = r.t.open();
    let short = |sha: &str| sha[..8].to_string();
    let ends = repo.endpoints("REL9_5_0", "master").unwrap();
    assert!(ends.moved());
    assert_eq!(ends.good.commit.id, r.rel9_5_0);
    assert_eq!(ends.start.id, r.master[2]);
    assert_eq!(ends.good_branch.as_deref(), Some("REL9_5_STABLE"));
    assert_eq!(
        ends.good_reasons(),
        vec![format!(
            "REL9_5_0 is on REL9_5_STABLE, off master's line: hunting from {}, where it left master",
            short(&r.master[2])
        )]
    );
    assert!(ends.bad_reasons().is_empty());
    let candidates = repo.candidates(&ends.start, &ends.bad.commit).unwrap();
    assert_eq!(ids(&candidates), r.master[3..].to_vec());

    // A short form: both steps are said.
    let ends = repo.endpoints("REL9_5", "master").unwrap();
    assert_eq!(
        ends.good_reasons(),
        vec![
            format!("REL9_5 -> tag REL9_5_0 ({})", short(&r.rel9_5_0)),
            format!(
                "REL9_5_0 is on REL9_5_STABLE, off master's line: hunting from {}, where it left master",
                short(&r.master[2])
            ),
        ]
    );
    // A release on a stable branch known only as a remote-tracking one.
    let ends = repo.endpoints("16", &r.master[7]).unwrap();
    assert_eq!(ends.start.id, r.master[4]);
    assert_eq!(ends.good_branch.as_deref(), Some("REL_16_STABLE"));
    assert!(
        ends.good_reasons()[1].contains("REL_16_0 is on REL_16_STABLE, off the line of --bad"),
        "{:?}",
        ends.good_reasons()
    );
    assert!(
        ends.good_reasons()[1].ends_with("where it left that line"),
        "{:?}",
        ends.good_reasons()
    );
    // Along the stable branch, nothing moves.
    let ends = repo.endpoints("REL_16_0", "16.2").unwrap();
    assert!(!ends.moved());
    assert_eq!(ends.start.id, r.rel_16_0);
    assert!(ends.good_reasons().is_empty());
    assert_eq!(ends.bad_reasons().len(), 1);
    // A plain commit off the line: no stable branch to name.
    r.t.git(&["branch", "side", &r.master[5]]);
    r.t.git(&["checkout", "-q", "side"]);
    let mut t = r.t;
    let side = t.commit("side work", &[("side", Some("1\n"))]);
    let repo = t.open();
    let ends = repo.endpoints(&side, "master").unwrap();
    assert_eq!(ends.start.id, r.master[5]);
    assert_eq!(ends.good_branch, None);
    assert_eq!(
        ends.good_reasons(),
        vec![format!(
            "{side} ({}) is off master's line: hunting from {}, where it left master",
            short(&side),
            short(&r.master[5])
        )]
    );
}

#[test]
fn endpoints_refuse_a_later_good_unrelated_commits_and_one_commit() {
    let r = releases();
    let repo = r.t.open();
    let later = repo.endpoints("master", &r.master[3]).unwrap_err();
    assert!(matches!(later, RepoError::NotAncestor { .. }), "{later}");
    let text = later.to_string();
    assert!(text.contains("--bad is the older"), "{text}");
    assert!(text.contains("swap --good and --bad"), "{text}");

    let same = repo.endpoints("REL9_5", "REL9_5_0").unwrap_err();
    assert!(matches!(same, RepoError::SameCommit { .. }), "{same}");

    r.t.git(&["checkout", "-q", "--orphan", "unrelated"]);
    let mut t = r.t;
    let lonely = t.commit("another project", &[("other", Some("1\n"))]);
    let repo = t.open();
    let unrelated = repo.endpoints(&lonely, "master").unwrap_err().to_string();
    assert!(unrelated.contains("share no history"), "{unrelated}");
    let unknown = repo.endpoints("REL9_5", "9.6").unwrap_err().to_string();
    assert!(unknown.contains("unknown revision '9.6'"), "{unknown}");
}

/// A shallow clone whose history stops inside the range cannot tell that
/// good comes before bad: the error says to unshallow.
#[test]
fn a_shallow_clone_that_cuts_the_range_says_to_unshallow() {
    let mut t = TestRepo::new();
    let shas = t.chain("main", 8);
    t.git(&["branch", "old", &shas[0]]);
    let clone = tempfile::tempdir().unwrap();
    let url = format!("file://{}", t.path().display());
    let out = Command::new("git")
        .args(["clone", "-q", "--depth", "2", "--no-single-branch", &url])
        .arg(clone.path().join("c"))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let repo = Repo::open(&clone.path().join("c")).unwrap();
    let err = repo.endpoints(&shas[0], &shas[7]).unwrap_err();
    assert!(matches!(err, RepoError::NotAncestor { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("share no history"), "{text}");
    assert!(text.contains("git fetch --unshallow"), "{text}");
    // A full clone of the same two lines gets no such hint.
    let full = t.open();
    t.git(&["checkout", "-q", "--orphan", "other"]);
    let other = t.chain("other", 1);
    let err = full.endpoints(&other[0], &shas[7]).unwrap_err().to_string();
    assert!(err.contains("share no history"), "{err}");
    assert!(!err.contains("unshallow"), "{err}");
}

#[test]
fn a_name_that_is_a_tag_and_a_branch_of_other_commits_is_refused() {
    let mut t = TestRepo::new();
    let shas = t.chain("main", 3);
    t.git(&["tag", "amb", &shas[0]]);
    t.git(&["branch", "amb", &shas[1]]);
    let repo = t.open();
    let err = repo.resolve("amb").unwrap_err();
    assert!(matches!(err, RepoError::AmbiguousName { .. }), "{err}");
    assert!(err.is_usage());
    let text = err.to_string();
    assert!(text.contains("refs/tags/amb or refs/heads/amb"), "{text}");
    assert!(
        text.contains(&shas[0][..8]) && text.contains(&shas[1][..8]),
        "{text}"
    );
    assert_eq!(repo.resolve("refs/tags/amb").unwrap().id, shas[0]);
    assert_eq!(repo.resolve("refs/heads/amb").unwrap().id, shas[1]);
    // A tag and a branch on the same commit mean one thing.
    t.git(&["branch", "-f", "amb", &shas[0]]);
    assert_eq!(t.open().resolve("amb").unwrap().id, shas[0]);
}

#[test]
fn a_work_tree_made_for_another_repository_is_refused_with_what_to_do() {
    let mut first = TestRepo::new();
    let a = first.chain("main", 2);
    let scratch = TempDir::new().unwrap();
    let dir = scratch.path().join("checkout");
    let mut tree = WorkTree::open_or_create(&first.open(), &dir).unwrap();
    tree.checkout(&a[1]).unwrap();
    drop(tree);
    let mut second = TestRepo::new();
    second.chain("other", 2);
    let err = WorkTree::open_or_create(&second.open(), &dir)
        .err()
        .unwrap();
    assert!(matches!(err, RepoError::ForeignWorkTree { .. }), "{err}");
    assert!(err.is_usage());
    let text = err.to_string();
    assert!(text.contains("made for another repository"), "{text}");
    assert!(
        text.contains(&a[1]) && text.contains("--work-dir"),
        "{text}"
    );
    assert!(!text.contains("peeled"), "{text}");
}
